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
export const STATE_ORDER = ['running', 'queued', 'pending', 'success', 'failed', 'skipped', 'cancelled'] as const;

export function JobCounts({ counts }: { counts: Record<string, number> }) {
  const parts = STATE_ORDER.filter((s) => (counts[s] ?? 0) > 0);
  if (parts.length === 0) return <span class="muted">no jobs</span>;
  return (
    <span class="counts">
      {parts.map((s) => (
        <span key={s} class={`count st-${s}`} title={s}>
          <span aria-hidden="true">{STATE_ICON[s]}</span>
          {counts[s]} <span class="sr">{s}</span>
        </span>
      ))}
    </span>
  );
}

export function countStates(jobs: { state: string }[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const j of jobs) c[j.state] = (c[j.state] ?? 0) + 1;
  return c;
}
