/**
 * One job of the displayed run: its state, attempts, error, outputs and the outputs of its `needs`,
 * and its log. The latest run's current attempt is followed live (`…/logs/stream`); any other run or
 * attempt is read from the log history (`…/logs?run=&attempt=`).
 */
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { AnsiUp } from 'ansi_up';
import type { JobView, LogChunkView, StatusDocument, WorkerView } from '../../protocol/wire.js';
import { api, enc, SERVER } from '../api';
import { openStream } from '../sse';
import { duration, stamp, useNow } from '../format';
import { go, workflowHref } from '../router';
import { Artifacts } from './artifacts';
import { ErrorLine, StateBadge } from './common';

interface Line {
  key: string;
  stream: string;
  html: string;
}

/** The line a `steps:` job prints before each step (README "Workflow definitions"), shown as a heading. */
const STEP_LINE = /^::step (\d+\/\d+) (.*)$/;

/**
 * OSC 8 hyperlinks (http and https only, ansi_up's default) open in a new tab that cannot reach back
 * to the dashboard (`window.opener`) and is not told where it came from. ansi_up escapes every `<` of
 * the log text, so the only `<a ` in its output are the links it made itself.
 */
function toHtmlConverter(): (text: string) => string {
  const au = new AnsiUp();
  au.use_classes = true;
  return (text) => au.ansi_to_html(text).replaceAll('<a href="', '<a rel="noopener noreferrer" target="_blank" href="');
}

/**
 * ANSI colours become spans; ansi_up escapes the text first, so a log cannot inject markup. A chunk
 * holding step lines is cut around them, each step line becoming a heading of its own.
 */
function renderer() {
  const per: Record<string, (text: string) => string> = {};
  return (c: LogChunkView, key: string): Line[] => {
    const toHtml = (per[c.stream] ??= toHtmlConverter());
    if (c.stream !== 'stdout' || !c.data.includes('::step ')) return [{ key, stream: c.stream, html: toHtml(c.data) }];
    const out: Line[] = [];
    let text = '';
    const flush = () => {
      if (text !== '') out.push({ key: `${key}.${out.length}`, stream: c.stream, html: toHtml(text) });
      text = '';
    };
    for (const line of c.data.split(/(?<=\n)/)) {
      const m = STEP_LINE.exec(line.replace(/\n$/, ''));
      if (!m) {
        text += line;
        continue;
      }
      flush();
      out.push({ key: `${key}.${out.length}`, stream: 'step', html: toHtml(`step ${m[1]}: ${m[2]}\n`) });
    }
    flush();
    return out;
  };
}

function Log({ wf, job, run, attempt, live }: { wf: string; job: string; run: number; attempt: number; live: boolean }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [note, setNote] = useState<string>('');
  const [error, setError] = useState<unknown>(null);
  const box = useRef<HTMLPreElement>(null);
  const follow = useRef(true);

  useEffect(() => {
    setLines([]);
    setError(null);
    setNote(live ? 'connecting…' : 'loading…');
    follow.current = true;
    const render = renderer();
    if (!live) {
      let gone = false;
      api<LogChunkView[]>(`/api/workflows/${enc(wf)}/jobs/${enc(job)}/logs?run=${run}&attempt=${attempt}`)
        .then((chunks) => {
          if (gone) return;
          setLines(chunks.flatMap((c) => render(c, `${c.attempt}:${c.sequence}`)));
          setNote(chunks.length === 0 ? 'no output' : '');
        })
        .catch((err) => !gone && setError(err));
      return () => {
        gone = true;
      };
    }
    // The attempt this log shows. The stream starts at the newest attempt that has output, which while
    // a retry waits out its backoff is the previous one: its lines are not this attempt's.
    let attemptNow = attempt;
    const switchTo = (a: number) => {
      attemptNow = a;
      setLines([]);
      setNote(`attempt ${a + 1} started`);
    };
    const stream = openStream(
      `/api/workflows/${enc(wf)}/jobs/${enc(job)}/logs/stream`,
      {
        onEvent(ev) {
          if (ev.event === 'log') {
            const c = JSON.parse(ev.data) as LogChunkView;
            if (c.attempt < attemptNow) return;
            if (c.attempt > attemptNow) switchTo(c.attempt);
            const parts = render(c, `${c.attempt}:${c.sequence}`);
            // A resumed stream may repeat what was already shown; the key tells.
            setLines((cur) => (cur.some((l) => l.key === parts[0]!.key) ? cur : [...cur, ...parts]));
            setNote('');
          } else if (ev.event === 'attempt') {
            const a = (JSON.parse(ev.data) as { attempt: number }).attempt;
            if (a > attemptNow) switchTo(a);
          } else if (ev.event === 'end') {
            const { status } = JSON.parse(ev.data) as { status: string };
            setNote(`ended: ${status}`);
          }
        },
        onOpen: () => setNote((n) => (n === 'connecting…' || n === 'reconnecting…' ? 'waiting for output…' : n)),
        onState: (s) => s === 'reconnecting' && setNote('reconnecting…'),
        onMissing: () => setError(new Error('this server has no live log stream for the job')),
      },
      (ev) => ev.event === 'end',
    );
    return () => stream.close();
  }, [wf, job, run, attempt, live]);

  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <>
      <ErrorLine error={error} />
      <pre
        ref={box}
        class="log"
        role="log"
        aria-live="polite"
        aria-label={`Log of ${job}, attempt ${attempt + 1}`}
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.map((l) => (
          <span key={l.key} class={`chunk ${l.stream}`} data-stream={l.stream} dangerouslySetInnerHTML={{ __html: l.html }} />
        ))}
      </pre>
      {note && <p class="muted small log-note">{note}</p>}
    </>
  );
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
}: {
  doc: StatusDocument;
  job: JobView;
  attempt: number | null;
  latest: boolean;
  rerun?: RerunFrom;
}) {
  const run = doc.run_number;
  const now = useNow(job.state === 'running');
  const shownAttempt = attempt ?? job.attempt;
  // Only the latest run's current attempt has a live stream; every other one is history.
  const live = latest && shownAttempt === job.attempt;
  const byId = new Map(doc.jobs.map((j) => [j.id, j]));
  const routeRun = latest ? null : run;
  const elapsed = job.state === 'running' && job.started_at_ms != null ? now - job.started_at_ms : job.duration_ms;
  return (
    <aside class="panel" aria-label={`Job ${job.id}`}>
      <div class="panel-head">
        <h2>{job.name}</h2>
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
        <dt>Worker</dt>
        <dd>{job.worker_id ?? <span class="muted">—</span>}</dd>
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
        {job.condition && job.condition !== 'success()' && (
          <>
            <dt>Runs if</dt>
            <dd>
              <code>{job.condition}</code>
            </dd>
          </>
        )}
        <dt>Command</dt>
        <dd>
          <code class="command">{job.command}</code>
        </dd>
      </dl>
      {job.state === 'queued' && <WhyWaiting job={job} />}
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
        <Log wf={doc.id} job={job.id} run={run} attempt={shownAttempt} live={live} />
      )}
    </aside>
  );
}
