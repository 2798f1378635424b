/**
 * A run's timeline (README "Dashboard"): one row per job, grouped by need level (a job's level is one
 * more than its deepest need's), each with its wait in the queue (queued → started) and its run
 * (started → finished, or until now) on one time axis from the run's start. The critical path is
 * marked: from the job that finished last back through, at each step, the need that finished last,
 * the chain that decided how long the run took. The status document keeps the times of each job's
 * latest attempt, so a retried job shows that attempt.
 */
import { useMemo } from 'preact/hooks';
import type { JobView } from '../../protocol/wire.js';
import { duration, stamp, useNow } from '../format';

interface Row {
  job: JobView;
  level: number;
  queuedMs: number | null;
  startMs: number | null;
  endMs: number | null;
}

/** Need levels: 0 for jobs without needs (or whose needs are not in the run). */
function levels(jobs: readonly JobView[]): Map<string, number> {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const out = new Map<string, number>();
  const visit = (j: JobView, path: Set<string>): number => {
    const known = out.get(j.id);
    if (known !== undefined) return known;
    // A cycle cannot come from the server (definitions are checked); guarded all the same.
    if (path.has(j.id)) return 0;
    path.add(j.id);
    let level = 0;
    for (const d of j.depends_on) {
      const need = byId.get(d);
      if (need) level = Math.max(level, visit(need, path) + 1);
    }
    path.delete(j.id);
    out.set(j.id, level);
    return level;
  };
  for (const j of jobs) visit(j, new Set());
  return out;
}

/** The chain of jobs that decided the run's length: the last to finish, then the need that finished last before it, … */
export function criticalPath(jobs: readonly JobView[], nowMs: number): Set<string> {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const end = (j: JobView) => j.finished_at_ms ?? (j.state === 'running' ? nowMs : null);
  let last: JobView | undefined;
  for (const j of jobs) {
    const e = end(j);
    if (e !== null && (last === undefined || e > end(last)!)) last = j;
  }
  const path = new Set<string>();
  while (last && !path.has(last.id)) {
    path.add(last.id);
    let gate: JobView | undefined;
    for (const d of last.depends_on) {
      const need = byId.get(d);
      const e = need ? end(need) : null;
      if (need && e !== null && (gate === undefined || e > end(gate)!)) gate = need;
    }
    last = gate;
  }
  return path;
}

export function Timeline({ jobs }: { jobs: JobView[] }) {
  const now = useNow(jobs.some((j) => j.state === 'running' || j.state === 'queued'));
  const rows = useMemo(() => {
    const level = levels(jobs);
    const out: Row[] = jobs.map((j) => ({
      job: j,
      level: level.get(j.id) ?? 0,
      queuedMs: j.enqueued_at_ms,
      startMs: j.started_at_ms,
      endMs: j.finished_at_ms,
    }));
    return out.sort((a, b) => a.level - b.level || (a.startMs ?? a.queuedMs ?? Infinity) - (b.startMs ?? b.queuedMs ?? Infinity));
  }, [jobs]);
  const critical = useMemo(() => criticalPath(jobs, now), [jobs, now]);
  const times = rows.flatMap((r) => [r.queuedMs, r.startMs, r.endMs]).filter((t): t is number => t !== null);
  if (times.length === 0) return <p class="muted">Nothing has been queued in this run yet.</p>;
  const t0 = Math.min(...times);
  const t1 = Math.max(...times, rows.some((r) => r.startMs !== null && r.endMs === null) ? now : 0);
  const span = Math.max(1, t1 - t0);
  const pct = (t: number) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
  const width = (a: number, b: number) => `${Math.max(0.3, ((b - a) / span) * 100).toFixed(3)}%`;
  return (
    <section class="timeline" aria-label="Timeline">
      <p class="muted small">
        {duration(span)} from the first job queued to {rows.some((r) => r.endMs === null && r.startMs !== null) ? 'now' : 'the last one done'};
        the critical path is marked ◆.
      </p>
      <ol class="timeline-rows">
        {rows.map((r, i) => {
          const j = r.job;
          const end = r.endMs ?? (r.startMs !== null ? now : null);
          const onPath = critical.has(j.id);
          const prevLevel = i > 0 ? rows[i - 1]!.level : -1;
          return (
            <li key={j.id} class={`timeline-row${onPath ? ' critical' : ''}${r.level !== prevLevel ? ' level-start' : ''}`} data-timeline-job={j.id} data-level={r.level} data-critical={onPath ? 'true' : undefined}>
              <span class="timeline-name" title={j.id}>
                {onPath ? '◆ ' : ''}
                {j.name}
              </span>
              <span class="timeline-track">
                {r.queuedMs !== null && (
                  <span
                    class="bar wait"
                    style={{ left: pct(r.queuedMs), width: width(r.queuedMs, r.startMs ?? now) }}
                    title={`queued ${stamp(r.queuedMs)}, waited ${duration((r.startMs ?? now) - r.queuedMs)}`}
                  />
                )}
                {r.startMs !== null && end !== null && (
                  <span
                    class={`bar run st-${j.state}`}
                    style={{ left: pct(r.startMs), width: width(r.startMs, end) }}
                    title={`${j.state}: started ${stamp(r.startMs)}, ran ${duration(end - r.startMs)}`}
                  />
                )}
              </span>
              <span class="timeline-time muted small">{r.startMs !== null && end !== null ? duration(end - r.startMs) : j.state}</span>
            </li>
          );
        })}
      </ol>
    </section>
  );
}
