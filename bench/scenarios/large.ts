/**
 * Large runs (issue 21, "Large runs"): one workflow of 10,000 jobs, flat (independent jobs) or layered
 * (100 layers of 100, each job needing the job above it and that job's right-hand neighbour: 19,800
 * edges; an all-to-all 100 × 100 would be 990,000, which no real pipeline has). For each shape, on a
 * fresh server: creating the workflow, starting its run, the run's status document read while nothing
 * runs, the workflow list page that holds it, and the whole run drained by the bench's 16
 * claim → complete loops. While the documents are read, a probe asks `/healthz` every few
 * milliseconds: how long it waits is how long the server's event loop was held, and the answers carry
 * the server's own event-loop delay. The drain's load generators start, and warm up on a small
 * workflow of their own, before the run does (as the throughput rows warm up before they measure):
 * started cold, their own JIT compilation took most of the machine for the drain's first second.
 */
import { Pool } from 'undici';
import { apiOk, type JobsSpec } from '../lib/api.js';
import { freshWeft, type FreshServer } from '../lib/fresh.js';
import { Loadgens } from '../lib/procs.js';
import type { DagEvent, LoadgenResult } from '../lib/protocol.js';
import { emptyRow, type Row } from '../lib/report.js';
import type { Settings, StoreKind } from '../lib/settings.js';
import { errorMessage, median, now, round, sleep, summarize, type LatencySummary } from '../lib/util.js';
import { combine, loadgenConfigs, logTail } from './throughput.js';

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

export type LargeShape = 'flat' | 'layered';

/** `jobs` independent jobs. */
export function flatJobs(jobs: number): JobsSpec {
  const out: JobsSpec = {};
  for (let i = 0; i < jobs; i++) out[`j${String(i).padStart(5, '0')}`] = { run: 'true' };
  return out;
}

/** `layers` × `width`: job (i, k) needs (i-1, k) and (i-1, k+1 mod width). */
export function layeredJobs(layers: number, width: number): JobsSpec {
  const id = (i: number, k: number) => `l${String(i).padStart(3, '0')}k${String(k).padStart(3, '0')}`;
  const out: JobsSpec = {};
  for (let i = 0; i < layers; i++) {
    for (let k = 0; k < width; k++) out[id(i, k)] = i === 0 ? { run: 'true' } : { run: 'true', needs: [id(i - 1, k), id(i - 1, (k + 1) % width)] };
  }
  return out;
}

interface Timed {
  ms: number;
  bytes: number;
  status: number;
  text: string;
}

/** A GET timed to its last byte, the body kept as text (parsing it is not the server's time). */
async function timedGet(pool: Pool, path: string): Promise<Timed> {
  const t0 = now();
  const r = await pool.request({ method: 'GET', path, headersTimeout: 120_000, bodyTimeout: 120_000 });
  const text = await r.body.text();
  return { ms: now() - t0, bytes: Buffer.byteLength(text), status: r.statusCode, text };
}

interface LoopFigures {
  /** Round trips of the `/healthz` probes sent while the reads ran: the longest is the longest hold. */
  probe: LatencySummary;
  /** The largest `event_loop_delay_ms.max` any probe answer reported (the server's own monitor). */
  server_max_delay_ms: number | null;
  server_p99_delay_ms: number | null;
  /** The same probe of an idle server beside it over the same window: what the machine's load alone does. */
  control: LatencySummary | null;
}

/** Asks `/healthz` every `gapMs` until `running()` is false; answers the round trips and the largest delays reported. */
async function probeLoop(origin: string, running: () => boolean, gapMs: number): Promise<{ rtts: number[]; max: number | null; p99: number | null }> {
  const pool = new Pool(origin, { connections: 1 });
  const out = { rtts: [] as number[], max: null as number | null, p99: null as number | null };
  try {
    while (running()) {
      const t = await timedGet(pool, '/healthz');
      out.rtts.push(t.ms);
      const d = (JSON.parse(t.text) as { event_loop_delay_ms?: { p99: number; max: number } }).event_loop_delay_ms;
      if (d) {
        out.max = Math.max(out.max ?? 0, d.max);
        out.p99 = Math.max(out.p99 ?? 0, d.p99);
      }
      await sleep(gapMs);
    }
    return out;
  } finally {
    await pool.close();
  }
}

/**
 * Reads `path` `reads` times one after the other while a probe on a connection of its own asks
 * `/healthz` every `gapMs`: a server that builds a large answer in one go keeps the probe waiting.
 * `control`, an idle server, is probed alike over the same window.
 */
async function readsUnderProbe(origin: string, path: string, reads: number, control: string | null, gapMs = 5): Promise<{ reads: Timed[]; loop: LoopFigures }> {
  const main = new Pool(origin, { connections: 1 });
  let running = true;
  const probe = probeLoop(origin, () => running, gapMs);
  const ctl = control ? probeLoop(control, () => running, gapMs) : null;
  try {
    const out: Timed[] = [];
    for (let i = 0; i < reads; i++) {
      const t = await timedGet(main, path);
      if (t.status !== 200) throw new Error(`GET ${path} answered ${t.status}: ${t.text.slice(0, 300)}`);
      out.push(t);
    }
    running = false;
    const p = await probe;
    const c = ctl ? await ctl : null;
    return { reads: out, loop: { probe: summarize(p.rtts), server_max_delay_ms: p.max, server_p99_delay_ms: p.p99, control: c && summarize(c.rtts) } };
  } finally {
    running = false;
    await Promise.allSettled([probe, ctl]);
    await main.close();
  }
}

function loopNote(l: LoopFigures): string {
  return (
    `healthz probe max ${l.probe.max_ms} ms (p99 ${l.probe.p99_ms}); server event-loop delay max ${round(l.server_max_delay_ms, 1) ?? '—'} ms; ` +
    `an idle server beside it: probe max ${l.control?.max_ms ?? '—'} ms (p99 ${l.control?.p99_ms ?? '—'})`
  );
}

/** Counts a run's jobs by state in a status document (a check that the answer is complete and right). */
function stateCounts(text: string): { jobs: number; states: Record<string, number>; status: string } {
  const doc = JSON.parse(text) as { status: string; jobs: Array<{ state: string }> };
  const states: Record<string, number> = {};
  for (const j of doc.jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  return { jobs: doc.jobs.length, states, status: doc.status };
}

/**
 * Starts the drain's load generators and warms them up, before the run under test starts: `spec`
 * loops for the flat run, long-polling `dag` loops for the layered one (their warm-up claims as
 * `spec` loops do). The warm-up drains a workflow of `warmupJobs` jobs of its own, which is deleted
 * afterwards so that the list page holds only the large workflows.
 */
async function startDrainers(s: Settings, origin: string, shape: LargeShape, onEvents: (events: DagEvent[]) => void): Promise<{ loadgens: Loadgens; warmed: number }> {
  const loops = s.loadgenProcesses * s.loopsPerProcess;
  const perLoop = Math.ceil(s.warmupJobs / loops);
  await apiOk(origin, 'POST', '/api/workflows', { id: WARMUP_WORKFLOW, jobs: flatJobs(perLoop * loops) });
  await apiOk(origin, 'POST', `/api/workflows/${WARMUP_WORKFLOW}/run`);
  const extra = { warmupClaimsPerLoop: perLoop };
  const configs =
    shape === 'flat'
      ? loadgenConfigs(s, origin, 'spec', extra)
      : loadgenConfigs(s, origin, 'dag', { ...extra, longPollSecs: s.dag.longPollSecs, pollPauseMs: s.dag.pollPauseMs });
  const loadgens = await Loadgens.start(configs, shape === 'layered' ? onEvents : undefined);
  try {
    const over = await waitRunOver(origin, WARMUP_WORKFLOW, 60_000);
    if (over.status !== 'success') throw new Error(`the drain's warm-up run ended ${over.status}`);
    await apiOk(origin, 'DELETE', `/api/workflows/${WARMUP_WORKFLOW}`);
  } catch (err) {
    await loadgens.close();
    throw err;
  }
  return { loadgens, warmed: perLoop * loops };
}

/** The drain's own workflow for its warm-up (startDrainers). */
const WARMUP_WORKFLOW = 'large-warmup';

/** What the layered drain's events told so far (its loops' own results mark no first claim). */
interface DrainProgress {
  completes: number;
  firstClaimSent: number | null;
  lastCompleteAnswered: number | null;
  /** Wakes the drain's wait for the next events. */
  wake: (() => void) | null;
}

/** Drains the started run with the loadgens startDrainers made ready. */
async function drain(
  s: Settings,
  loadgens: Loadgens,
  shape: LargeShape,
  total: number,
  progress: DrainProgress,
): Promise<{ results: LoadgenResult[]; finished: boolean; firstClaimSent: number | null; lastCompleteAnswered: number | null }> {
  try {
    const deadlineAt = now() + s.repSecs * 1000;
    const resultsP = loadgens.go(s.repSecs * 1000);
    if (shape === 'flat') {
      // The flat run is all queued before the loops go, so a loop stops on its first empty claim.
      const results = await resultsP;
      const first = Math.min(...results.map((r) => r.firstClaimAt ?? Infinity));
      const last = Math.max(...results.map((r) => r.lastCompleteAt ?? -Infinity));
      return { results, finished: true, firstClaimSent: Number.isFinite(first) ? first : null, lastCompleteAnswered: Number.isFinite(last) ? last : null };
    }
    // The layered run queues a layer as the one above it completes, so its loops wait (long-poll).
    resultsP.catch(() => {});
    while (progress.completes < total && now() < deadlineAt) {
      await new Promise<void>((resolve) => {
        progress.wake = resolve;
        setTimeout(resolve, 200);
      });
    }
    progress.wake = null;
    loadgens.stop();
    return { results: await resultsP, finished: progress.completes >= total, firstClaimSent: progress.firstClaimSent, lastCompleteAnswered: progress.lastCompleteAnswered };
  } finally {
    await loadgens.close();
  }
}

/** Polls the run's summary until it is over (or the deadline passes); answers its status and finish time. */
async function waitRunOver(origin: string, id: string, deadlineMs: number): Promise<{ status: string; finished_at_ms: number | null }> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const a = await apiOk(origin, 'GET', `/api/workflows/${id}/runs?limit=1`);
    const run = (a.json as Array<{ status: string; run: { finished_at_ms: number | null } | null }>)[0];
    if (run && run.status !== 'running' && run.status !== 'queued') return { status: run.status, finished_at_ms: run.run?.finished_at_ms ?? null };
    if (Date.now() > until) return { status: run?.status ?? 'none', finished_at_ms: null };
    await sleep(200);
  }
}

function newProgress(): DrainProgress {
  return { completes: 0, firstClaimSent: null, lastCompleteAnswered: null, wake: null };
}

/** One drain of a large run: the loops' figures, and how the run ended. */
type DrainRep = ReturnType<typeof combine> & {
  run_status: string;
  run_finished_after_first_claim_ms: number | null;
  /** The drain did not end with every job done and the run a success (or ran out of time). */
  failed: boolean;
};

/** Sums up one drain: jobs/s over first claim sent → last complete answered, and the run's end. */
async function drainRep(
  origin: string,
  id: string,
  total: number,
  warmed: number,
  d: Awaited<ReturnType<typeof drain>>,
): Promise<DrainRep> {
  // combine counts the warm-up's jobs off what it expects; they were never part of `total`.
  const rep = combine(d.results, total + warmed);
  if (d.firstClaimSent !== null && d.lastCompleteAnswered !== null && d.lastCompleteAnswered > d.firstClaimSent) {
    rep.span_ms = round(d.lastCompleteAnswered - d.firstClaimSent);
    rep.jobs_per_sec = round((rep.completed * 1000) / (d.lastCompleteAnswered - d.firstClaimSent), 1);
  }
  // Past the time budget (a busy machine) the run is left unfinished: the figures are over the jobs done.
  const budget = rep.timed_out || !d.finished;
  const over = budget ? { status: 'running', finished_at_ms: null } : await waitRunOver(origin, id, 60_000);
  const wall = over.finished_at_ms !== null && d.firstClaimSent !== null ? over.finished_at_ms - d.firstClaimSent : null;
  rep.timed_out = budget;
  return { ...rep, run_status: over.status, run_finished_after_first_claim_ms: round(wall), failed: budget || rep.completed < total || over.status !== 'success' };
}

/** The five rows of one shape on one store. */
export async function largeScenario(s: Settings, store: StoreKind, shape: LargeShape): Promise<Row[]> {
  const L = s.large;
  const spec = shape === 'flat' ? flatJobs(L.jobs) : layeredJobs(L.layers, L.width);
  const total = Object.keys(spec).length;
  const what = shape === 'flat' ? `${total.toLocaleString('en')} flat` : `${L.layers} × ${L.width} layered`;
  const name = (row: string) => `large ${what} · ${row} · ${STORE_NAME[store]}`;
  const rows = {
    create: emptyRow(`large.${shape}.create.${store}`, name('create'), 'large', store),
    start: emptyRow(`large.${shape}.start.${store}`, name('start'), 'large', store),
    status: emptyRow(`large.${shape}.status.${store}`, name('status document'), 'large', store),
    list: emptyRow(`large.${shape}.list.${store}`, name('list page'), 'large', store),
    drain: emptyRow(`large.${shape}.drain.${store}`, name('drain by 16 loops'), 'large', store),
  };
  const all = Object.values(rows);
  let fresh: FreshServer | null = null;
  let control: FreshServer | null = null;
  let loadgens: Loadgens | null = null;
  try {
    fresh = await freshWeft(store);
    // An idle server on a store of its own, probed beside the one under test (readsUnderProbe).
    control = await freshWeft('sqlite');
    const { origin } = fresh.server;
    // Created `creates` times under different ids (the list page then holds them all); only the first runs.
    const ids = Array.from({ length: L.creates }, (_, i) => `large-${shape}-${i}`);
    const createMs: number[] = [];
    for (const id of ids) {
      const t0 = now();
      await apiOk(origin, 'POST', '/api/workflows', { id, jobs: spec });
      createMs.push(now() - t0);
    }
    const c = summarize(createMs);
    rows.create.latency = { what: `POST /api/workflows of ${total.toLocaleString('en')} jobs, ${createMs.length} workflows`, p50_ms: c.p50_ms, p99_ms: c.max_ms };
    rows.create.raw = [{ create_ms: createMs.map((x) => round(x)) }];

    // Long-polling loops mark no first claim of their own (an idle wait is not work): the events say.
    let progress = newProgress();
    const onEvents = (events: DagEvent[]) => {
      for (const e of events) {
        if (e.kind === 'complete') {
          progress.completes++;
          progress.lastCompleteAnswered = Math.max(progress.lastCompleteAnswered ?? 0, e.answered_at);
        } else progress.firstClaimSent = Math.min(progress.firstClaimSent ?? Infinity, e.sent_at);
      }
      progress.wake?.();
    };
    let drainers = await startDrainers(s, origin, shape, onEvents);
    loadgens = drainers.loadgens;

    const id = ids[0]!;
    const t0 = now();
    await apiOk(origin, 'POST', `/api/workflows/${id}/run`);
    const startMs = now() - t0;
    rows.start.latency = { what: 'POST /api/workflows/{id}/run, answered', p50_ms: round(startMs), p99_ms: round(startMs) };
    rows.start.raw = [{ start_ms: round(startMs) }];

    // /healthz reports the last one to two seconds: let the start's own delay fall out of it first.
    await sleep(2100);
    const st = await readsUnderProbe(origin, `/api/workflows/${id}/runs/1`, L.reads, control.server.origin);
    const stSum = summarize(st.reads.map((r) => r.ms));
    const check = stateCounts(st.reads[st.reads.length - 1]!.text);
    rows.status.latency = { what: `GET /api/workflows/{id}/runs/1, ${L.reads} reads while idle`, p50_ms: stSum.p50_ms, p99_ms: stSum.p99_ms };
    rows.status.summary = { document_bytes: st.reads[0]!.bytes, jobs: check.jobs, states: check.states };
    rows.status.note = `${(st.reads[0]!.bytes / 1e6).toFixed(1)} MB, ${check.jobs} jobs; ${loopNote(st.loop)}`;
    rows.status.raw = [{ reads: stSum, loop: st.loop, read_ms: st.reads.map((r) => round(r.ms)) }];
    if (check.jobs !== total) {
      rows.status.status = 'error';
      rows.status.note = `the document holds ${check.jobs} jobs, not ${total}`;
    }

    await sleep(2100);
    const li = await readsUnderProbe(origin, `/api/workflows?limit=50`, L.reads, control.server.origin);
    const liSum = summarize(li.reads.map((r) => r.ms));
    rows.list.latency = { what: `GET /api/workflows (${ids.length} workflows of ${total.toLocaleString('en')} jobs), ${L.reads} reads`, p50_ms: liSum.p50_ms, p99_ms: liSum.p99_ms };
    rows.list.note = `${(li.reads[0]!.bytes / 1e6).toFixed(1)} MB; ${loopNote(li.loop)}`;
    rows.list.raw = [{ reads: liSum, loop: li.loop, read_ms: li.reads.map((r) => round(r.ms)) }];

    // The drain, `s.repetitions` times: the first of the run read above, each later one of a new run
    // of the next workflow created, with its loops started and warmed up again.
    const drains: DrainRep[] = [];
    for (let i = 0; i < s.repetitions; i++) {
      const runId = ids[i % ids.length]!;
      if (i > 0) {
        progress = newProgress();
        drainers = await startDrainers(s, origin, shape, onEvents);
        loadgens = drainers.loadgens;
        await apiOk(origin, 'POST', `/api/workflows/${runId}/run`);
      }
      const d = await drain(s, drainers.loadgens, shape, total, progress);
      loadgens = null;
      const r = await drainRep(origin, runId, total, drainers.warmed, d);
      if (r.errors > 0) r.server_log_tail = logTail(fresh.server);
      drains.push(r);
      if (r.failed) break;
    }
    const failed = drains.find((r) => r.failed);
    const shown = failed ?? drains.find((r) => r.jobs_per_sec === median(drains.map((x) => x.jobs_per_sec))) ?? drains[0]!;
    const budget = shown.timed_out;
    rows.drain.jobs_per_sec = failed ? failed.jobs_per_sec : round(median(drains.map((r) => r.jobs_per_sec)), 1);
    rows.drain.latency = { what: 'claim round trip', p50_ms: round(median(drains.map((r) => r.latency.p50_ms))), p99_ms: round(median(drains.map((r) => r.latency.p99_ms))) };
    rows.drain.summary = { completed: shown.completed, expected: total, run_status: shown.run_status, errors: shown.errors, timed_out: budget, reps: drains.length };
    const secs = (r: { span_ms: number | null }) => (r.span_ms === null ? '—' : (r.span_ms / 1000).toFixed(2));
    rows.drain.note =
      `${budget ? `${s.repSecs} s time budget reached: ` : ''}${shown.completed.toLocaleString('en')} of ${total.toLocaleString('en')} jobs in ` +
      `${failed ? secs(failed) : secs({ span_ms: median(drains.map((r) => r.span_ms)) })} s (first claim → last complete${drains.length > 1 && !failed ? ', median' : ''})` +
      `${budget ? '' : `; run ${shown.run_status}${shown.run_finished_after_first_claim_ms === null ? '' : ` ${(shown.run_finished_after_first_claim_ms / 1000).toFixed(2)} s after the first claim`}`}` +
      `${drains.length > 1 ? `; drains ${drains.map(secs).join(' / ')} s` : ''}`;
    rows.drain.raw = drains;
    if (failed && !failed.timed_out) {
      rows.drain.status = 'error';
      rows.drain.note = `${rows.drain.note}; expected ${total} jobs done and the run a success`;
    }
  } catch (err) {
    for (const row of all) {
      if (row.status === 'ok' && row.latency === null) {
        row.status = 'error';
        row.note = errorMessage(err);
      }
    }
  } finally {
    await loadgens?.close();
    await control?.close();
    await fresh?.close();
  }
  return all;
}
