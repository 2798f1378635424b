/**
 * A load-generator child process (forked by bench/run.ts). It runs `loops` worker loops against one
 * server through a single undici Pool with one keep-alive connection per loop, so that connection
 * setup is paid before the measurement and never inside it. Protocol: parent sends `start`, the child
 * registers its workers (which also opens the connections) and answers `ready`; parent sends `go` to
 * every child at once; the child answers `result` when its loops end (`dag` loops end on `stop`).
 */
import { setMaxListeners } from 'node:events';
import { Pool } from 'undici';
import type { DagEvent, FromChild, LoadgenConfig, LoadgenResult, ToChild } from './lib/protocol.js';
import { errorMessage, now, sleep } from './lib/util.js';

const MAX_ERRORS = 50;
const HARD_STOP_AFTER_DEADLINE_MS = 30_000;
const WARMUP_MAX_MS = 60_000;
const JSON_HEADERS = { 'content-type': 'application/json' };
const COMPLETE_BODY = JSON.stringify({ outputs: {} });

function send(msg: FromChild): void {
  process.send?.(msg);
}

interface Answer {
  status: number;
  text: string;
}

interface Phase {
  deadlineAt: number;
  quota: number;
  labels: string[][];
  /** A warm-up claims and completes as the spec loop does, whatever the mode (no long poll to wait out). */
  warmup?: boolean;
}

class Generator {
  private readonly pool: Pool;
  private readonly abort = new AbortController();
  private stopped = false;
  private res: LoadgenResult = Generator.freshResult();
  /** The current phase (warm-up or measurement): its time budget, claims per loop, and labels offered. */
  private phase: Phase;
  private pendingEvents: DagEvent[] = [];
  private flushScheduled = false;

  constructor(private readonly cfg: LoadgenConfig) {
    this.phase = { deadlineAt: 0, quota: Infinity, labels: cfg.labels };
    // Every in-flight request (and its body) listens on the one stop signal; more than 10 is normal here.
    setMaxListeners(1000, this.abort.signal);
    this.pool = new Pool(cfg.origin, {
      connections: cfg.loops,
      pipelining: 1,
      // Long enough for a long-poll plus slack, and for idle gaps between phases of a scenario.
      keepAliveTimeout: 120_000,
      keepAliveMaxTimeout: 120_000,
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
  }

  workerId(i: number): string {
    return `${this.cfg.workerPrefix}-${i}`;
  }

  labels(i: number): string[] {
    const sets = this.phase.labels;
    return sets[i % sets.length] ?? [];
  }

  async post(path: string, body: string): Promise<Answer> {
    this.res.requests++;
    const r = await this.pool.request({ path, method: 'POST', headers: JSON_HEADERS, body, signal: this.abort.signal });
    return { status: r.statusCode, text: await r.body.text() };
  }

  /** Registration happens concurrently so that the pool opens all its connections before `go`. */
  async register(): Promise<void> {
    await Promise.all(
      Array.from({ length: this.cfg.loops }, async (_, i) => {
        const a = await this.post('/api/workers/register', JSON.stringify({ worker_id: this.workerId(i), labels: this.labels(i) }));
        if (a.status !== 200) throw new Error(`register answered ${a.status}: ${a.text.slice(0, 300)}`);
      }),
    );
  }

  error(what: string): void {
    this.res.errors++;
    if (this.res.errorSamples.length < 10) this.res.errorSamples.push(what.slice(0, 400));
    // A broken server would otherwise turn every loop into a tight error loop for the whole deadline.
    if (this.res.errors >= MAX_ERRORS) this.stop();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
  }

  static freshResult(): LoadgenResult {
    return {
      completed: 0, claimed: 0, nullClaims: 0, requests: 0, errors: 0, errorSamples: [], timedOut: false,
      firstClaimAt: null, lastCompleteAt: null, latencies: [],
    };
  }

  /** Past the deadline a loop finishes its current job and ends; nothing in flight is cut. */
  private running(): boolean {
    if (this.stopped) return false;
    if (now() > this.phase.deadlineAt) {
      this.res.timedOut = true;
      return false;
    }
    return true;
  }

  private markClaimSent(t: number): void {
    if (this.res.firstClaimAt === null || t < this.res.firstClaimAt) this.res.firstClaimAt = t;
  }

  private markCompleted(t: number, jobs: number): void {
    this.res.completed += jobs;
    if (this.res.lastCompleteAt === null || t > this.res.lastCompleteAt) this.res.lastCompleteAt = t;
  }

  /**
   * Unrecorded cycles of the same kind before `ready`, so that the measurement starts with JIT-compiled
   * code in the server and here, and with the server's lazy set-up (prepared statements, route
   * compilation) done. Its errors are kept; everything else it measured is dropped.
   */
  async warmup(): Promise<void> {
    const perLoop = this.cfg.warmupClaimsPerLoop ?? 0;
    if (perLoop <= 0) return;
    await this.runLoops({ deadlineAt: now() + WARMUP_MAX_MS, quota: perLoop, labels: this.cfg.warmupLabels ?? this.cfg.labels, warmup: true });
    const { errors, errorSamples, completed } = this.res;
    this.res = Generator.freshResult();
    this.res.warmupCompleted = completed;
    this.res.warmupErrors = errors;
    if (errors) this.res.errorSamples = errorSamples.map((e) => `warm-up: ${e}`);
  }

  async run(deadlineAt: number): Promise<LoadgenResult> {
    return this.runLoops({ deadlineAt, quota: this.cfg.maxClaimsPerLoop ?? Infinity, labels: this.cfg.labels });
  }

  private async runLoops(phase: Phase): Promise<LoadgenResult> {
    this.phase = phase;
    const loops = Array.from({ length: this.cfg.loops }, (_, i) => {
      const mode = phase.warmup && this.cfg.mode === 'dag' ? 'spec' : this.cfg.mode;
      const body = mode === 'spec' ? this.specLoop(i) : mode === 'batch' ? this.batchLoop(i) : this.dagLoop(i);
      return body.catch((err: unknown) => {
        if (!this.stopped) this.error(`loop ${i}: ${errorMessage(err)}`);
      });
    });
    // Only a server that stops answering gets here: requests still open this long after the deadline are aborted.
    const timer = setTimeout(() => {
      this.res.timedOut = true;
      this.stop();
    }, Math.max(0, phase.deadlineAt - now()) + HARD_STOP_AFTER_DEADLINE_MS);
    await Promise.all(loops);
    clearTimeout(timer);
    this.flushEvents();
    return this.res;
  }

  async close(): Promise<void> {
    await this.pool.destroy().catch(() => {});
  }

  private async specLoop(i: number): Promise<void> {
    const claimBody = JSON.stringify({ worker_id: this.workerId(i), labels: this.labels(i), lease_ttl_secs: this.cfg.leaseTtlSecs });
    const max = this.phase.quota;
    for (let n = 0; n < max && this.running(); ) {
      const t0 = now();
      this.markClaimSent(t0);
      const a = await this.post('/api/jobs/claim', claimBody);
      const t1 = now();
      if (a.status !== 200) {
        this.error(`claim answered ${a.status}: ${a.text}`);
        await sleep(10);
        continue;
      }
      const doc = JSON.parse(a.text) as { lease: { lease_id: string } } | null;
      if (doc === null) {
        // Every job is queued before `go`, so an empty answer means the queue is drained.
        this.res.nullClaims++;
        return;
      }
      n++;
      this.res.claimed++;
      this.res.latencies.push(t1 - t0);
      const c = await this.post(`/api/jobs/${encodeURIComponent(doc.lease.lease_id)}/complete`, COMPLETE_BODY);
      if (c.status !== 200) this.error(`complete answered ${c.status}: ${c.text}`);
      else this.markCompleted(now(), 1);
    }
  }

  private async batchLoop(i: number): Promise<void> {
    const claim = {
      worker_id: this.workerId(i),
      labels: this.labels(i),
      lease_ttl_secs: this.cfg.leaseTtlSecs,
      max_jobs: this.cfg.batchMaxJobs ?? 10,
      // Throughput runs start with every job queued: waiting would only add a tail at the end.
      wait_secs: 0,
    };
    this.res.claimsPerRequest ??= [];
    let held: string[] = [];
    let first = true;
    let claimedHere = 0;
    while (this.running()) {
      const t0 = now();
      this.markClaimSent(t0);
      const a = first
        ? await this.post('/api/jobs/claim-batch', JSON.stringify(claim))
        : await this.post(
            '/api/jobs/report-batch',
            JSON.stringify({ reports: held.map((lease_id) => ({ lease_id, outcome: 'complete', outputs: {} })), claim }),
          );
      const t1 = now();
      if (a.status !== 200) {
        this.error(`${first ? 'claim-batch' : 'report-batch'} answered ${a.status}: ${a.text}`);
        // The reports' fate is unknown; dropping them keeps the loop bounded (the count shows the loss).
        held = [];
        first = true;
        await sleep(10);
        continue;
      }
      const doc = JSON.parse(a.text) as { results?: unknown[]; claims?: Array<{ lease: { lease_id: string } }> };
      if (!first) {
        const results = Array.isArray(doc.results) ? doc.results : [];
        // The result shape is not settled yet: `ok: false`, a non-null `error` or an HTTP-like status >= 400 count as refused.
        const refused = results.filter((r) => {
          if (typeof r !== 'object' || r === null) return false;
          const x = r as { ok?: unknown; error?: unknown; status?: unknown };
          return x.ok === false || (x.error !== undefined && x.error !== null) || (typeof x.status === 'number' && x.status >= 400);
        });
        for (const r of refused.slice(0, 3)) this.error(`report refused: ${JSON.stringify(r)}`);
        if (results.length !== held.length) this.error(`report-batch: ${held.length} reports, ${results.length} results`);
        this.markCompleted(t1, held.length - refused.length);
      }
      first = false;
      const claims = Array.isArray(doc.claims) ? doc.claims : [];
      this.res.latencies.push(t1 - t0);
      this.res.claimsPerRequest.push(claims.length);
      this.res.claimed += claims.length;
      held = claims.map((c) => c.lease.lease_id);
      claimedHere += held.length;
      if (held.length === 0) {
        this.res.nullClaims++;
        return;
      }
      if (claimedHere >= this.phase.quota) break;
    }
    // Leaving at the quota or the deadline: hand back what is held one by one, so no lease is left to
    // expire and re-queue its job in the middle of a later measurement.
    for (const lease of held) {
      const c = await this.post(`/api/jobs/${encodeURIComponent(lease)}/complete`, COMPLETE_BODY);
      if (c.status !== 200) this.error(`complete answered ${c.status}: ${c.text}`);
      else this.markCompleted(now(), 1);
    }
  }

  private async dagLoop(i: number): Promise<void> {
    const body: Record<string, unknown> = { worker_id: this.workerId(i), labels: this.labels(i), lease_ttl_secs: this.cfg.leaseTtlSecs };
    if (this.cfg.longPollSecs) body.wait_secs = this.cfg.longPollSecs;
    const claimBody = JSON.stringify(body);
    const pause = this.cfg.pollPauseMs ?? 2;
    while (this.running()) {
      const t0 = now();
      let a: Answer;
      try {
        a = await this.post('/api/jobs/claim', claimBody);
      } catch (err) {
        if (this.stopped) return;
        throw err;
      }
      const t1 = now();
      if (a.status !== 200) {
        this.error(`claim answered ${a.status}: ${a.text}`);
        await sleep(10);
        continue;
      }
      const doc = JSON.parse(a.text) as { job: { workflow_id: string; job_id: string }; lease: { lease_id: string } } | null;
      if (doc === null) {
        this.res.nullClaims++;
        // A long-poll that comes back empty at once (the server shutting down, say) must not become a busy loop.
        if (!this.cfg.longPollSecs || t1 - t0 < 100) await sleep(pause);
        continue;
      }
      this.res.claimed++;
      this.res.latencies.push(t1 - t0);
      const { workflow_id, job_id } = doc.job;
      this.event({ kind: 'claim', workflow_id, job_id, sent_at: t0, answered_at: t1 });
      const t2 = now();
      const c = await this.post(`/api/jobs/${encodeURIComponent(doc.lease.lease_id)}/complete`, COMPLETE_BODY);
      const t3 = now();
      if (c.status !== 200) {
        this.error(`complete answered ${c.status}: ${c.text}`);
        continue;
      }
      this.markCompleted(t3, 1);
      const done = JSON.parse(c.text) as { enqueued?: unknown };
      const enqueued = Array.isArray(done.enqueued) ? done.enqueued.filter((x): x is string => typeof x === 'string') : undefined;
      this.event({ kind: 'complete', workflow_id, job_id, sent_at: t2, answered_at: t3, ...(enqueued ? { enqueued } : {}) });
    }
  }

  /** Events go out once per event-loop turn: the orchestrator needs them promptly to see a DAG finish. */
  private event(e: DagEvent): void {
    this.pendingEvents.push(e);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flushEvents());
  }

  private flushEvents(): void {
    this.flushScheduled = false;
    if (this.pendingEvents.length === 0) return;
    send({ type: 'events', events: this.pendingEvents });
    this.pendingEvents = [];
  }
}

let gen: Generator | null = null;
let finished = false;

function fatal(err: unknown): void {
  send({ type: 'fatal', message: errorMessage(err) });
  void gen?.close().finally(() => process.exit(1));
  setTimeout(() => process.exit(1), 2000).unref();
}

// The orchestrator owns this process: if it goes away, nothing would ever stop the loops.
process.on('disconnect', () => process.exit(finished ? 0 : 1));

process.on('message', (msg: ToChild) => {
  if (msg.type === 'start') {
    gen = new Generator(msg.config);
    const g = gen;
    g.register()
      .then(() => g.warmup())
      .then(() => send({ type: 'ready' }), fatal);
  } else if (msg.type === 'go') {
    const g = gen;
    if (!g) return fatal(new Error('go before start'));
    g.run(msg.deadlineAt).then(
      (result) => {
        finished = true;
        send({ type: 'result', result });
        void g.close();
      },
      fatal,
    );
  } else if (msg.type === 'stop') {
    gen?.stop();
  }
});
