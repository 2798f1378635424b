/**
 * One workflow: a run's DAG, kept current by `GET /api/workflows/{id}/events` (or by polling a
 * server without it), the run selector, Run and Cancel, the definition, and the job panel.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { JobView, RunSummary, StatusDocument } from '../../protocol/wire.js';
import { api, ApiError, enc, post } from '../api';
import { openStream } from '../sse';
import { ago, nextFire, stamp, useNow } from '../format';
import { runTriggerText, triggerText } from '../triggers';
import { go, historyHref, workflowHref, type Route } from '../router';
import { runDuration } from './history';
import { countStates, ErrorLine, JobCounts, StateBadge } from './common';
import { Graph } from './graph';
import { JobList } from './job-list';
import { Timeline } from './timeline';
import { JobPanel } from './job-panel';
import { GroupPanel } from './group-panel';
import { graphNodes } from '../groups';
import { Artifacts } from './artifacts';
import { Definition } from './definition';
import { RunEvent } from './run-event';
import { RunInputsForm, startRun, type DeclaredInput } from './run-inputs';
import { RunNotifications } from './notifications';

type WorkflowRoute = Extract<Route, { view: 'workflow' }>;

const POLL_MS = 2000;
/** A failed read is tried again after this long, doubling up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 5000;

/**
 * "success in 3.3s", "running 12s" or "queued". A run the live `run` event just ended has no
 * finished_at_ms until the document is read again: its last job's end stands in meanwhile.
 */
function runHeadline(doc: StatusDocument, status: string, now: number): string {
  const run = doc.run!;
  if (status === 'running' || status === 'queued') return runDuration({ ...run, status }, now);
  const end = run.finished_at_ms ?? Math.max(run.created_at_ms, ...doc.jobs.map((j) => j.finished_at_ms ?? 0));
  return `${status} in ${runDuration({ ...run, status, finished_at_ms: end }, now)}`;
}

export function WorkflowView({ route }: { route: WorkflowRoute }) {
  const { id, run, job: selected, attempt, definition, line } = route;
  const [doc, setDoc] = useState<StatusDocument | null>(null);
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [latestRun, setLatestRun] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [conn, setConn] = useState<'live' | 'reconnecting' | 'polling'>('live');
  const [busy, setBusy] = useState(false);
  // The jobs as a graph, a list (narrowed to one state when a count was clicked) or a timeline.
  const [mode, setMode] = useState<'graph' | 'list' | 'timeline'>('graph');
  const [listState, setListState] = useState('');
  // Whether another run may start (or queue) while one is running: the workflow's `concurrency`.
  const [parallel, setParallel] = useState(false);
  const now = useNow();
  useEffect(() => {
    let live = true;
    api<{ concurrency?: { max_runs?: number; when_full?: string } }>(`/api/workflows/${enc(id)}/definition`).then(
      (def) => live && setParallel((def.concurrency?.max_runs ?? 1) > 1 || def.concurrency?.when_full === 'queue'),
      // An older server has no definition endpoint: one run at a time, as there.
      () => live && setParallel(false),
    );
    return () => {
      live = false;
    };
  }, [id]);
  // The run on screen; events for other runs only refresh the run list.
  const shown = useRef<number | null>(null);
  // The ids of its jobs, as last read.
  const shownJobs = useRef<Set<string>>(new Set());

  // Reads of the run list may answer out of order (a run's event and a re-run's own read, say): only
  // the newest read's answer is applied, or a list from before a new run could replace one with it.
  const runReads = useRef(0);
  const loadRuns = useCallback(async () => {
    const read = ++runReads.current;
    try {
      const list = await api<RunSummary[]>(`/api/workflows/${enc(id)}/runs?limit=100`);
      if (read !== runReads.current) return;
      setRuns(list);
      if (list[0]) setLatestRun((n) => Math.max(n ?? 0, list[0]!.run_number));
    } catch (err) {
      // A server without run history: the selector falls back to numbers.
      if (err instanceof ApiError && err.status === 404) setRuns(null);
    }
  }, [id]);

  useEffect(() => {
    setDoc(null);
    setError(null);
    shown.current = run;
    let gone = false;
    // A document is a snapshot taken when the server answered; an event that arrives while one is on
    // its way may be newer than it (or belong to a run it will show), so such an event makes the
    // document be read once more when this one lands. Only the newest read is applied: answers may
    // land out of order.
    let reads = 0;
    let loading = false;
    let stale = false;
    // A failed read is tried again by itself, and a stream that connects again reads again (events
    // were missed meanwhile), so a page opened while the server was away recovers when it is back.
    let failed = false;
    let retry: ReturnType<typeof setTimeout> | null = null;
    let retryMs = RETRY_FIRST_MS;
    const load = async () => {
      if (retry) clearTimeout(retry);
      retry = null;
      const mine = ++reads;
      loading = true;
      stale = false;
      try {
        const d = await api<StatusDocument>(run === null ? `/api/workflows/${enc(id)}/status` : `/api/workflows/${enc(id)}/runs/${run}`);
        if (gone || mine !== reads) return;
        if (run === null) setLatestRun(d.run_number);
        shown.current = d.run_number;
        shownJobs.current = new Set(d.jobs.map((j) => j.id));
        setDoc(d);
        setError(null);
        failed = false;
        retryMs = RETRY_FIRST_MS;
      } catch (err) {
        if (!gone && mine === reads) {
          setError(err);
          failed = true;
          retry = setTimeout(() => void load(), retryMs);
          retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
        }
      } finally {
        if (mine === reads) {
          loading = false;
          if (stale && !gone) reloadSoon();
        }
      }
    };
    /** An event the document being read may predate: read it again once the current read lands. */
    const outdated = () => {
      if (loading) stale = true;
      else reloadSoon();
    };
    // The burst of events a fan-out makes (one per instance) costs one read.
    let reload: ReturnType<typeof setTimeout> | null = null;
    const reloadSoon = () => {
      reload ??= setTimeout(() => {
        reload = null;
        void load();
      }, 100);
    };
    let poll: ReturnType<typeof setInterval> | null = null;
    let opened = false;
    const stream = openStream(`/api/workflows/${enc(id)}/events`, {
      // Read once the stream is open, so that no change falls between the document and the events.
      onOpen: () => {
        opened = true;
        void load();
      },
      onState: (state) => {
        setConn(state);
        // The stream could not connect at all: read anyway, to show the document or why it cannot be read.
        if (state === 'reconnecting' && !opened && !failed && !loading) void load();
      },
      onMissing: () => {
        setConn('polling');
        void load();
        poll = setInterval(() => void load(), POLL_MS);
      },
      onEvent(ev) {
        if (ev.event === 'job') {
          const j = JSON.parse(ev.data) as JobView & { run_number: number };
          if (j.run_number !== shown.current) {
            // Following the latest run: a job of a newer one means the run on screen is about to be
            // replaced, and the read doing it may have been answered before this change.
            if (run === null && (shown.current === null || j.run_number > shown.current)) outdated();
            return;
          }
          if (loading) stale = true;
          // A job the document lacks was made during the run (a fan-out's instances, which replace the
          // job standing for them): read the whole document again rather than guess its place.
          if (!shownJobs.current.has(j.id)) {
            reloadSoon();
            return;
          }
          setDoc((cur) => (cur ? { ...cur, jobs: cur.jobs.map((x) => (x.id === j.id ? j : x)) } : cur));
        } else if (ev.event === 'run') {
          const r = JSON.parse(ev.data) as { run_number: number; status: StatusDocument['status'] };
          setLatestRun((n) => Math.max(n ?? 0, r.run_number));
          void loadRuns();
          // Following the latest run: a new run replaces the one on screen.
          if (run === null && r.run_number !== shown.current) void load();
          else if (r.run_number === shown.current) {
            if (loading) stale = true;
            setDoc((cur) => (cur ? { ...cur, status: r.status, run: cur.run && { ...cur.run, status: r.status } } : cur));
          }
        } else if (ev.event === 'resync') {
          void load();
        }
      },
    });
    void loadRuns();
    return () => {
      gone = true;
      stream.close();
      if (poll) clearInterval(poll);
      if (reload) clearTimeout(reload);
      if (retry) clearTimeout(retry);
    };
  }, [id, run]);

  // Nodes keep their first callback (they skip re-rendering), so it reads the route through a ref.
  const routeRef = useRef(route);
  routeRef.current = route;
  const open = useCallback((job: string) => go(workflowHref(routeRef.current.id, routeRef.current.run, job)), []);

  // Escape closes the job panel, back to the run's graph.
  useEffect(() => {
    if (!selected) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && !e.defaultPrevented) go(workflowHref(routeRef.current.id, routeRef.current.run));
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [selected]);

  // The tab's title names the run's state, so a run can be watched from another tab.
  const titleState = doc ? (doc.run?.status ?? doc.status) : null;
  useEffect(() => {
    document.title = titleState ? `${titleState} · ${doc!.name} · weft` : `${id} · weft`;
    return () => {
      document.title = 'weft';
    };
  }, [titleState, doc?.name, id]);

  const [asking, setAsking] = useState<Record<string, DeclaredInput> | null>(null);
  const started = () => {
    setAsking(null);
    if (run !== null) go(workflowHref(id));
    void loadRuns();
  };
  /** README "Re-running a run": a new run from the one shown, then the page follows the new run. */
  const rerun = async (body: { only: 'failed' | 'all' } | { from: string }) => {
    if (doc?.run_number == null) return;
    setBusy(true);
    try {
      await post(`/api/workflows/${enc(id)}/runs/${doc.run_number}/rerun`, body);
      setError(null);
      go(workflowHref(id));
      void loadRuns();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const act = async (what: 'run' | 'cancel') => {
    setBusy(true);
    try {
      if (what === 'run') {
        // A workflow with inputs asks for them first (RunInputsForm below).
        if (await startRun(id, setAsking)) started();
        return;
      }
      await post(`/api/workflows/${enc(id)}/${what}`);
      void loadRuns();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  // Until the run asked for has loaded, the previous one is not shown in its place.
  if (!doc || doc.id !== id || (run !== null && doc.run_number !== run)) {
    return (
      <section>
        <h1>{id}</h1>
        {error ? <ErrorLine error={error} /> : <p class="muted">Loading…</p>}
      </section>
    );
  }
  const latest = run === null || run === latestRun;
  const job = selected ? doc.jobs.find((j) => j.id === selected) : undefined;
  // A matrix or fan-out job's id names its instances together (dashboard/groups.ts).
  const group = selected && !job ? graphNodes(doc.jobs).find((n) => n.id === selected && n.group) : undefined;
  const runNumbers = runs ? runs.map((r) => r.run_number) : Array.from({ length: latestRun ?? doc.run_number ?? 0 }, (_, i) => (latestRun ?? doc.run_number ?? 0) - i);
  const runStatus = doc.run?.status ?? doc.status;
  const running = latest && (runStatus === 'running' || doc.jobs.some((j) => j.state === 'running' || j.state === 'queued'));
  // Why a re-run of the shown run cannot start now; null when it can (the server decides the rest).
  const shownActive = runStatus === 'running' || runStatus === 'queued';
  const rerunBlocked =
    doc.run_number === null
      ? 'the workflow has not run yet'
      : shownActive
        ? 'this run is still active: wait for it to end or cancel it'
        : running && !parallel
          ? 'another run is active: wait for it to end or cancel it'
          : null;
  const allSucceeded = doc.jobs.length > 0 && doc.jobs.every((j) => j.state === 'success');
  const rerunFailedBlocked = rerunBlocked ?? (allSucceeded ? 'every job of this run succeeded: nothing failed to re-run' : null);

  return (
    <section class="workflow">
      <div class="wf-head">
        <h1>
          {doc.name} {doc.name !== doc.id && <span class="muted small">({doc.id})</span>}
        </h1>
        <StateBadge state={runStatus} />
        <span class="muted">
          {doc.trigger && <>trigger: {triggerText(doc.trigger)} · </>}
          {doc.next_fire_at_ms != null && <span title={stamp(doc.next_fire_at_ms)}>{nextFire(doc.next_fire_at_ms, now)} · </span>}
          {doc.run ? (
            <>
              {`${runHeadline(doc, runStatus, now)} · started `}
              <span title={stamp(doc.run.created_at_ms)}>{ago(doc.run.created_at_ms, now)}</span>
            </>
          ) : (
            'never run'
          )}
          {doc.run?.trigger && doc.run.trigger !== 'manual' && doc.run.trigger !== 'rerun' && <> · by {runTriggerText(doc.run.trigger, doc.run.event_name)}</>}
          {doc.run?.rerun_of != null && <> · re-run of Run {doc.run.rerun_of}</>}
          {doc.run?.parent && (
            // README "Workflows calling workflows": the job whose call started this run.
            <span class="parent-run">
              {' · called by job '}
              <a href={workflowHref(doc.run.parent.workflow_id, doc.run.parent.run_number, doc.run.parent.job_id)}>{doc.run.parent.job_id}</a>
              {' of '}
              <a href={workflowHref(doc.run.parent.workflow_id, doc.run.parent.run_number)}>
                {doc.run.parent.workflow_id} run {doc.run.parent.run_number}
              </a>
            </span>
          )}
          {doc.run && !doc.run.concurrency_group && runStatus === 'queued' && (
            <span class="run-group"> · waiting for a free slot: every run concurrency.max_runs allows is running</span>
          )}
          {doc.run?.concurrency_group && (
            <span class="run-group" data-group={doc.run.concurrency_group}>
              {runStatus === 'queued'
                ? ` · waiting for group ${doc.run.concurrency_group} (or a free slot of this workflow)`
                : ` · group ${doc.run.concurrency_group}`}
            </span>
          )}
          {doc.run?.inputs && Object.keys(doc.run.inputs).length > 0 && (
            <> · inputs: {Object.entries(doc.run.inputs).map(([k, v]) => `${k}=${v}`).join(', ')}</>
          )}
        </span>
        <JobCounts
          counts={countStates(doc.jobs)}
          onPick={(s) => {
            setMode('list');
            setListState(s);
            if (definition) go(workflowHref(id, run, selected));
          }}
        />
        <span class={`conn ${conn}`}>{conn === 'live' ? '● live' : conn === 'polling' ? '● polling' : '○ reconnecting'}</span>
      </div>
      <div class="toolbar">
        <label>
          Showing{' '}
          <select
            value={doc.run_number === null ? '' : String(doc.run_number)}
            onChange={(e) => {
              const n = Number(e.currentTarget.value);
              go(workflowHref(id, n === latestRun ? null : n, selected));
            }}
          >
            {doc.run_number === null && <option value="">never run</option>}
            {runNumbers.map((n) => {
              const r = runs?.find((x) => x.run_number === n);
              return (
                <option key={n} value={String(n)}>
                  Run {n}
                  {n === latestRun ? ' (latest)' : ''}
                  {r ? ` · ${r.status} · ${runDuration(r, now)}` : ''}
                </option>
              );
            })}
          </select>
        </label>
        <button type="button" disabled={busy || (running && !parallel)} onClick={() => act('run')}>
          Run
        </button>
        <button type="button" disabled={busy || !running} onClick={() => act('cancel')}>
          Cancel
        </button>
        {doc.run_number !== null && (
          <>
            <button
              type="button"
              disabled={busy || rerunFailedBlocked !== null}
              title={rerunFailedBlocked ?? `Run the jobs of run ${doc.run_number} that did not succeed again; keep the rest`}
              onClick={() => void rerun({ only: 'failed' })}
            >
              Re-run failed jobs
            </button>
            <button
              type="button"
              disabled={busy || rerunBlocked !== null}
              title={rerunBlocked ?? `Run every job of run ${doc.run_number} again, with its inputs`}
              onClick={() => void rerun({ only: 'all' })}
            >
              Re-run all
            </button>
          </>
        )}
        <span class="modes" role="group" aria-label="Show the jobs as">
          {(['graph', 'list', 'timeline'] as const).map((m) => (
            <button
              key={m}
              type="button"
              aria-pressed={mode === m && !definition}
              onClick={() => {
                setMode(m);
                if (definition) go(workflowHref(id, run, selected));
              }}
            >
              {m === 'graph' ? 'Graph' : m === 'list' ? 'List' : 'Timeline'}
            </button>
          ))}
        </span>
        <a class="button" href={historyHref(id)}>
          History
        </a>
        <a class="button" href={`${workflowHref(id, run)}/definition`} aria-current={definition ? 'page' : undefined}>
          Definition
        </a>
      </div>
      <ErrorLine error={error} />
      {doc.run?.event_name && doc.run_number !== null && !definition && <RunEvent key={doc.run_number} wf={id} run={doc.run_number} name={doc.run.event_name} />}
      {asking && <RunInputsForm id={id} inputs={asking} onDone={started} onCancel={() => setAsking(null)} />}
      <div class={`wf-body${job || group ? ' with-panel' : ''}`}>
        {definition ? (
          <Definition id={id} run={doc.run_number} />
        ) : mode === 'list' ? (
          <JobList jobs={doc.jobs} state={listState} onState={setListState} selected={selected} onOpen={open} />
        ) : mode === 'timeline' ? (
          <Timeline jobs={doc.jobs} />
        ) : (
          <Graph jobs={doc.jobs} selected={selected} onOpen={open} />
        )}
        {job && (
          <JobPanel
            key={`${doc.run_number}:${job.id}`}
            doc={doc}
            job={job}
            attempt={attempt}
            latest={latest}
            line={line}
            rerun={{ start: (from) => void rerun({ from }), blocked: busy ? 'starting…' : rerunBlocked }}
          />
        )}
        {group && <GroupPanel key={`${doc.run_number}:${group.id}`} doc={doc} run={latest ? null : run} id={group.id} name={group.name} group={group.group!} />}
        {selected && !job && !group && <p class="error">No job {selected} in this run.</p>}
      </div>
      {doc.run_number !== null && !definition && (
        <section class="run-artifacts">
          <h2>Artifacts of run {doc.run_number}</h2>
          <Artifacts wf={id} run={doc.run_number} version={doc.jobs.map((j) => j.state).join(',')} />
        </section>
      )}
      {doc.run_number !== null && !definition && <RunNotifications key={`${id}:${doc.run_number}`} wf={id} run={doc.run_number} />}
    </section>
  );
}
