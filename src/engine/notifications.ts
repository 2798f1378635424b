/**
 * Notifications (README "Notifications", docs/architecture.md "Notifications"): when a run ends, one
 * notification per target that asked for that end is written to the store's outbox, and a deliverer
 * on every server claims the due ones, POSTs them and settles each attempt: delivered, or retried with
 * backoff for up to a day, then failed. The outbox survives restarts and crashes: a claim that a
 * crashed server held runs out and any server delivers it again, with the same delivery id.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  DEFAULT_NOTIFY_ON,
  DEFAULT_RETRY_POLICY,
  formatFor,
  MAX_FAILED_JOBS,
  nextAttemptAt,
  notifyOnOf,
  runLink,
  shortError,
  webhookSecretName,
  webhookUrlProblem,
  type NotificationPayload,
  type NotifyFormat,
  type NotifyOn,
  type NotifyTarget,
  type RetryPolicy,
} from '../domain/notify.js';
import { WeftError } from '../protocol/errors.js';
import type { NewNotification, NotificationQuery, NotificationRecord, NotificationResult, RunEnd, Store, StoreReads } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import { post, type Attempt } from './notify-delivery.js';
import { OutageWarnings } from './outage.js';
import type { Secrets } from './secrets.js';
import { SingleFlight } from '../util/single-flight.js';

/** A run that ended, as the run-end outbox hands it over (store/run-end-types.ts RunEnd). */
export type EndedRun = Pick<RunEnd, 'workflow_id' | 'run_number' | 'state' | 'ended_at_ms'>;

/** How notifications are made and delivered (README "Configuration", NOTIFY_*). */
export interface NotifySettings {
  /** NOTIFY_WEBHOOK: told of every workflow's runs that end as `on` says; null: none. */
  webhook: string | null;
  /** NOTIFY_ON: which ends NOTIFY_WEBHOOK hears of. */
  on: readonly NotifyOn[];
  /** NOTIFY_SECRET: the secret that signs what NOTIFY_WEBHOOK gets; null: unsigned. */
  secret: string | null;
  /** PUBLIC_URL, else the address the server listens on: the dashboard links point there. Null: no link. */
  publicUrl: string | null;
  /** NOTIFY_TIMEOUT_SECS in ms: one attempt's limit, connecting and answering. */
  timeoutMs: number;
  /**
   * How long a claim holds a notification: a deliverer that has not settled it by then (it crashed) has
   * it delivered again by any server. Kept well above `timeoutMs`.
   */
  claimMs: number;
  /** NOTIFY_RETRY_SECS (the first delay), doubling up to an hour, for up to a day. */
  retry: RetryPolicy;
  /** How often a deliverer looks for notifications other servers made or left, at most. */
  pollMs: number;
  /** Attempts one server makes at once. */
  concurrency: number;
  /** Delivered and failed notifications are deleted this long after they settled. */
  retainMs: number;
  userAgent: string;
  fetch: typeof fetch;
}

export const NOTIFY_DEFAULTS: NotifySettings = {
  webhook: null,
  on: DEFAULT_NOTIFY_ON,
  secret: null,
  publicUrl: null,
  timeoutMs: 10_000,
  claimMs: 25_000,
  retry: DEFAULT_RETRY_POLICY,
  pollMs: 5000,
  concurrency: 8,
  retainMs: 30 * 86_400_000,
  userAgent: 'weft',
  fetch: (...args) => globalThis.fetch(...args),
};

/** The claim needed for an attempt of `timeoutMs`: twice that and a margin for settling it. */
export function claimMsFor(timeoutMs: number): number {
  return 2 * timeoutMs + 5000;
}

/** The target key of NOTIFY_WEBHOOK (a workflow's targets are `notify[i]`). */
const SERVER_TARGET = 'server';
const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 1000;
/** The shortest wait between two passes, so that a notification due now but not claimable never spins. */
const MIN_PASS_GAP_MS = 25;

export class Notifications {
  private settings: NotifySettings;
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private readonly passes = new SingleFlight(() => this.pass(), () => this.started);
  private readonly inFlight = new Set<Promise<void>>();
  private stop = new AbortController();
  private lastPruneMs = 0;

  constructor(
    private readonly store: Store,
    private readonly secrets: Secrets,
    private readonly now: () => number,
    private readonly log: Logger,
    settings: Partial<NotifySettings> = {},
    private readonly outage = new OutageWarnings(log),
  ) {
    this.settings = { ...NOTIFY_DEFAULTS, ...settings };
    this.settings.claimMs = Math.max(this.settings.claimMs, this.settings.timeoutMs + 1000);
  }

  /** The dashboard's address, once the server knows where it listens (PUBLIC_URL wins). */
  setPublicUrl(url: string | null): void {
    if (this.settings.publicUrl === null) this.settings.publicUrl = url;
  }

  // ---------------------------------------------------------------- making notifications

  /**
   * Writes the notifications of these run ends, one per target that asked for the end, from the
   * definition each run was planned with (runs.definition_hash), so an edit after its start changes
   * nothing. Safe to call again for the same ends (a unique key per run and target); answers how many
   * were new. Then delivers them.
   */
  async record(ends: readonly EndedRun[]): Promise<number> {
    const rows: NewNotification[] = [];
    for (const end of ends) rows.push(...(await this.notificationsOf(end)));
    if (rows.length === 0) return 0;
    const created = await this.store.createNotifications(rows);
    if (created > 0) {
      this.log.info({ notifications: created, runs: ends.map((e) => `${e.workflow_id}#${e.run_number}`) }, 'notifications queued');
      this.kick();
    }
    return created;
  }

  private async notificationsOf(end: EndedRun): Promise<NewNotification[]> {
    const on = notifyOnOf(end.state);
    if (on === null) return [];
    const nowMs = this.now();
    return this.store.read(async (r) => {
      const run = await r.getRun(end.workflow_id, end.run_number);
      const wf = await r.getWorkflow(end.workflow_id);
      // Deleted since it ended: nobody is left to tell about it.
      if (!run || !wf) return [];
      const def = (run.definition_hash !== null ? await r.getRunDefinition(end.workflow_id, run.definition_hash) : null) ?? wf.definition;
      const targets: Array<{ key: string; t: NotifyTarget }> = (def.notify ?? []).map((t, i) => ({ key: `notify[${i}]`, t }));
      const server = this.serverTarget();
      if (server) targets.push({ key: SERVER_TARGET, t: server });
      const asked = targets.filter(({ t }) => t.on.includes(on));
      if (asked.length === 0) return [];
      const payload = JSON.stringify(await this.payloadOf(r, end, { name: def.name, created_at_ms: run.created_at_ms, finished_at_ms: run.finished_at_ms, trigger: run.trigger }));
      return asked.map(({ key, t }) => ({
        id: randomUUID(),
        workflow_id: end.workflow_id,
        run_number: end.run_number,
        run_status: end.state,
        target: key,
        url: t.webhook,
        secret_name: t.secret ?? null,
        format: t.format ?? null,
        payload,
        created_at_ms: nowMs,
      }));
    });
  }

  private serverTarget(): NotifyTarget | null {
    const s = this.settings;
    if (s.webhook === null) return null;
    return { on: [...s.on], webhook: s.webhook, ...(s.secret !== null ? { secret: s.secret } : {}) };
  }

  private async payloadOf(
    r: StoreReads,
    end: EndedRun,
    run: { name: string; created_at_ms: number; finished_at_ms: number | null; trigger: string | null },
  ): Promise<NotificationPayload> {
    const failed = end.state === 'failed' || end.state === 'cancelled' ? await r.failedJobsOfRun(end.workflow_id, end.run_number, MAX_FAILED_JOBS) : [];
    let total = failed.length;
    if (total === MAX_FAILED_JOBS) {
      const counts = await r.jobCountsOfRuns([{ workflow_id: end.workflow_id, run_number: end.run_number }]);
      total = counts.find((c) => c.status === 'failed')?.count ?? total;
    }
    const ended = run.finished_at_ms ?? end.ended_at_ms;
    return {
      event: 'run_ended',
      workflow_id: end.workflow_id,
      workflow_name: run.name,
      run_number: end.run_number,
      status: end.state,
      trigger: run.trigger,
      started_at: new Date(run.created_at_ms).toISOString(),
      ended_at: new Date(ended).toISOString(),
      started_at_ms: run.created_at_ms,
      ended_at_ms: ended,
      duration_ms: Math.max(0, ended - run.created_at_ms),
      failed_jobs: failed.map((j) => ({ job_id: j.job_id, name: j.name, attempts: j.attempt + 1, error: shortError(j.error) })),
      failed_jobs_total: total,
      url: runLink(this.settings.publicUrl, end.workflow_id, end.run_number),
    };
  }

  /** A page of notifications, newest first (GET /api/notifications). */
  list(q: NotificationQuery): Promise<NotificationRecord[]> {
    return this.store.read((r) => r.listNotifications(q));
  }

  // ---------------------------------------------------------------- delivering them

  /** Starts delivering: now, then whenever one is due, and at least every pollMs. */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.stop = new AbortController();
    this.kick();
  }

  /**
   * Stops delivering. Attempts under way are cut short and settled to be tried again at once (by
   * another server, or by this one when it starts again), so none is left to its claim's end.
   */
  async close(): Promise<void> {
    this.started = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stop.abort();
    await this.passes.current;
    await Promise.all([...this.inFlight]);
  }

  /** Looks for due notifications now (a run just ended here, or a peer says something changed). */
  kick(): void {
    if (!this.started) return;
    void this.passes.run();
  }

  private async pass(): Promise<void> {
    let nextDue: number | null = null;
    try {
      await this.claimAndSend();
      await this.pruneNow();
      nextDue = await this.store.read((r) => r.nextNotificationDue());
    } catch (err) {
      // The store is away (a restart): the next pass tries again.
      if (err instanceof StoreUnavailableError) this.outage.warn('notifications', err);
      else this.log.error({ err }, 'notification pass failed; the next pass tries again');
    }
    if (!this.started) return;
    const wait = nextDue === null ? this.settings.pollMs : Math.min(this.settings.pollMs, Math.max(MIN_PASS_GAP_MS, nextDue - this.now()));
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, wait);
    this.timer.unref();
  }

  private async claimAndSend(): Promise<void> {
    for (;;) {
      const free = this.settings.concurrency - this.inFlight.size;
      if (free <= 0 || !this.started) return;
      const claimed = await this.store.claimNotifications({ now_ms: this.now(), limit: free, claim_ms: this.settings.claimMs, claim_id: randomUUID() });
      for (const n of claimed) {
        const p: Promise<void> = this.attempt(n)
          .catch((err: unknown) => {
            if (err instanceof StoreUnavailableError) this.outage.warn('notifications', err);
            else this.log.error({ err, notification: n.id }, 'notification attempt could not be settled; its claim will run out and it will be tried again');
          })
          .finally(() => {
            this.inFlight.delete(p);
            this.kick();
          });
        this.inFlight.add(p);
      }
      if (claimed.length < free) return;
    }
  }

  /** One attempt of a claimed notification, settled under its claim. */
  private async attempt(n: NotificationRecord): Promise<void> {
    const target = await this.resolve(n);
    const outcome: Attempt =
      'error' in target
        ? { ok: false, error: target.error }
        : await post(
            { id: n.id, url: target.url, format: target.format, payload: n.payload, key: target.key },
            { timeoutMs: this.settings.timeoutMs, userAgent: this.settings.userAgent, fetch: this.settings.fetch, signal: this.stop.signal },
          );
    const nowMs = this.now();
    let result: NotificationResult;
    if (outcome.ok) {
      result = { kind: 'delivered' };
    } else if (this.stop.signal.aborted) {
      result = { kind: 'retry', at_ms: nowMs, error: outcome.error };
    } else {
      const at = nextAttemptAt(this.settings.retry, n.attempts, n.created_at_ms, nowMs);
      result = at === null ? { kind: 'failed', error: outcome.error } : { kind: 'retry', at_ms: at, error: outcome.error };
    }
    const settled = await this.store.settleNotification(n.id, n.claim_id!, result, nowMs);
    const fields = { notification: n.id, workflow_id: n.workflow_id, run_number: n.run_number, target: n.target, attempt: n.attempts };
    if (!settled) this.log.warn(fields, 'notification attempt ended after its claim ran out; another attempt decides');
    else if (result.kind === 'delivered') this.log.info(fields, 'notification delivered');
    else if (result.kind === 'retry') this.log.warn({ ...fields, error: result.error, next_attempt_at_ms: result.at_ms }, 'notification attempt failed; it will be tried again');
    else this.log.error({ ...fields, error: result.error }, 'notification failed for good');
  }

  /** The URL, signing key and format of an attempt, its secrets opened now (a secret set late still counts). */
  private async resolve(n: NotificationRecord): Promise<{ url: string; key: string | null; format: NotifyFormat } | { error: string }> {
    const urlSecret = webhookSecretName(n.url);
    const names = [...new Set([urlSecret, n.secret_name].filter((x): x is string => x !== null))];
    let values = new Map<string, string>();
    if (names.length > 0) {
      try {
        values = await this.secrets.valuesFor(n.workflow_id, names);
      } catch (err) {
        return { error: secretError(err, n.workflow_id) };
      }
    }
    const url = urlSecret === null ? n.url : values.get(urlSecret)!.trim();
    if (urlSecret !== null) {
      const problem = webhookUrlProblem(url);
      if (problem !== null) return { error: `the webhook URL in secret ${urlSecret} ${problem}` };
    }
    return { url, key: n.secret_name === null ? null : values.get(n.secret_name)!, format: formatFor(url, n.format as NotifyFormat | null) };
  }

  private async pruneNow(): Promise<void> {
    const nowMs = this.now();
    if (nowMs - this.lastPruneMs < PRUNE_EVERY_MS) return;
    this.lastPruneMs = nowMs;
    const pruned = await this.store.pruneNotifications(nowMs - this.settings.retainMs, PRUNE_BATCH);
    if (pruned > 0) this.log.info({ notifications: pruned }, 'old notifications deleted');
  }
}

/** A secret that is missing or does not open, said for the notification list; never a value. */
function secretError(err: unknown, workflowId: string): string {
  if (err instanceof WeftError && err.code === 'secret_missing') {
    const name = /secret (\w+)/.exec(err.message)?.[1] ?? '';
    return `secret ${name} is not set: set it with \`weft secret set ${name}\` (or --workflow ${workflowId}); the notification is tried again`;
  }
  return err instanceof Error ? err.message : String(err);
}
