/**
 * Runs started from outside (README "Triggers and notifications"): a signed webhook delivery, a named
 * event, and (follow.ts) the end of a followed run. Each becomes a run start with the event as the
 * run's payload, made once per delivery by the delivery key the store records with the run. Claims of
 * a run's jobs carry its payload (`event`), which `weft worker` writes to the file WEFT_EVENT_PATH names.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { cleanPayload, deliveryKey, DELIVERY_ID, EVENT_NAME, EVENT_NAME_ENV, filterRefusal, MAX_EVENT_BYTES } from '../domain/triggers.js';
import { signatureMatches } from '../domain/webhooks.js';
import { WeftError } from '../protocol/errors.js';
import type { ClaimResult, EventAnswer, HookAnswer } from '../protocol/wire.js';
import type { RunKey, Store, WorkflowRecord } from '../store/store.js';
import type { Begun, StartedFrom, StartEvent } from './run-start.js';
import type { Secrets } from './secrets.js';
import { workflowNotFound } from './reads.js';

/** A webhook delivery as it arrived: the exact bytes (what the signature covers) and the headers read. */
export interface HookDelivery {
  body: Buffer;
  /** GitHub's two content types: the payload as the body, or as the `payload` field of a form. */
  form: boolean;
  /** X-Hub-Signature-256. */
  signature: string | undefined;
  /** X-GitHub-Event (or X-Weft-Event): the event's name; absent: `webhook`. */
  event: string | undefined;
  /** X-GitHub-Delivery (or X-Weft-Delivery). */
  delivery: string | undefined;
}

/** What the engine starts a run with; the check runs on the workflow read for the start (a listener that stopped listening is skipped). */
export type StartFrom = (id: string, from: StartedFrom, check?: (wf: WorkflowRecord) => void) => Promise<Begun>;

/** Thrown by a start's check: the workflow no longer listens (its definition changed since the index was read). */
export class NotListening extends Error {}

/**
 * The one answer to every refused delivery (README "Webhooks"): an unknown workflow, one without a
 * webhook, a secret not set and a wrong signature read alike, so that probing ids tells nothing.
 */
const REFUSED =
  'the delivery is not signed for this hook: X-Hub-Signature-256 must be sha256=<HMAC-SHA256 of the body under the secret on.webhook names> (README "Webhooks")';

/** Parsed payloads kept for claims of a run's jobs, by run; a run's event never changes. */
const PAYLOAD_CACHE_BYTES = 16 * 1024 * 1024;

export class Triggers {
  /** Signs nothing: the HMAC a refusal computes when there is no secret to compute it with, so it takes as long. */
  private readonly decoy = randomBytes(32);
  private readonly payloads = new Map<string, { payload: unknown; bytes: number }>();
  private payloadBytes = 0;

  constructor(
    private readonly deps: { store: Store; secrets: Secrets; log: Logger; start: StartFrom },
  ) {}

  /**
   * A delivery to POST /api/hooks/{id}. Nothing of the body is read before its signature is checked
   * against the secret the workflow's on.webhook names (its own, else the global one). A delivery id
   * seen before answers the run it started then (`duplicate`).
   */
  async webhook(workflowId: string, d: HookDelivery): Promise<{ answer: HookAnswer; status: 200 | 202 }> {
    const wf = await this.deps.store.read((r) => r.getWorkflow(workflowId));
    const hook = wf?.definition.triggers?.webhook;
    // The same reads and the same HMAC whether the workflow exists or not (README "Webhooks").
    const key = await this.deps.secrets.valueFor(workflowId, hook?.secret ?? 'WEBHOOK_SECRET');
    const signed = signatureMatches(d.signature, key.value ?? this.decoy, d.body);
    if (!wf || !hook || key.value === null || !signed) {
      const why = !wf ? 'no such workflow' : !hook ? 'the workflow has no on.webhook' : key.value === null ? key.why : d.signature ? 'the signature does not match' : 'no X-Hub-Signature-256';
      // Said to the operator only (a hook that exists but refuses is worth a warning); the caller gets REFUSED whatever the reason.
      if (wf && hook) this.deps.log.warn({ workflow_id: workflowId, reason: why }, 'webhook delivery refused');
      else this.deps.log.info({ workflow_id: workflowId, reason: why }, 'webhook delivery refused');
      throw new WeftError('invalid_signature', REFUSED);
    }
    const name = d.event ?? 'webhook';
    if (!EVENT_NAME.test(name)) throw new WeftError('invalid_request', `X-GitHub-Event must be an event name (1 to 128 of A-Z a-z 0-9 _ . -), got ${JSON.stringify(name.slice(0, 140))}`);
    const delivery = d.delivery === undefined ? null : checkedDelivery(d.delivery, 'X-GitHub-Delivery');
    const { payload, text } = deliveredPayload(d.body, d.form);
    const skip = (reason: string) => ({ answer: { workflow_id: workflowId, started: false, duplicate: false, reason }, status: 202 as const });
    // GitHub pings a hook once when it is created: answered, never a run.
    if (name === 'ping') return skip('ping: the hook is set up; nothing to run');
    if (hook.events && !hook.events.includes(name)) return skip(`event "${name}" is not among on.webhook.events (${hook.events.join(', ')})`);
    const refusal = filterRefusal(hook.filters, payload);
    if (refusal !== null) return skip(refusal);
    const begun = await this.deps.start(workflowId, {
      trigger: 'webhook',
      event: { name, payload, text },
      delivery_key: delivery === null ? null : deliveryKey.webhook(delivery),
    });
    this.deps.log.info({ workflow_id: workflowId, run_number: begun.run.run_number, event: name, delivery, duplicate: begun.duplicate }, 'webhook delivery');
    return {
      answer: { workflow_id: workflowId, started: !begun.duplicate, duplicate: begun.duplicate, run_number: begun.run.run_number, status: begun.run.status },
      status: begun.duplicate ? 200 : 202,
    };
  }

  /**
   * A named event (POST /api/events/{name}): a run of every workflow listening, found through the
   * listener index, each with the payload as its event. A workflow whose start is refused (an active
   * run, a secret not set) is listed with the error its own start would answer; the others start.
   */
  async event(name: string, payload: unknown, delivery: string | null): Promise<EventAnswer> {
    if (!EVENT_NAME.test(name)) throw new WeftError('invalid_request', `params/name must be an event name (1 to 128 of A-Z a-z 0-9 _ . -)`);
    const event: StartEvent = { name, ...keptPayload(payload) };
    const listeners = await this.deps.store.read((r) => r.listeners('event', name));
    const answer: EventAnswer = { event: name, runs: [], refused: [] };
    for (const id of listeners) {
      try {
        const begun = await this.deps.start(
          id,
          { trigger: 'event', event, delivery_key: delivery === null ? null : deliveryKey.event(name, delivery) },
          (wf) => {
            if (!wf.definition.triggers?.events?.includes(name)) throw new NotListening();
          },
        );
        answer.runs.push({ workflow_id: id, run_number: begun.run.run_number, status: begun.run.status, duplicate: begun.duplicate });
      } catch (err) {
        // Its definition changed, or it was deleted, since the index was read: it no longer listens.
        if (err instanceof NotListening || (err instanceof WeftError && err.code === 'workflow_not_found')) continue;
        if (!(err instanceof WeftError)) throw err;
        // The others still start: each workflow's start stands alone, as if started by hand.
        answer.refused.push({ workflow_id: id, error: err.code, message: err.message });
      }
    }
    this.deps.log.info({ event: name, delivery, started: answer.runs.map((r) => `${r.workflow_id}#${r.run_number}`), refused: answer.refused.map((r) => r.workflow_id) }, 'event');
    return answer;
  }

  /** The event run n was started with: its name and payload as kept (GET …/runs/{n}/event). */
  async runEvent(workflowId: string, runNumber: number): Promise<{ name: string; text: string }> {
    return this.deps.store.read(async (r) => {
      const wf = await r.getWorkflow(workflowId);
      if (!wf) throw workflowNotFound(workflowId);
      const run = await r.getRun(workflowId, runNumber);
      if (!run) throw new WeftError('run_not_found', `workflow "${workflowId}" has no run #${runNumber} (latest is ${wf.latest_run || 'none'})`);
      const text = run.event_name === null ? null : await r.getRunEvent(workflowId, runNumber);
      if (run.event_name === null || text === null) {
        const how = run.trigger === 'manual' ? 'by hand' : run.trigger === 'schedule' ? 'by its schedule' : run.trigger === 'rerun' ? 'as a re-run of a run without one' : 'without one';
        throw new WeftError('event_not_found', `run #${runNumber} of workflow "${workflowId}" has no event: it was started ${how}`);
      }
      return { name: run.event_name, text };
    });
  }

  /**
   * The payload of each claimed job's run, for the claim answer (`event`): only jobs that carry
   * WEFT_EVENT_NAME (planned with an event, run-plan.ts) cost a read, and a run's payload is read once.
   */
  async addToClaims(results: readonly ClaimResult[]): Promise<void> {
    const wanted = results.filter((c) => c.job.env[EVENT_NAME_ENV] !== undefined);
    if (wanted.length === 0) return;
    const key = (k: RunKey) => `${k.run_number}\u0000${k.workflow_id}`;
    const missing = new Map<string, RunKey>();
    for (const c of wanted) {
      const k = { workflow_id: c.job.workflow_id, run_number: c.job.run_number };
      if (!this.payloads.has(key(k))) missing.set(key(k), k);
    }
    if (missing.size > 0) {
      const texts = await this.deps.store.read((r) => Promise.all([...missing.values()].map((k) => r.getRunEvent(k.workflow_id, k.run_number))));
      [...missing.keys()].forEach((k, i) => {
        const text = texts[i];
        if (text !== null && text !== undefined) this.remember(k, JSON.parse(text) as unknown, text.length);
      });
    }
    for (const c of wanted) {
      const kept = this.payloads.get(key({ workflow_id: c.job.workflow_id, run_number: c.job.run_number }));
      if (kept) c.job.event = kept.payload;
    }
  }

  private remember(key: string, payload: unknown, bytes: number): void {
    if (bytes > PAYLOAD_CACHE_BYTES) return;
    while (this.payloadBytes + bytes > PAYLOAD_CACHE_BYTES && this.payloads.size > 0) {
      const [oldest, entry] = this.payloads.entries().next().value!;
      this.payloads.delete(oldest);
      this.payloadBytes -= entry.bytes;
    }
    this.payloads.set(key, { payload, bytes });
    this.payloadBytes += bytes;
  }
}

/** A delivery id as a header or a query gives it; 400 when it is not one. */
export function checkedDelivery(id: string, where: string): string {
  if (!DELIVERY_ID.test(id)) throw new WeftError('invalid_request', `${where} must be 1 to 200 printable ASCII characters without spaces`);
  return id;
}

// Fatal: bytes that are not UTF-8 are refused rather than silently replaced.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The payload of a delivery: the body itself (application/json), or its `payload` field
 * (application/x-www-form-urlencoded, GitHub's other content type). 400 `invalid_json` when it is not JSON.
 */
function deliveredPayload(body: Buffer, form: boolean): { payload: unknown; text: string } {
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new WeftError('invalid_json', 'the delivery is not valid UTF-8; a webhook payload is JSON');
  }
  if (form) {
    const field = new URLSearchParams(text).get('payload');
    if (field === null) throw new WeftError('invalid_json', 'a form-encoded delivery carries its JSON in the `payload` field, and this one has none');
    text = field;
  }
  if (text.trim() === '') throw new WeftError('invalid_json', 'the delivery has no payload; a webhook payload is JSON');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new WeftError('invalid_json', `the delivery's payload is not JSON: ${(err as Error).message}`);
  }
  return keptPayload(value);
}

/** A payload made safe to keep (domain/triggers.ts cleanPayload), and the JSON text the run keeps: at most MAX_EVENT_BYTES. */
function keptPayload(value: unknown): { payload: unknown; text: string } {
  const clean = cleanPayload(value);
  if (!clean.ok) throw new WeftError('invalid_json', clean.problem);
  const text = JSON.stringify(clean.value);
  if (Buffer.byteLength(text) > MAX_EVENT_BYTES) throw new WeftError('payload_too_large', `an event's payload is at most ${MAX_EVENT_BYTES} bytes as JSON, and this one is ${Buffer.byteLength(text)}`);
  return { payload: clean.value, text };
}
