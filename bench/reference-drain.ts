/**
 * A reference-queue child process (forked by bench/scenarios/reference.ts): it drains N no-op jobs
 * through graphile-worker or pg-boss on one database, so that weft's rows can be read against
 * established PostgreSQL queues measured in the same run (bench/README.md "Reference queues").
 * Protocol: parent sends `start`; the child creates the library's schema and enqueues the N jobs in
 * bulk, then answers `ready`; on `go` it starts the library's worker with concurrency 16 and answers
 * `result` once every job is recorded complete in the database (or the time budget ran out); on
 * `stop` it shuts the worker down and exits. The parent samples PostgreSQL's backend CPU between
 * `go` and `result`.
 */
import { Logger, makeWorkerUtils, run, type Runner } from 'graphile-worker';
import PgBoss from 'pg-boss';
import postgres from 'postgres';
import type { RefConfig, RefFromChild, RefResult, RefToChild } from './lib/ref-protocol.js';
import { errorMessage, now, sleep } from './lib/util.js';

/** How often the end of a drain is polled for, once every job has run; it bounds the end time's error. */
const END_POLL_MS = 5;
const PGBOSS_QUEUE = 'bench_noop';
const GRAPHILE_TASK = 'bench_noop';

function send(msg: RefFromChild): void {
  process.send?.(msg);
}

// A silent logger: graphile-worker logs every completed job at info level by default, and weft's
// servers are measured with request logging off (bench/README.md), so neither side pays for logs.
const quietLogger = new Logger(() => () => {});

interface Drainer {
  /** Starts the library's workers; `onJob` is called as each job's handler runs. */
  go(onJob: () => void): Promise<void>;
  /** SQL counting the jobs not yet recorded complete. */
  remainingSql: string;
  stop(): Promise<void>;
}

async function graphile(cfg: RefConfig): Promise<Drainer> {
  const utils = await makeWorkerUtils({ connectionString: cfg.url, logger: quietLogger });
  try {
    await utils.migrate();
    // One addJobs call: the bulk path graphile-worker documents for queueing many jobs at once.
    await utils.addJobs(Array.from({ length: cfg.jobs }, () => ({ identifier: GRAPHILE_TASK, payload: {} })));
  } finally {
    await utils.release();
  }
  let runner: Runner | null = null;
  // Its documentation ("Performance") compares exactly these two presets: batching off (the
  // defaults) and batching on (a local queue of 500 and complete/fail batching with delay 0), both
  // with a pool of concurrency + 1 connections.
  const batching = cfg.kind === 'graphile-batched'
    ? { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    : { localQueue: { size: -1 }, completeJobBatchDelay: -1, failJobBatchDelay: -1 };
  return {
    async go(onJob) {
      runner = await run({
        connectionString: cfg.url,
        concurrency: cfg.concurrency,
        maxPoolSize: cfg.concurrency + 1,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: { [GRAPHILE_TASK]: async () => onJob() },
        preset: { worker: batching },
      });
    },
    // Completed jobs are deleted from the jobs table.
    remainingSql: 'SELECT count(*)::int AS n FROM graphile_worker._private_jobs',
    async stop() {
      await runner?.stop();
    },
  };
}

async function pgboss(cfg: RefConfig): Promise<Drainer> {
  // schedule off: the cron and clock-skew monitors have nothing to do here; maintenance stays on as
  // a deployment would run it.
  const boss = new PgBoss({ connectionString: cfg.url, schedule: false });
  boss.on('error', (err) => process.stderr.write(`pg-boss: ${errorMessage(err)}\n`));
  await boss.start();
  await boss.createQueue(PGBOSS_QUEUE);
  // insert(): pg-boss's bulk path (one statement for the whole array).
  await boss.insert(Array.from({ length: cfg.jobs }, () => ({ name: PGBOSS_QUEUE, data: {} })));
  return {
    async go(onJob) {
      // Concurrency in pg-boss 10 is the number of work() registrations (each one a fetch loop);
      // batchSize is how many jobs one fetch takes and one handler call receives, completed together
      // when it returns. 0.5 s is the shortest polling interval pg-boss accepts; a loop that found
      // jobs still waits out the rest of that interval before its next fetch.
      for (let i = 0; i < cfg.concurrency; i++) {
        await boss.work(PGBOSS_QUEUE, { batchSize: cfg.pgbossBatchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
          for (let j = 0; j < jobs.length; j++) onJob();
        });
      }
    },
    remainingSql: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${PGBOSS_QUEUE}' AND state <> 'completed'`,
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 10_000 });
    },
  };
}

async function main(cfg: RefConfig): Promise<void> {
  const t0 = now();
  const drainer = cfg.kind === 'pgboss' ? await pgboss(cfg) : await graphile(cfg);
  // A connection of the bench's own for the end-of-drain poll; the parent leaves its backend out of
  // the CPU figure.
  const sql = postgres(cfg.url, { max: 1, onnotice: () => {} });
  const [{ pid }] = (await sql`SELECT pg_backend_pid() AS pid`) as unknown as [{ pid: number }];
  const remaining = async () => ((await sql.unsafe(drainer.remainingSql)) as unknown as [{ n: number }])[0].n;
  const queued = await remaining();
  if (queued !== cfg.jobs) throw new Error(`${queued} jobs queued after seeding, expected ${cfg.jobs}`);
  send({ type: 'ready', seedMs: now() - t0, pollBackendPid: pid });

  const go = await new Promise<Extract<RefToChild, { type: 'go' }>>((resolve) => {
    process.on('message', (msg: RefToChild) => msg.type === 'go' && resolve(msg));
  });
  let executed = 0;
  let firstStartAt: number | null = null;
  let lastJobAt = 0;
  let maxGapMs = 0;
  let allRan: () => void = () => {};
  const ranAll = new Promise<void>((resolve) => (allRan = resolve));
  await drainer.go(() => {
    const t = now();
    firstStartAt ??= t;
    if (executed > 0) maxGapMs = Math.max(maxGapMs, t - lastJobAt);
    lastJobAt = t;
    if (++executed >= cfg.jobs) allRan();
  });
  let timedOut = false;
  const budget = setTimeout(() => {
    timedOut = true;
    allRan();
  }, Math.max(0, go.deadlineAt - now()));
  await ranAll;
  clearTimeout(budget);
  // Both libraries mark jobs complete after the handler returns, asynchronously; the drain ends
  // when the database says so, not when the last handler ran.
  let left = await remaining();
  while (left > 0 && !timedOut && now() < go.deadlineAt) {
    await sleep(END_POLL_MS);
    left = await remaining();
  }
  const lastCompleteAt = now();
  const result: RefResult = {
    completed: cfg.jobs - left,
    executed,
    maxGapMs,
    firstStartAt,
    lastCompleteAt,
    timedOut: timedOut || left > 0,
  };
  send({ type: 'result', result });
  await new Promise<void>((resolve) => process.on('message', (msg: RefToChild) => msg.type === 'stop' && resolve()));
  await sql.end({ timeout: 1 }).catch(() => {});
  await drainer.stop();
}

process.once('message', (msg: RefToChild) => {
  if (msg.type !== 'start') return;
  main(msg.config).then(
    () => process.exit(0),
    (err: unknown) => {
      send({ type: 'fatal', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    },
  );
});
// The parent going away (a crash, Ctrl-C) ends this child too.
process.on('disconnect', () => process.exit(0));
