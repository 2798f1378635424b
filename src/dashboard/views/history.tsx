/**
 * A workflow's run history (`#/workflows/<id>/runs`, README "Dashboard"): every run, newest first, a
 * page at a time from `GET /api/workflows/{id}/runs`, with its state, what started it, start, duration,
 * job counts and the run it re-ran; each links to its graph.
 */
import type { RunSummary } from '../../protocol/wire.js';
import { enc } from '../api';
import { ago, duration, stamp, useNow } from '../format';
import { historyHref, workflowHref } from '../router';
import { runTriggerText } from '../triggers';
import { ErrorLine, JobCounts, StateBadge } from './common';
import { usePolled } from './polled';

const PAGE = 50;
const POLL_MS = 5000;

export function HistoryView({ id, page }: { id: string; page: number }) {
  const now = useNow();
  // One more than a page, to know whether there is a next one. Runs change rarely: polled.
  const { list: runs, error } = usePolled<RunSummary[]>(`/api/workflows/${enc(id)}/runs?limit=${PAGE + 1}&offset=${page * PAGE}`, POLL_MS);
  const shown = runs?.slice(0, PAGE) ?? [];
  return (
    <section aria-labelledby="history-title">
      <h1 id="history-title">
        <a href={workflowHref(id)}>{id}</a>: runs
      </h1>
      <ErrorLine error={error} />
      {runs === null ? (
        !error && <p class="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="muted">{page > 0 ? 'No runs on this page.' : 'This workflow has not run yet.'}</p>
      ) : (
        <table class="list" aria-label={`Runs of ${id}`}>
          <thead>
            <tr>
              <th>Run</th>
              <th>Status</th>
              <th>Trigger</th>
              <th>Started</th>
              <th>Duration</th>
              <th>Jobs</th>
              {/* A phone keeps the rest: the run a re-run repeats is on its own page too. */}
              <th class="wide-only">Re-run of</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.run_number} data-run={r.run_number}>
                <td>
                  <a href={workflowHref(id, r.run_number)}>Run {r.run_number}</a>
                </td>
                <td>
                  <StateBadge state={r.status} />
                </td>
                <td class="trigger">
                  {r.parent ? (
                    // README "Workflows calling workflows": the calling job, one click away.
                    <a class="parent-run" href={workflowHref(r.parent.workflow_id, r.parent.run_number, r.parent.job_id)}>
                      call from {r.parent.workflow_id} #{r.parent.run_number}
                    </a>
                  ) : r.trigger ? (
                    runTriggerText(r.trigger, r.event_name)
                  ) : (
                    <span class="muted" title="started before weft recorded what started runs">—</span>
                  )}
                </td>
                <td title={stamp(r.created_at_ms)}>{ago(r.created_at_ms, now)}</td>
                <td class="duration">{runDuration(r, now)}</td>
                <td>
                  <JobCounts counts={r.job_counts} />
                </td>
                <td class="wide-only">{r.rerun_of === null ? <span class="muted">—</span> : <a href={workflowHref(id, r.rerun_of)}>Run {r.rerun_of}</a>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages of runs">
        {page > 0 && <a href={historyHref(id, page - 1)}>← Newer</a>}
        {(runs?.length ?? 0) > PAGE && <a href={historyHref(id, page + 1)}>Older →</a>}
      </nav>
    </section>
  );
}

/** What started a run, as the runs table says it (README "Dashboard"). */
export { TRIGGER_TEXT } from '../triggers';

/** How long the run took, or has been running ("running 12s"); a queued run has not started. */
export function runDuration(r: { status: string; created_at_ms: number; finished_at_ms: number | null }, now: number): string {
  if (r.status === 'queued') return 'queued';
  if (r.finished_at_ms === null) return `running ${duration(now - r.created_at_ms)}`;
  return duration(r.finished_at_ms - r.created_at_ms);
}
