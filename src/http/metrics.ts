import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { labelsOfKey } from '../domain/labels.js';
import { CALL_LABEL_KEY } from '../domain/calls.js';
import type { AttemptEvent, Engine } from '../engine/engine.js';

/**
 * The series of GET /metrics (README "Metrics"). Every app has a registry of its own, so that several
 * servers in one process (the tests) keep their counts apart; the Node and process series are shared,
 * since they describe the process whichever app is asked.
 */
export interface AppMetrics {
  registry: Registry;
  /** A server-sent-events stream of this kind opened or ended (the `weft_sse_streams` gauge). */
  streams(kind: 'logs' | 'events'): StreamCounter;
}

export interface StreamCounter {
  opened(): void;
  closed(): void;
}

const SECONDS = {
  job: [0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 7200, 21600],
  wait: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
  http: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  commit: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
};

let processRegistry: Registry | null = null;

/**
 * prom-client's default series (event-loop delay, CPU, memory, handles, GC), set up once per process:
 * each setup starts an event-loop monitor and a GC observer that are never stopped.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * Defines the app's series and wires them to what feeds them: the engine's attempt events, the
 * store's commit times, every answered request (onResponse), and, at scrape time only, the job counts
 * and waiting claims.
 */
export function appMetrics(app: FastifyInstance, engine: Engine, log: Logger): AppMetrics {
  const own = new Registry();
  const registers = [own];
  const counter = (name: string, help: string) => new Counter({ name, help, registers });

  const claims = counter('weft_job_claims_total', 'Attempts started: jobs handed to a worker with a lease.');
  const completions = counter('weft_job_completions_total', 'Attempts a worker reported successful.');
  const failures = counter('weft_job_failures_total', 'Attempts a worker reported failed.');
  const retries = counter('weft_job_retries_total', 'Ended attempts (reported failed, lease expired, timed out) whose job was queued again.');
  const expiries = counter('weft_lease_expiries_total', 'Attempts ended because their lease ran out, found by the reaper or a call on the lease.');
  const timeouts = counter('weft_job_timeouts_total', 'Attempts ended because they outlived timeout_secs, found by the reaper or a call on the lease.');
  const duration = new Histogram({
    name: 'weft_job_duration_seconds',
    help: 'Attempts a worker reported, from claim to report.',
    labelNames: ['outcome'],
    buckets: SECONDS.job,
    registers,
  });
  const wait = new Histogram({
    name: 'weft_job_queue_wait_seconds',
    help: 'From a job becoming claimable (queued, or its retry backoff over) to its claim.',
    buckets: SECONDS.wait,
    registers,
  });
  const http = new Histogram({
    name: 'weft_http_request_duration_seconds',
    help: 'HTTP requests by method, route pattern and status code, from arrival to the answer sent.',
    labelNames: ['method', 'route', 'status_code'],
    buckets: SECONDS.http,
    registers,
  });
  const commits = new Histogram({
    name: 'weft_store_commit_duration_seconds',
    help: 'Durable writes of the store: each SQLite group commit, each PostgreSQL write transaction or statement.',
    buckets: SECONDS.commit,
    registers,
  });
  const streams = new Gauge({
    name: 'weft_sse_streams',
    help: 'Server-sent-event streams open: live logs (stream="logs") and live workflow events (stream="events").',
    labelNames: ['stream'],
    registers,
  });
  // Both kinds listed from the start, at 0.
  streams.set({ stream: 'logs' }, 0);
  streams.set({ stream: 'events' }, 0);
  new Gauge({
    name: 'weft_claim_waiters',
    help: 'Long-poll claims waiting for a job.',
    registers,
    collect() {
      this.set(engine.waitingClaims);
    },
  });
  jobsGauge(registers, engine, log);

  const onAttempt = (e: AttemptEvent) => {
    switch (e.kind) {
      case 'claimed':
        claims.inc();
        wait.observe(Math.max(0, e.job.started_at_ms! - e.job.ready_at_ms) / 1000);
        return;
      case 'completed':
        completions.inc();
        duration.observe({ outcome: 'success' }, (e.job.finished_at_ms! - e.job.started_at_ms!) / 1000);
        return;
      case 'failed':
        failures.inc();
        duration.observe({ outcome: 'failure' }, (e.at_ms - e.started_at_ms) / 1000);
        break;
      case 'expired':
        expiries.inc();
        break;
      case 'timed_out':
        timeouts.inc();
        break;
    }
    if (e.job.status === 'queued') retries.inc();
  };
  engine.events.on('attempt', onAttempt);
  engine.onStoreCommit((seconds) => commits.observe(seconds));
  // The pattern, never the URL: ids in paths would make a series per job and lease.
  app.addHook('onResponse', async (req, reply) => {
    http.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
  app.addHook('onClose', async () => {
    engine.events.off('attempt', onAttempt);
    engine.onStoreCommit(() => {});
  });

  return {
    registry: Registry.merge([own, processMetrics()]),
    streams: (kind) => ({ opened: () => streams.inc({ stream: kind }), closed: () => streams.dec({ stream: kind }) }),
  };
}

/**
 * `weft_jobs{state, labels}`: queued, running and awaiting-approval jobs per label set, read from the store at scrape
 * time in one grouped query. A label set seen once stays listed (at 0) rather than vanishing, so a
 * queue that drains reads as 0, not as a gap.
 */
function jobsGauge(registers: Registry[], engine: Engine, log: Logger): void {
  const seen = new Set<string>();
  const gauge = new Gauge({
    name: 'weft_jobs',
    help: 'Jobs queued (backoff-held ones included), running and awaiting approval, by state and required labels (sorted, comma-joined).',
    labelNames: ['state', 'labels'],
    registers,
    async collect() {
      let rows;
      try {
        rows = await engine.activeJobCounts();
      } catch (err) {
        // The other series are still worth serving; these are left out of this scrape.
        log.warn({ err }, 'metrics: job counts unavailable');
        gauge.reset();
        seen.clear();
        return;
      }
      for (const key of seen) gauge.set(JSON.parse(key) as { state: string; labels: string }, 0);
      for (const r of rows) {
        // A queued job that calls a workflow waits for no worker (README "Workflows calling workflows").
        if (r.label_key === CALL_LABEL_KEY) continue;
        const labels = { state: r.status, labels: labelsOfKey(r.label_key).join(',') };
        seen.add(JSON.stringify(labels));
        gauge.set(labels, r.count);
      }
    },
  });
}
