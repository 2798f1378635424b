/**
 * Claim latency and server memory against the size of the queue. Queues of 1,000 and 1,000,000 jobs
 * are far too slow to create over HTTP, so they are written straight into a fresh store, through the
 * Store interface (`store.tx(ops => ops.insertJobs(...))`) as bench/claim-backlog.ts does; on
 * PostgreSQL only 50 template rows go that way and the rest are copies of them made by one
 * INSERT … SELECT over generate_series (row-by-row inserts would take minutes per million). Then a
 * weft server is started on that store and claimed from over HTTP by the usual 16 loops.
 *
 * The 50 label sets are {os, size} and {os, size, gpu} for 5 operating systems x 5 sizes. Each loop
 * offers a distinct {os, size, gpu}, so it fits exactly two label sets and every claim looks at two
 * index ranges out of fifty, whatever the queue size. As in the throughput rows, an unmeasured
 * warm-up comes first (on jobs of its own, see WARMUP_LABELS).
 */
import fs from 'node:fs';
import postgres from 'postgres';
import { freshStore, freshWeft, type FreshServer, type FreshStore } from '../lib/fresh.js';
import { Loadgens, readMemory } from '../lib/procs.js';
import { emptyRow, type Row } from '../lib/report.js';
import { claimsPerLoop, type Settings, type StoreKind } from '../lib/settings.js';
import { errorMessage, now, sleep, summarize } from '../lib/util.js';
import { combine, loadgenConfigs, logTail } from './throughput.js';

const OS = ['linux', 'windows', 'macos', 'freebsd', 'illumos'];
const SIZES = ['small', 'medium', 'large', 'xlarge', 'metal'];
const WORKFLOW = 'bench-backlog';
/**
 * Warm-up jobs sit in a 51st label set that only the warm-up offers, so the warm-up neither shrinks
 * the measured queue nor leaves anything behind in it: the measurement starts on exactly `size` jobs.
 */
const WARMUP_LABELS = ['bench-warmup'];

export function labelSets(): string[][] {
  const sets: string[][] = [];
  for (const os of OS) for (const size of SIZES) sets.push([os, size], [os, size, 'gpu']);
  return sets;
}

/** Loop k of all loops offers the k-th {os, size} with gpu: distinct for up to 25 loops. */
function workerLabels(k: number): string[] {
  return [OS[k % OS.length]!, SIZES[Math.floor(k / OS.length) % SIZES.length]!, 'gpu'];
}

function fmtSize(n: number): string {
  return n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000}M` : n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

const SEED_BATCH = 20_000;

/**
 * The parts of the store layer the seeder needs, declared here rather than imported, in the two shapes
 * src/store/store.ts has: row operations inside `tx` (as committed when this was written), and the
 * domain operations (`createWorkflow`, `startRun`) of the Store refactor under way at that time. The
 * seeder picks whichever the store has, so it neither breaks the type-check nor goes stale the day
 * the refactor lands. Only the `tx` shape could be run when this was written.
 */
interface TxOps {
  insertWorkflow(rec: object): Promise<void>;
  insertRun(run: object): Promise<void>;
  ensureLabelSet(set: { key: string; labels: string[] }): Promise<void>;
  insertJobs(jobs: object[]): Promise<void>;
}
interface TxStore {
  tx<T>(fn: (ops: TxOps) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
interface RunStore {
  createWorkflow(rec: object): Promise<unknown>;
  startRun(req: {
    workflow_id: string;
    expected_hash: string;
    jobs: readonly object[];
    label_sets: ReadonlyArray<{ key: string; labels: string[] }>;
    now_ms: number;
  }): Promise<unknown>;
  close(): Promise<void>;
}
interface StoreModules {
  openStore(url: string, opts?: { sqliteSynchronous?: 'FULL' | 'NORMAL' }): Promise<unknown>;
  labelKey(labels: readonly string[]): string;
}

/**
 * Writes `size` queued jobs (and `warmup` more in the warm-up label set) into the store. The store
 * modules are imported here, not at the top, so that a half-edited src/ breaks only this section.
 */
async function seed(store: FreshStore, size: number, warmup: number): Promise<{ ms: number; method: string }> {
  const t0 = Date.now();
  const mods: StoreModules = {
    ...((await import('../../src/store/index.js')) as unknown as Pick<StoreModules, 'openStore'>),
    ...((await import('../../src/domain/labels.js')) as unknown as Pick<StoreModules, 'labelKey'>),
  };
  const sets = labelSets();
  const labelSetRows = [...sets, WARMUP_LABELS].map((labels) => ({ key: mods.labelKey(labels), labels }));
  // The seeder's own durability does not matter (the file is closed before the server opens it).
  const st = (await mods.openStore(store.url, { sqliteSynchronous: 'NORMAL' })) as Partial<TxStore & RunStore> & { close(): Promise<void> };
  const nowMs = Date.now();
  // Enqueue times are distinct and in the past, oldest first, so claim order is the insertion order.
  const base = nowMs - size - 60_000;
  const shared = { env: {}, needs: [], dependents: [], backoff: { kind: 'none' }, upstream_outputs: {} };
  const job = (i: number, warm: boolean, runNumber: boolean) => {
    const labels = warm ? WARMUP_LABELS : sets[i % sets.length]!;
    const id = warm ? `w${i}` : `j${i}`;
    const t = warm ? base - warmup + i : base + i;
    return {
      workflow_id: WORKFLOW as string, ...(runNumber ? { run_number: 1 } : { pending_needs: 0 }), job_id: id, name: id, command: 'true',
      env: shared.env, labels, label_key: mods.labelKey(labels), needs: shared.needs, dependents: shared.dependents,
      // Conditional-job fields (ignored by versions without them).
      condition: 'success', needs_results: {}, failed_upstream: false, run_cancelled: false, conditional_dependents: false,
      max_retries: 0, backoff: shared.backoff, timeout_secs: null, status: 'queued', attempt: 0, enqueued_at_ms: t,
      delayed_until_ms: 0, ready_at_ms: t, started_at_ms: null, finished_at_ms: null, deadline_ms: null, error: null,
      outputs: null, upstream_outputs: shared.upstream_outputs, worker_id: null, lease_id: null, group_id: null, matrix: null, max_parallel: null, fail_fast: false, for_each: null, item: null, item_index: null, concurrency_group: null, cancel_in_progress: false,
    };
  };
  const workflow = {
    id: WORKFLOW, name: WORKFLOW, trigger: null, source: 'api', hash: 'bench', created_at_ms: nowMs, updated_at_ms: nowMs,
    latest_run: 0, definition: { id: WORKFLOW, name: WORKFLOW, trigger: null, env: {}, jobs: [] },
  };
  try {
    if (typeof st.startRun === 'function' && typeof st.createWorkflow === 'function') {
      // Runs started through the store keep its own bookkeeping (counters of unfinished jobs) in step
      // with what is queued, which copying rows behind its back would not. One workflow per batch keeps
      // each call (and each transaction) a reasonable size, as bench/claim-backlog.ts does.
      const startRun = st.startRun.bind(st);
      const createWorkflow = st.createWorkflow.bind(st);
      const run = async (id: string, jobs: Array<ReturnType<typeof job>>) => {
        await createWorkflow({ ...workflow, id, name: id, definition: { ...workflow.definition, id, name: id } });
        for (const j of jobs) j.workflow_id = id;
        const outcome = await startRun({ workflow_id: id, expected_hash: workflow.hash, jobs, label_sets: labelSetRows, now_ms: nowMs });
        const kind = (outcome as { kind?: unknown } | null)?.kind;
        if (kind !== undefined && kind !== 'started') throw new Error(`startRun(${id}) answered ${JSON.stringify(outcome).slice(0, 300)}`);
      };
      if (warmup > 0) await run(`${WORKFLOW}-warmup`, Array.from({ length: warmup }, (_, k) => job(k, true, false)));
      for (let start = 0, w = 0; start < size; start += SEED_BATCH, w++) {
        const jobs: Array<ReturnType<typeof job>> = [];
        for (let i = start; i < Math.min(size, start + SEED_BATCH); i++) jobs.push(job(i, false, false));
        await run(`${WORKFLOW}-${w}`, jobs);
      }
      return { ms: Date.now() - t0, method: `Store.createWorkflow + Store.startRun, ${SEED_BATCH.toLocaleString('en')} jobs per run` };
    }
    if (typeof st.tx !== 'function') throw new Error('the store has neither tx() nor startRun(): update bench/scenarios/backlog.ts');
    const tx = st.tx.bind(st);
    // PostgreSQL: only the 50 templates go through the store; copyTemplates multiplies them below.
    const direct = store.kind === 'sqlite' ? size : Math.min(size, sets.length);
    await tx(async (ops) => {
      await ops.insertWorkflow({ ...workflow, latest_run: 1 });
      await ops.insertRun({ workflow_id: WORKFLOW, run_number: 1, status: 'running', created_at_ms: nowMs, finished_at_ms: null });
      for (const set of labelSetRows) await ops.ensureLabelSet(set);
      if (warmup > 0) await ops.insertJobs(Array.from({ length: warmup }, (_, k) => job(k, true, true)));
    });
    for (let start = 0; start < direct; start += SEED_BATCH) {
      const jobs: object[] = [];
      for (let i = start; i < Math.min(direct, start + SEED_BATCH); i++) jobs.push(job(i, false, true));
      await tx((ops) => ops.insertJobs(jobs));
    }
    if (direct < size) {
      await st.close();
      await copyTemplates(store.url, size, sets.length, base);
      return { ms: Date.now() - t0, method: `Store.tx/insertJobs for ${direct} template rows + INSERT … SELECT generate_series` };
    }
    return { ms: Date.now() - t0, method: 'Store.tx/insertJobs' };
  } finally {
    await st.close().catch(() => {});
  }
}

/**
 * Job i is a copy of template job i % templates with its own id and enqueue time. The column list is
 * read from the catalog so that a column added to the schema is copied too, not silently defaulted.
 */
async function copyTemplates(url: string, size: number, templates: number, base: number): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const cols = (
      await sql<{ column_name: string }[]>`
        SELECT column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'jobs'
          AND is_identity = 'NO' AND is_generated = 'NEVER' AND coalesce(column_default, '') NOT LIKE 'nextval(%'
        ORDER BY ordinal_position`
    ).map((r) => r.column_name);
    const expr = (c: string) =>
      c === 'job_id' || c === 'name'
        ? `'j' || g.i`
        : c === 'enqueued_at_ms' || c === 'ready_at_ms'
          ? `${base} + g.i`
          : `t."${c}"`;
    await sql.unsafe(
      `INSERT INTO jobs (${cols.map((c) => `"${c}"`).join(', ')})
       SELECT ${cols.map(expr).join(', ')}
       FROM generate_series(${templates}, ${size - 1}) AS g(i)
       JOIN jobs t ON t.workflow_id = '${WORKFLOW}' AND t.run_number = 1 AND t.job_id = 'j' || (g.i % ${templates})
       ORDER BY g.i`,
    );
    // Fresh statistics, as autovacuum would eventually gather: without them the planner sees an empty table.
    await sql`ANALYZE jobs`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function storeBytes(store: FreshStore): number | null {
  if (store.kind !== 'sqlite') return null;
  let total = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      total += fs.statSync(store.url + suffix).size;
    } catch {
      // -wal and -shm exist only while a connection has the file open.
    }
  }
  return total;
}

/** How many times the hotfix probe starts a run at priority 10 and claims it out of the backlog. */
const HOTFIX_CLAIMS = 50;

/**
 * README "Priorities": one job at priority 10, started after the whole backlog (priority 0) and fitting
 * the same workers, must be the next claim. Each of HOTFIX_CLAIMS rounds starts a run of it, claims
 * once over HTTP as loop 0 would, and completes what it got; the row gives that claim's latency and
 * how many claims took the hotfix rather than a backlog job.
 */
async function hotfixProbe(origin: string, row: Row): Promise<void> {
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(origin + path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`);
    return text === '' ? null : (JSON.parse(text) as unknown);
  };
  const labels = workerLabels(0);
  await call('PUT', '/api/workflows/bench-hotfix', { jobs: { fix: { run: 'true', labels, priority: 10 } } });
  const samples: number[] = [];
  let first = 0;
  for (let i = 0; i < HOTFIX_CLAIMS; i++) {
    await call('POST', '/api/workflows/bench-hotfix/run');
    const t0 = now();
    const claim = (await call('POST', '/api/jobs/claim', { worker_id: 'bench-hotfix', labels, lease_ttl_secs: 60 })) as {
      job: { workflow_id: string; job_id: string };
      lease: { lease_id: string };
    } | null;
    samples.push(now() - t0);
    if (claim === null) throw new Error('the hotfix claim found nothing');
    if (claim.job.workflow_id === 'bench-hotfix') first++;
    await call('POST', `/api/jobs/${claim.lease.lease_id}/complete`, { outputs: {} });
    // A backlog job taken instead leaves the hotfix queued: take it too, so that the next run can start.
    if (claim.job.workflow_id !== 'bench-hotfix') {
      const next = (await call('POST', '/api/jobs/claim', { worker_id: 'bench-hotfix', labels, lease_ttl_secs: 60 })) as { lease: { lease_id: string } } | null;
      if (next) await call('POST', `/api/jobs/${next.lease.lease_id}/complete`, { outputs: {} });
    }
  }
  const lat = summarize(samples);
  row.latency = { what: 'claim of a priority-10 job started after the backlog', p50_ms: lat.p50_ms, p99_ms: lat.p99_ms };
  row.summary = { claims: lat.n, hotfix_first: first };
  row.raw = [{ latency: lat, hotfix_first: first, claims: HOTFIX_CLAIMS }];
  row.note = `${first} of ${HOTFIX_CLAIMS} claims took the hotfix first`;
}

export async function backlogScenario(s: Settings, kind: StoreKind, size: number): Promise<Row[]> {
  const storeName = kind === 'sqlite' ? 'SQLite' : 'PostgreSQL';
  const row = emptyRow(`backlog.${kind}.${size}`, `backlog ${fmtSize(size)} queued · ${storeName}`, 'backlog', kind);
  const hotfix = emptyRow(`backlog.${kind}.${size}.hotfix`, `hotfix out of ${fmtSize(size)} queued · ${storeName}`, 'backlog', kind);
  let store: FreshStore | null = null;
  let fresh: FreshServer | null = null;
  let loadgens: Loadgens | null = null;
  try {
    store = await freshStore(kind);
    const loops = s.loadgenProcesses * s.loopsPerProcess;
    const warmupPerLoop = Math.ceil(s.warmupJobs / loops);
    const seeded = await seed(store, size, warmupPerLoop * loops);
    const dbBytes = storeBytes(store);
    fresh = await freshWeft(store);
    store = null; // owned by the server handle now
    const { origin, pid } = fresh.server;
    // Start-up allocations settle (and the first reaper pass runs) before the idle reading.
    await sleep(1000);
    const idle = readMemory(pid);
    const perLoop = claimsPerLoop(s, size);
    const extra = { maxClaimsPerLoop: perLoop, warmupClaimsPerLoop: warmupPerLoop, warmupLabels: [WARMUP_LABELS] };
    const configs = loadgenConfigs(s, origin, 'spec', extra, (p) =>
      Array.from({ length: s.loopsPerProcess }, (_, i) => workerLabels(p * s.loopsPerProcess + i)),
    );
    loadgens = await Loadgens.start(configs);
    const results = await loadgens.go(s.repSecs * 1000);
    const after = readMemory(pid);
    const rep = combine(results, (perLoop + warmupPerLoop) * loops);
    row.jobs_per_sec = rep.jobs_per_sec;
    row.latency = { what: 'claim round trip', p50_ms: rep.latency.p50_ms, p99_ms: rep.latency.p99_ms };
    row.summary = {
      queued: size,
      label_sets: s.backlog.labelSets,
      claims: rep.latency.n,
      seed_ms: seeded.ms,
      rss_idle_bytes: idle.rss_bytes,
      rss_after_bytes: after.rss_bytes,
      hwm_bytes: after.hwm_bytes,
      errors: rep.errors,
      timed_out: rep.timed_out,
    };
    row.raw = [
      {
        ...rep,
        seed_method: seeded.method,
        seed_ms: seeded.ms,
        sqlite_file_bytes: dbBytes,
        memory_idle: idle,
        memory_after: after,
        ...(rep.errors + rep.warmup_errors > 0 ? { server_log_tail: logTail(fresh.server) } : {}),
      },
    ];
    if (rep.latency.n < rep.expected) row.note = `only ${rep.latency.n} of ${rep.expected} claims returned a job`;
    await loadgens.close();
    loadgens = null;
    try {
      await hotfixProbe(origin, hotfix);
    } catch (err) {
      hotfix.status = 'error';
      hotfix.note = errorMessage(err);
    }
  } catch (err) {
    row.status = 'error';
    row.note = errorMessage(err);
    hotfix.status = 'skipped';
    hotfix.note = 'the backlog row failed';
  } finally {
    await loadgens?.close();
    await fresh?.close();
    await store?.remove();
  }
  return [row, hotfix];
}
