/** Small pieces shared by the views. */
import { STATE_ICON } from '../format';

export function StateBadge({ state }: { state: string }) {
  return (
    <span class={`badge st-${state}`}>
      <span aria-hidden="true">{STATE_ICON[state] ?? '?'}</span> {state}
    </span>
  );
}

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** Counts of a document's jobs by weft state, in the order a run moves through them. */
export const STATE_ORDER = ['running', 'awaiting_approval', 'queued', 'pending', 'success', 'failed', 'skipped', 'cancelled'] as const;

/** Jobs counted by state; with `onPick`, each count is a button that lists the jobs in that state. */
export function JobCounts({ counts, onPick }: { counts: Record<string, number>; onPick?(state: string): void }) {
  const parts = STATE_ORDER.filter((s) => (counts[s] ?? 0) > 0);
  if (parts.length === 0) return <span class="muted">no jobs</span>;
  return (
    <span class="counts">
      {parts.map((s) => {
        const inner = (
          <>
            <span aria-hidden="true">{STATE_ICON[s]}</span>
            {counts[s]} <span class="sr">{s}</span>
          </>
        );
        return onPick ? (
          <button key={s} type="button" class={`count st-${s}`} title={`List the ${s} jobs`} aria-label={`${counts[s]} ${s}: list them`} onClick={() => onPick(s)}>
            {inner}
          </button>
        ) : (
          <span key={s} class={`count st-${s}`} title={s}>
            {inner}
          </span>
        );
      })}
    </span>
  );
}

export function countStates(jobs: { state: string }[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const j of jobs) c[j.state] = (c[j.state] ?? 0) + 1;
  return c;
}
