/**
 * One job of the displayed run: its state, attempts, error, outputs and the outputs of its `needs`,
 * and its log (log-viewer.tsx). The latest run's current attempt is followed live (`…/logs/stream`);
 * any other run or attempt is read from the log history (`…/logs?run=&attempt=`).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { JobView, StatusDocument, WorkerView } from '../../protocol/wire.js';
import { api, SERVER } from '../api';
import { duration, stamp, useNow } from '../format';
import { LogViewer } from './log-viewer';
import { go, workflowHref } from '../router';
import { Artifacts } from './artifacts';
import { StateBadge } from './common';
import { ApprovalBox } from './approval';

/** The command's first line, cut short: what the folded command shows. */
function commandSummary(command: string): string {
  const first = command.split('\n', 1)[0]!;
  const text = first.length > 60 ? `${first.slice(0, 59)}…` : first;
  return command.includes('\n') || first.length > 60 ? `${text} (show all)` : text;
}

/** How often a queued job's panel reads the workers again, to say why the job waits. */
const WORKERS_POLL_MS = 3000;

/**
 * Why a queued job is not running yet: a retry waiting out its backoff, no connected worker with the
 * labels it needs (with the command that starts one), or every fitting worker busy.
 */
function WhyWaiting({ job }: { job: JobView }) {
  const now = useNow(true);
  const [workers, setWorkers] = useState<WorkerView[] | null>(null);
  useEffect(() => {
    let gone = false;
    const load = () =>
      api<WorkerView[]>('/api/workers').then(
        (w) => !gone && setWorkers(w),
        // A token that may not list workers, or an older server: the reason is left unsaid.
        () => {},
      );
    void load();
    const t = setInterval(load, WORKERS_POLL_MS);
    return () => {
      gone = true;
      clearInterval(t);
    };
  }, []);
  let reason: string | null = null;
  let start: string | null = null;
  const holder = job.concurrency_holder;
  if (holder && job.concurrency_group !== undefined) {
    // README "Concurrency groups": the claim passes over it while that job runs, whatever the workers.
    return (
      <div class="why-waiting" role="status" data-group={job.concurrency_group}>
        <p>
          Waiting for concurrency group <code>{job.concurrency_group}</code>: job{' '}
          <a href={workflowHref(holder.workflow_id, holder.run_number, holder.job_id)}>{holder.job_id}</a> of run #{holder.run_number} of{' '}
          <a href={workflowHref(holder.workflow_id)}>{holder.workflow_id}</a> runs. This job starts when it ends.
        </p>
      </div>
    );
  }
  if (job.delayed_until_ms > now) {
    reason = `Waiting out its retry backoff: claimable in ${duration(job.delayed_until_ms - now) || '1s'}.`;
  } else if (workers !== null) {
    const fitting = workers.filter((w) => w.status !== 'offline' && job.required_labels.every((l) => w.labels.includes(l)));
    const labels = job.required_labels.join(',');
    if (fitting.length === 0) {
      reason = job.required_labels.length
        ? `No connected worker has the labels this job needs (${job.required_labels.join(', ')}). Start one:`
        : 'No worker is connected. Start one:';
      start = `SERVER_URL=${SERVER}${labels ? ` WORKER_LABELS=${labels}` : ''} weft worker`;
    } else {
      reason = `Waiting for a free worker: ${fitting.length === 1 ? 'the one fitting worker is' : `all ${fitting.length} fitting workers are`} busy.`;
    }
  }
  if (reason === null) return null;
  return (
    <div class="why-waiting" role="status">
      <p>{reason}</p>
      {start && <pre class="command">{start}</pre>}
    </div>
  );
}

function Outputs({ outputs }: { outputs: Record<string, string> }) {
  const keys = Object.keys(outputs);
  if (keys.length === 0) return <span class="muted">none</span>;
  return (
    <dl class="outputs">
      {keys.map((k) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>
            <code>{outputs[k]}</code>
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** Re-running from a job (README "Re-running a run"): what to call, or why it cannot be done now. */
export interface RerunFrom {
  /** Starts a re-run of the shown run from `job` (a matrix or fan-out instance: from its whole group). */
  start(job: string): void;
  /** Why a re-run cannot start now (the run is still active, say); null when it can. */
  blocked: string | null;
}

export function JobPanel({
  doc,
  job,
  attempt,
  latest,
  rerun,
  line = null,
}: {
  doc: StatusDocument;
  job: JobView;
  attempt: number | null;
  latest: boolean;
  rerun?: RerunFrom;
  /** A line of the log to show and mark (`&line=N`). */
  line?: number | null;
}) {
  const run = doc.run_number;
  const now = useNow(job.state === 'running');
  const shownAttempt = attempt ?? job.attempt;
  // Only the latest run's current attempt has a live stream; every other one is history.
  const live = latest && shownAttempt === job.attempt;
  const byId = new Map(doc.jobs.map((j) => [j.id, j]));
  const routeRun = latest ? null : run;
  const elapsed = job.state === 'running' && job.started_at_ms != null ? now - job.started_at_ms : job.duration_ms;
  // Opening a job moves the keyboard's focus to it, not a Tab per graph node away.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus({ preventScroll: true }), [job.id]);
  return (
    <aside class="panel" aria-label={`Job ${job.id}`}>
      <div class="panel-head">
        <h2 tabIndex={-1} ref={heading}>
          {job.name}
        </h2>
        <a class="close" href={workflowHref(doc.id, routeRun)} aria-label="Close job panel">
          ×
        </a>
      </div>
      {rerun && (
        <div class="toolbar">
          <button type="button" disabled={rerun.blocked !== null} title={rerun.blocked ?? `Run ${job.group ?? job.id} and everything after it again; keep the rest`} onClick={() => rerun.start(job.group ?? job.id)}>
            Re-run from here
          </button>
          {rerun.blocked && <span class="muted small">{rerun.blocked}</span>}
        </div>
      )}
      {/* Above the facts: while the job waits, deciding is what the reader came for. */}
      {job.approval && <ApprovalBox wf={doc.id} run={run} job={job} />}
      <dl class="facts">
        <dt>Job</dt>
        <dd>
          <code>{job.id}</code>
        </dd>
        <dt>State</dt>
        <dd>
          <StateBadge state={job.state} />
        </dd>
        <dt>Attempt</dt>
        <dd>
          {job.attempt + 1} of {job.max_retries + 1}
        </dd>
        {job.uses !== undefined ? (
          // README "Workflows calling workflows": no worker runs it; its called run does the work.
          <>
            <dt>Calls</dt>
            <dd>
              <a href={workflowHref(job.uses)}>{job.uses}</a>
            </dd>
            <dt>Called run</dt>
            <dd>
              {job.child_run ? (
                <a class="child-run" href={workflowHref(job.child_run.workflow_id, job.child_run.run_number)}>
                  Open run {job.child_run.run_number} of {job.child_run.workflow_id}
                </a>
              ) : (
                <span class="muted">not started yet</span>
              )}
            </dd>
          </>
        ) : (
          <>
            <dt>Worker</dt>
            <dd>{job.worker_id ?? <span class="muted">—</span>}</dd>
          </>
        )}
        <dt>Started</dt>
        <dd>{stamp(job.started_at_ms) || <span class="muted">—</span>}</dd>
        <dt>Duration</dt>
        <dd>{duration(elapsed) || <span class="muted">—</span>}</dd>
        {job.required_labels.length > 0 && (
          <>
            <dt>Labels</dt>
            <dd>{job.required_labels.join(', ')}</dd>
          </>
        )}
        {job.priority !== undefined && job.priority !== 0 && (
          <>
            <dt>Priority</dt>
            <dd>{job.priority > 0 ? `+${job.priority}` : job.priority}</dd>
          </>
        )}
        {job.concurrency_group !== undefined && (
          <>
            <dt>Group</dt>
            <dd>
              <code>{job.concurrency_group}</code>
            </dd>
          </>
        )}
        {job.condition && job.condition !== 'success()' && (
          <>
            <dt>Runs if</dt>
            <dd>
              <code>{job.condition}</code>
            </dd>
          </>
        )}
        {job.uses === undefined && (
          <>
            <dt>Command</dt>
            <dd>
              {/* Folded: a `steps:` job's command is its whole generated chain, and the log is what one reads. */}
              <details class="command-fold">
                <summary>{commandSummary(job.command)}</summary>
                <code class="command">{job.command}</code>
              </details>
            </dd>
          </>
        )}
      </dl>
      {job.state === 'queued' && (job.uses !== undefined ? <CallWaiting job={job} /> : <WhyWaiting job={job} />)}
      {job.error && (
        <div class="job-error">
          <h3>Error</h3>
          <pre>{job.error}</pre>
        </div>
      )}
      <h3>Outputs</h3>
      <Outputs outputs={job.outputs} />
      {job.depends_on.length > 0 && (
        <>
          <h3>Upstream outputs</h3>
          {job.depends_on.map((d) => (
            <div key={d} class="upstream">
              <a href={workflowHref(doc.id, routeRun, d)}>{d}</a>
              {': '}
              <Outputs outputs={byId.get(d)?.outputs ?? {}} />
            </div>
          ))}
        </>
      )}
      {job.uses !== undefined ? (
        <p class="muted call-note">
          This job runs no command: it starts a run of <a href={workflowHref(job.uses)}>{job.uses}</a> and ends as that run ends. The
          called run's jobs have the logs.
        </p>
      ) : (
        <JobOutput doc={doc} job={job} run={run} routeRun={routeRun} shownAttempt={shownAttempt} live={live} line={line} />
      )}
    </aside>
  );
}

/** A job's artifacts and log (of the shown attempt): what a job that runs a command leaves. */
function JobOutput({
  doc,
  job,
  run,
  routeRun,
  shownAttempt,
  live,
  line,
}: {
  doc: StatusDocument;
  job: JobView;
  run: number | null;
  routeRun: number | null;
  shownAttempt: number;
  live: boolean;
  line: number | null;
}) {
  return (
    <>
      {run !== null && (
        <>
          <h3>Artifacts</h3>
          <Artifacts wf={doc.id} run={run} job={job.id} version={`${job.state}:${job.attempt}`} />
        </>
      )}
      <div class="log-head">
        <h3>Log</h3>
        <label>
          Attempt{' '}
          <select
            value={String(shownAttempt)}
            onChange={(e) => {
              const a = Number(e.currentTarget.value);
              go(workflowHref(doc.id, routeRun, job.id, a === job.attempt ? null : a));
            }}
          >
            {Array.from({ length: job.attempt + 1 }, (_, a) => (
              <option key={a} value={String(a)}>
                Attempt {a + 1}
                {a === job.attempt ? ' (current)' : ''}
              </option>
            ))}
          </select>
        </label>
        {live && <span class="muted small">live</span>}
      </div>
      {run === null ? (
        <p class="muted">The workflow has not run yet.</p>
      ) : (
        <LogViewer
          wf={doc.id}
          job={job.id}
          run={run}
          attempt={shownAttempt}
          live={live}
          state={job.state}
          finishedAtMs={job.finished_at_ms}
          line={line}
          lineHref={(n) => `${workflowHref(doc.id, routeRun, job.id, shownAttempt)}&line=${n}`}
        />
      )}
    </>
  );
}

/** A queued job that calls a workflow: the engine starts its run (at once, or once a retry's backoff ends). */
function CallWaiting({ job }: { job: JobView }) {
  const now = useNow(true);
  const text =
    job.delayed_until_ms > now
      ? `Waiting out its retry backoff: a new run of ${job.uses} starts in ${duration(job.delayed_until_ms - now) || '1s'}.`
      : `Starting a run of ${job.uses}; no worker runs this job.`;
  return (
    <div class="why-waiting" role="status" data-calls={job.uses}>
      <p>{text}</p>
    </div>
  );
}
