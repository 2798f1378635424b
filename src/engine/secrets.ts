/**
 * Secrets (README "Secrets"): set, listed and removed by admins; sealed at rest under the server's key
 * (secret-box.ts); checked when a run starts; opened only to answer the claim of a job whose env names
 * them; and hidden in what that job's worker sends back (its log, outputs and error: lease-calls.ts).
 */
import type { Logger } from 'pino';
import { referencesOf, SECRET_NAME_PATTERN } from '../domain/expressions.js';
import { maskForms } from '../domain/masking.js';
import { WeftError } from '../protocol/errors.js';
import type { JobRecord, SecretInfo, Store } from '../store/store.js';
import { open, seal, SecretKeyError, type SecretKey } from './secret-box.js';

const SECRET_NAME = new RegExp(`^${SECRET_NAME_PATTERN}$`);
/** As GitHub's limit: a secret is a key or a token, not a file. */
export const MAX_SECRET_BYTES = 48 * 1024;
/** Leases whose masks this server remembers; an entry it forgot is read again from the store. */
const MASK_CACHE_ENTRIES = 10_000;

const NO_FORMS: readonly string[] = [];

/** '' is the scope every workflow sees. */
const GLOBAL = '';

/** The secret names a job's env refers to, each once. */
export function secretNamesOf(env: Readonly<Record<string, string>>): string[] {
  let names: Set<string> | null = null;
  for (const k in env) {
    const v = env[k]!;
    if (!v.includes('${{')) continue;
    for (const ref of referencesOf(v)) if (ref.kind === 'secrets') (names ??= new Set()).add(ref.name);
  }
  return names ? [...names] : [];
}

/** A claimed job's secrets, opened: the values by name. */
export interface OpenedSecrets {
  values: ReadonlyMap<string, string>;
}

export class Secrets {
  /** Lease id → the forms to hide in what its worker sends ([] for a job without secrets). */
  private readonly masks = new Map<string, readonly string[]>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly key: SecretKey | null,
    private readonly log: Logger,
  ) {}

  /**
   * Refuses to serve with a key the stored secrets were not sealed with: every claim of a job using
   * one would fail. Without a key the server starts (secrets then cannot be set or used) and says so.
   */
  async checkKey(): Promise<void> {
    const ids = await this.store.read((r) => r.secretKeyIds());
    if (ids.length === 0) return;
    if (this.key === null) {
      this.log.warn({ secrets_key_ids: ids }, 'secrets are stored but the server has no WEFT_SECRET_KEY or WEFT_SECRET_KEY_FILE: jobs that use them will fail');
      return;
    }
    const others = ids.filter((id) => id !== this.key!.id);
    if (others.length > 0) {
      throw new SecretKeyError(
        `the stored secrets were sealed with key ${others.join(', ')}, but WEFT_SECRET_KEY is key ${this.key.id}: start the server with the key they were set with (README "Secrets")`,
      );
    }
  }

  async set(name: string, workflowId: string | null, value: string, by: string | null): Promise<{ created: boolean; secret: SecretInfo }> {
    checkName(name);
    if (value.length === 0) throw new WeftError('invalid_request', `secret ${name}: the value is empty`);
    if (Buffer.byteLength(value) > MAX_SECRET_BYTES) {
      throw new WeftError('invalid_request', `secret ${name}: the value is ${Buffer.byteLength(value)} bytes; at most ${MAX_SECRET_BYTES} are allowed`);
    }
    const key = this.requireKey();
    if (workflowId !== null && (await this.store.read((r) => r.getWorkflow(workflowId))) === null) {
      throw new WeftError('workflow_not_found', `workflow "${workflowId}" does not exist; a workflow's secret is set once the workflow is`);
    }
    const scope = workflowId ?? GLOBAL;
    const rec = { scope, name, sealed: seal(key, scope, name, value), key_id: key.id, updated_at_ms: this.now(), updated_by: by };
    const outcome = await this.store.putSecret(rec);
    this.log.info({ secret: name, workflow_id: workflowId, by }, outcome === 'created' ? 'secret set' : 'secret replaced');
    const { sealed: _sealed, ...secret } = rec;
    return { created: outcome === 'created', secret };
  }

  async remove(name: string, workflowId: string | null, by: string | null): Promise<void> {
    checkName(name);
    if (!(await this.store.deleteSecret(workflowId ?? GLOBAL, name))) {
      throw new WeftError('secret_not_found', `no secret ${name} ${workflowId === null ? 'for every workflow' : `for workflow "${workflowId}"`} (see GET /api/secrets)`);
    }
    this.log.info({ secret: name, workflow_id: workflowId, by }, 'secret removed');
  }

  list(): Promise<SecretInfo[]> {
    return this.store.read((r) => r.listSecrets());
  }

  /**
   * Before a run starts: every secret its jobs name must be set for the workflow (its own or a global
   * one), so that a typo fails the start, not a deploy half way through.
   */
  async checkSet(workflowId: string, jobs: ReadonlyArray<{ id: string; env: Readonly<Record<string, string>> }>): Promise<void> {
    const wanted = new Map<string, string>();
    for (const job of jobs) for (const name of secretNamesOf(job.env)) if (!wanted.has(name)) wanted.set(name, job.id);
    if (wanted.size === 0) return;
    const found = new Set((await this.store.read((r) => r.getSecrets(workflowId, [...wanted.keys()]))).map((s) => s.name));
    const missing = [...wanted].filter(([name]) => !found.has(name));
    if (missing.length > 0) {
      const list = missing.map(([name, job]) => `${name} (job "${job}")`).join(', ');
      throw new WeftError(
        'secret_missing',
        `workflow "${workflowId}" uses secrets that are not set: ${list}. Set each with \`weft secret set NAME\` (or --workflow ${workflowId}), then start the run again`,
      );
    }
  }

  /**
   * True when no claimed job names a secret; each lease is then remembered as having none, so that its
   * reports take no read either.
   */
  noneNamed(claims: ReadonlyArray<{ lease: { lease_id: string }; job: JobRecord }>): boolean {
    if (claims.some((c) => secretNamesOf(c.job.env).length > 0)) return false;
    for (const c of claims) this.remember(c.lease.lease_id, NO_FORMS);
    return true;
  }

  /**
   * Opens the secrets each claimed job names, by lease id, and remembers what to hide for each lease.
   * A job whose secret is gone or does not open is in `failed` with the reason, to be failed, not run.
   */
  async forClaims(claims: ReadonlyArray<{ leaseId: string; job: JobRecord }>): Promise<{ opened: Map<string, OpenedSecrets>; failed: Map<string, string> }> {
    const opened = new Map<string, OpenedSecrets>();
    const failed = new Map<string, string>();
    for (const { leaseId, job } of claims) {
      const names = secretNamesOf(job.env);
      if (names.length === 0) {
        this.remember(leaseId, []);
        continue;
      }
      try {
        const values = await this.openFor(job.workflow_id, names);
        this.remember(leaseId, maskForms(values.values()));
        opened.set(leaseId, { values });
      } catch (err) {
        if (!(err instanceof WeftError || err instanceof SecretKeyError)) throw err;
        failed.set(leaseId, err.message);
      }
    }
    return { opened, failed };
  }

  /**
   * The value of secret `name` for workflow `workflowId` (its own, else the global one), for the server's
   * own use: a webhook's signing key (README "Webhooks"). Null when it is not set or cannot be opened
   * (no key, or another key), with the reason in `why`; never thrown, since the caller answers one way.
   */
  async valueFor(workflowId: string, name: string): Promise<{ value: string } | { value: null; why: string }> {
    try {
      return { value: (await this.openFor(workflowId, [name])).get(name)! };
    } catch (err) {
      if (!(err instanceof WeftError || err instanceof SecretKeyError)) throw err;
      const missing = err instanceof WeftError && err.code === 'secret_missing';
      return { value: null, why: missing ? `secret ${name} is not set (for workflow "${workflowId}" or every workflow): set it with \`weft secret set ${name}\`` : err.message };
    }
  }

  /** What to hide for `leaseId` when this server remembers it, else undefined (then ask masksOf). */
  knownMasks(leaseId: string): readonly string[] | undefined {
    return this.masks.get(leaseId);
  }

  /** What to hide in what the worker of `leaseId` sends back ([] for a job that uses no secret). */
  async masksOf(leaseId: string): Promise<readonly string[]> {
    const known = this.masks.get(leaseId);
    if (known !== undefined) return known;
    // Claimed through another server, or before this one started: read the job the lease is for.
    const job = await this.store.read((r) => r.leaseJobEnv(leaseId));
    const names = job ? secretNamesOf(job.env) : [];
    let forms: readonly string[] = [];
    if (job && names.length > 0) {
      try {
        forms = maskForms((await this.openFor(job.workflow_id, names)).values());
      } catch (err) {
        // Nothing was handed out that did not open, so nothing of it can come back.
        this.log.warn({ lease_id: leaseId, err }, 'secrets of a lease do not open; nothing of them to hide');
      }
    }
    this.remember(leaseId, forms);
    return forms;
  }

  /** The lease is over: its worker sends nothing more. */
  forget(leaseId: string): void {
    this.masks.delete(leaseId);
  }

  private remember(leaseId: string, forms: readonly string[]): void {
    if (this.masks.size >= MASK_CACHE_ENTRIES) this.masks.delete(this.masks.keys().next().value!);
    this.masks.set(leaseId, forms);
  }

  /**
   * The values of `names` for workflow `workflowId`, for the server's own use of them (a notification's
   * signing key or URL: README "Notifications"). Throws WeftError or SecretKeyError naming a secret
   * that is not set or does not open, never a value.
   */
  valuesFor(workflowId: string, names: readonly string[]): Promise<Map<string, string>> {
    return this.openFor(workflowId, names);
  }

  /** The values of `names` for workflow `workflowId`: its own secret of a name wins over a global one. */
  private async openFor(workflowId: string, names: readonly string[]): Promise<Map<string, string>> {
    const rows = await this.store.read((r) => r.getSecrets(workflowId, names));
    const values = new Map<string, string>();
    for (const name of names) {
      const row = rows.find((s) => s.name === name && s.scope === workflowId) ?? rows.find((s) => s.name === name && s.scope === GLOBAL);
      if (!row) throw new WeftError('secret_missing', `secret ${name} is not set (it was removed after the run started); set it with \`weft secret set ${name}\` and re-run the job`);
      if (this.key === null) throw new SecretKeyError(`secret ${name} cannot be opened: the server has no WEFT_SECRET_KEY or WEFT_SECRET_KEY_FILE`);
      values.set(name, open(this.key, row.scope, row.name, row.sealed));
    }
    return values;
  }

  private requireKey(): SecretKey {
    if (this.key === null) {
      throw new WeftError(
        'secrets_unavailable',
        'this server has no secret key, so it stores no secrets: start it with WEFT_SECRET_KEY (32 bytes, e.g. `openssl rand -base64 32`) or WEFT_SECRET_KEY_FILE naming a file that holds one (README "Secrets")',
      );
    }
    return this.key;
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new WeftError('invalid_request', `secret name "${name.slice(0, 140)}" is not valid: use letters, digits and underscores, not starting with a digit, at most 128 characters`);
  }
}
