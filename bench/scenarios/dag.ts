/**
 * How fast work moves along a DAG when workers are idle and waiting: a chain (each job needs the
 * previous one) and a fan-out/fan-in (root -> N parallel jobs -> sink). The measured step is from
 * sending the upstream job's complete to the moment a worker's claim answer carrying the dependent
 * arrives, so it covers the commit, the enqueue, and how the waiting worker learns about the job
 * (a long-poll wake-up, or its next poll).
 *
 * Idle workers long-poll (`wait_secs`) when the server accepts it; a server that refuses the field
 * is driven by polling in a tight loop with a short pause instead, and the rows say "no long-poll".
 */
import { api, createWorkflow, runWorkflow, type JobsSpec } from '../lib/api.js';
import { freshWeft, type FreshServer } from '../lib/fresh.js';
import { Loadgens } from '../lib/procs.js';
import type { DagEvent, LoadgenResult } from '../lib/protocol.js';
import { emptyRow, type Row } from '../lib/report.js';
import type { Settings, StoreKind } from '../lib/settings.js';
import { errorMessage, now, round, sleep, summarize } from '../lib/util.js';
import { loadgenConfigs, logTail } from './throughput.js';

const STORE_NAME: Record<StoreKind, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' };

function chain(n: number): JobsSpec {
  const jobs: JobsSpec = {};
  const id = (i: number) => `c${String(i).padStart(3, '0')}`;
  for (let i = 0; i < n; i++) jobs[id(i)] = i === 0 ? { run: 'true' } : { run: 'true', needs: [id(i - 1)] };
  return jobs;
}

function fan(width: number): JobsSpec {
  const jobs: JobsSpec = { root: { run: 'true' } };
  const mids: string[] = [];
  for (let i = 0; i < width; i++) {
    const id = `m${String(i).padStart(2, '0')}`;
    mids.push(id);
    jobs[id] = { run: 'true', needs: ['root'] };
  }
  jobs.sink = { run: 'true', needs: mids };
  return jobs;
}

/**
 * Null when the server long-polls; otherwise why the idle workers must poll instead. With nothing
 * queued, a long-polling server holds the probe for its 1 s before answering null; one that accepts
 * the field but answers at once would turn long-polling workers into a loop without any pause.
 */
async function probeLongPoll(origin: string, s: Settings): Promise<string | null> {
  const t0 = now();
  const a = await api(origin, 'POST', '/api/jobs/claim', { worker_id: 'bench-probe', labels: [], lease_ttl_secs: s.leaseTtlSecs, wait_secs: 1 });
  const ms = now() - t0;
  if (a.status === 200 && ms >= 500) return null;
  if (a.status === 200) return `claim with wait_secs: 1 answered after ${ms.toFixed(0)} ms, so it does not wait`;
  if (a.status === 400) return `claim with wait_secs answered 400: ${a.text.slice(0, 200)}`;
  throw new Error(`long-poll probe answered ${a.status}: ${a.text.slice(0, 300)}`);
}

interface StepFigures {
  /** Per dependent job: complete sent (of the upstream that unblocked it) -> its claim answered. */
  steps: Array<{ job_id: string; ms: number }>;
  missing: string[];
}

/**
 * The upstream that unblocked a job is the one whose complete answer lists it in `enqueued`; a server
 * that does not say is assumed to have been unblocked by the upstream whose complete was answered last.
 */
function stepLatencies(jobs: JobsSpec, events: DagEvent[]): StepFigures {
  const claims = new Map<string, DagEvent>();
  const completes = new Map<string, DagEvent>();
  for (const e of events) {
    const m = e.kind === 'claim' ? claims : completes;
    if (!m.has(e.job_id)) m.set(e.job_id, e);
  }
  const steps: StepFigures['steps'] = [];
  const missing: string[] = [];
  for (const [id, def] of Object.entries(jobs)) {
    if (!def.needs?.length) continue;
    const claim = claims.get(id);
    const ups = def.needs.map((n) => completes.get(n)).filter((e): e is DagEvent => e !== undefined);
    if (!claim || ups.length !== def.needs.length) {
      missing.push(id);
      continue;
    }
    const unblocker = ups.find((u) => u.enqueued?.includes(id)) ?? ups.reduce((a, b) => (b.answered_at > a.answered_at ? b : a));
    steps.push({ job_id: id, ms: claim.answered_at - unblocker.sent_at });
  }
  return { steps, missing };
}

interface DagRun {
  workflow_id: string;
  jobs: JobsSpec;
  run_sent_at: number;
  run_answered_at: number;
  events: DagEvent[];
  finished: boolean;
}

export async function dagScenario(s: Settings, store: StoreKind): Promise<Row[]> {
  const name = STORE_NAME[store];
  const chainRow = emptyRow(`dag.chain.${store}`, `DAG chain ${s.dag.chainLength} · ${name}`, 'dag', store);
  const fanRow = emptyRow(`dag.fan.${store}`, `DAG fan 1→${s.dag.fanWidth}→1 · ${name}`, 'dag', store);
  let fresh: FreshServer | null = null;
  let loadgens: Loadgens | null = null;
  try {
    fresh = await freshWeft(store);
    const { origin } = fresh.server;
    const noLongPoll = await probeLongPoll(origin, s);
    const mode = noLongPoll ? 'no long-poll' : 'long-poll';
    const runs: DagRun[] = [
      { workflow_id: 'dag-chain', jobs: chain(s.dag.chainLength), run_sent_at: 0, run_answered_at: 0, events: [], finished: false },
      { workflow_id: 'dag-fan', jobs: fan(s.dag.fanWidth), run_sent_at: 0, run_answered_at: 0, events: [], finished: false },
    ];
    for (const r of runs) await createWorkflow(origin, r.workflow_id, r.jobs);

    const byId = new Map(runs.map((r) => [r.workflow_id, r]));
    let wake: (() => void) | null = null;
    const onEvents = (events: DagEvent[]) => {
      for (const e of events) byId.get(e.workflow_id)?.events.push(e);
      wake?.();
    };
    loadgens = await Loadgens.start(
      loadgenConfigs(s, origin, 'dag', { longPollSecs: noLongPoll ? null : s.dag.longPollSecs, pollPauseMs: s.dag.pollPauseMs }),
      onEvents,
    );
    const deadlineAt = now() + s.dag.deadlineSecs * 1000;
    const resultsP = loadgens.go(s.dag.deadlineSecs * 1000);
    resultsP.catch(() => {});
    // Let every loop settle into its wait (or its poll rhythm) so the first job finds workers idle.
    await sleep(500);
    for (const r of runs) {
      const total = Object.keys(r.jobs).length;
      const completed = () => new Set(r.events.filter((e) => e.kind === 'complete').map((e) => e.job_id)).size;
      r.run_sent_at = now();
      await runWorkflow(origin, r.workflow_id);
      r.run_answered_at = now();
      while (completed() < total && now() < deadlineAt) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 200);
        });
      }
      wake = null;
      r.finished = completed() >= total;
      await sleep(300);
    }
    loadgens.stop();
    const results: LoadgenResult[] = await resultsP;
    const polling = {
      claim_requests: results.reduce((a, x) => a + x.requests, 0),
      null_claims: results.reduce((a, x) => a + x.nullClaims, 0),
      errors: results.reduce((a, x) => a + x.errors, 0),
      error_samples: results.flatMap((x) => x.errorSamples).slice(0, 10),
    };

    for (const [row, r] of [
      [chainRow, runs[0]!],
      [fanRow, runs[1]!],
    ] as const) {
      row.name += ` (${mode})`;
      const { steps, missing } = stepLatencies(r.jobs, r.events);
      const claimTimes = r.events.filter((e) => e.kind === 'claim').map((e) => e.answered_at);
      const completeTimes = r.events.filter((e) => e.kind === 'complete').map((e) => e.answered_at);
      const firstClaim = claimTimes.length ? Math.min(...claimTimes) : null;
      const lastComplete = completeTimes.length ? Math.max(...completeTimes) : null;
      const fanOut = steps.filter((x) => x.job_id !== 'sink');
      const sink = steps.find((x) => x.job_id === 'sink');
      const all = summarize(fanOut.map((x) => x.ms));
      row.latency = {
        what:
          r === runs[0]
            ? 'step: complete→next claim'
            : `step: root complete→each fan-out claim (${s.loadgenProcesses * s.loopsPerProcess} workers, so later ones wait for a free worker)`,
        p50_ms: all.p50_ms,
        p99_ms: all.p99_ms,
      };
      row.summary = {
        mode,
        // Measured from the run request's answer: the first claim can even arrive before it (negative).
        first_job_ms: firstClaim === null ? null : round(firstClaim - r.run_answered_at),
        wall_ms: firstClaim === null || lastComplete === null ? null : round(lastComplete - r.run_sent_at),
        ...(r === runs[1] ? { fan_width: s.dag.fanWidth, fan_in_ms: sink ? round(sink.ms) : null, all_claimed_ms: all.max_ms } : {}),
        finished: r.finished,
      };
      row.raw = [
        {
          long_poll_refused: noLongPoll,
          step_latency: all,
          steps: steps.map((x) => ({ job_id: x.job_id, ms: round(x.ms) })),
          missing_steps: missing,
          first_job_from_run_sent_ms: firstClaim === null ? null : round(firstClaim - r.run_sent_at),
          run_request_ms: round(r.run_answered_at - r.run_sent_at),
          events: r.events.length,
          workers: s.loadgenProcesses * s.loopsPerProcess,
          // Over the whole scenario (both DAGs and the idle time around them).
          polling,
          ...(polling.errors > 0 ? { server_log_tail: logTail(fresh.server) } : {}),
        },
      ];
      if (noLongPoll) row.note = `no long-poll: claims in a loop with a ${s.dag.pollPauseMs} ms pause`;
      if (!r.finished) {
        row.status = 'error';
        row.note = `the DAG did not finish within ${s.dag.deadlineSecs} s (${missing.length} steps missing)`;
      }
    }
  } catch (err) {
    for (const row of [chainRow, fanRow]) {
      row.status = 'error';
      row.note = errorMessage(err);
    }
  } finally {
    await loadgens?.close();
    await fresh?.close();
  }
  return [chainRow, fanRow];
}
