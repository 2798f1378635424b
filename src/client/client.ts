import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Outputs } from '../domain/model.js';
import type {
  ApprovalRequest,
  ApprovalResponse,
  BatchClaimRequest,
  BatchClaimResponse,
  CancelResponse,
  PutWorkflowResponse,
  ClaimRequest,
  HeartbeatBatchResponse,
  Report,
  ReportBatchRequest,
  ReportBatchResponse,
  ClaimResult,
  CompleteResponse,
  ErrorCode,
  EventAnswer,
  FailResponse,
  HeartbeatResponse,
  IncomingLogChunk,
  ListWorkflowsQuery,
  LogChunkView,
  LogEndEvent,
  PushLogsResponse,
  RerunRequest,
  RunRequest,
  RunSummary,
  StatusDocument,
  SecretView,
  WorkerView,
} from '../protocol/index.js';
import type { ArtifactView } from '../domain/artifacts.js';
import { nodeUpload } from './node-upload.js';
import type { PlainAnswer } from './node-json.js';
import { artifactUrlPath, downloadArtifact, listArtifacts, uploadArtifact, type ArtifactList, type ArtifactTransport } from './artifacts.js';

/**
 * Any non-2xx answer. `status`/`statusText` are the HTTP ones (docs/api.md "Errors"); `error`/`message` are the
 * server's JSON error body, when it sent one.
 */
export class WorkflowApiError extends Error {
  override name = 'WorkflowApiError';
  constructor(
    readonly status: number,
    readonly statusText: string,
    /** A code of the catalogue in docs/protocol.md, or `http_error` when the answer was not weft's JSON. */
    readonly error: ErrorCode | 'http_error' | (string & {}),
    message: string,
    readonly body: unknown,
    readonly method: string,
    readonly path: string,
  ) {
    super(`${method} ${path}: ${status} ${statusText}: ${message}`);
    this.serverMessage = message;
  }
  /** The server's own message, without the request prefix. */
  readonly serverMessage: string;
}

/**
 * A request that got no HTTP answer (refused, reset, DNS, timed out, aborted, or the body could not be
 * read). The message says which call failed and why, e.g. `POST /api/jobs/…/heartbeat: no answer
 * within 10 s`. It is a TypeError, as fetch's own network errors are, and `cause` is the underlying
 * socket error; a timeout is named `TimeoutError`, as fetch's own is, so code checking `err.name`
 * keeps working.
 */
export class WorkflowNetworkError extends TypeError {
  override name: 'WorkflowNetworkError' | 'TimeoutError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly reason: string,
    readonly timedOut: boolean,
    cause: unknown,
  ) {
    super(`${method} ${path}: ${reason}`, { cause });
    this.name = timedOut ? 'TimeoutError' : 'WorkflowNetworkError';
  }
}

/** Per-call settings of the worker-protocol methods. */
export interface RequestOptions {
  /** Overrides the client's `timeoutMs` for this call. */
  timeoutMs?: number;
  /** Aborts the call; it then rejects with a {@link WorkflowNetworkError}. */
  signal?: AbortSignal;
}

export interface WorkflowClientOptions {
  /** Base URL, e.g. http://localhost:3000. */
  baseUrl: string;
  /** Per-request timeout; streams are not subject to it. */
  timeoutMs?: number;
  /**
   * Replaceable for tests or proxies: when given, every call goes through it. Otherwise, in Node,
   * JSON calls use node:http with a kept-alive agent (./node-json.ts: a fraction of fetch's CPU per
   * call), and log streams and artifacts the global fetch.
   */
  fetch?: typeof fetch;
  /** Sent as `Authorization: Bearer <token>` when the server requires tokens (README "Access tokens"). */
  token?: string;
}

export type ListWorkflowsOptions = ListWorkflowsQuery;

export type LogStreamEvent =
  | { type: 'log'; id: number; chunk: LogChunkView }
  | { type: 'attempt'; attempt: number }
  | ({ type: 'end' } & LogEndEvent);

export interface StreamLogsOptions {
  /** Resume after this sequence (sent as Last-Event-ID). */
  lastEventId?: number;
  signal?: AbortSignal;
}

/** One typed method per endpoint of the weft API. */
export class WorkflowClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly plainCalls: boolean;
  /** Headers every request carries (the token, when one is given). */
  private readonly baseHeaders: Readonly<Record<string, string>>;

  constructor(opts: WorkflowClientOptions | string) {
    const o: WorkflowClientOptions = typeof opts === 'string' ? { baseUrl: opts } : opts;
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.fetchImpl = o.fetch ?? fetch;
    // In Node, without a fetch of the caller's, JSON calls go through node:http (./node-json.ts).
    this.plainCalls = o.fetch === undefined && typeof process !== 'undefined' && process.versions?.node !== undefined;
    this.baseHeaders = o.token ? { authorization: `Bearer ${o.token}` } : {};
  }

  // ------------------------------------------------------------- workflows

  listWorkflows(opts: ListWorkflowsOptions = {}): Promise<StatusDocument[]> {
    return this.request('GET', '/api/workflows', undefined, {
      limit: opts.limit,
      offset: opts.offset,
      status: opts.status,
      q: opts.q,
    });
  }

  /** Creates a workflow from a definition object (contract or array form). 409 if the id exists. */
  createWorkflow(definition: object): Promise<StatusDocument> {
    return this.request('POST', '/api/workflows', definition);
  }

  /** Creates or replaces the workflow `id` in place. */
  putWorkflow(id: string, definition: object): Promise<PutWorkflowResponse> {
    return this.request('PUT', `/api/workflows/${enc(id)}`, definition);
  }

  getStatus(id: string): Promise<StatusDocument> {
    return this.request('GET', `/api/workflows/${enc(id)}/status`);
  }

  /**
   * Starts the next run, with values for the workflow's declared inputs and, optionally, a priority
   * for all its jobs (README "Priorities"). Without either no body is sent, as before; a server older
   * than run inputs ignores them (its answer has no `run.inputs`).
   */
  runWorkflow(id: string, opts: RunRequest = {}): Promise<StatusDocument> {
    const withInputs = opts.inputs !== undefined && Object.keys(opts.inputs).length > 0;
    const body = withInputs || opts.priority !== undefined
      ? { ...(withInputs ? { inputs: opts.inputs } : {}), ...(opts.priority !== undefined ? { priority: opts.priority } : {}) }
      : undefined;
    return this.request('POST', `/api/workflows/${enc(id)}/run`, body);
  }

  /**
   * Starts the next run as a re-run of run `runNumber`: `{only: 'failed'}` (the default) or `{only: 'all'}`,
   * or `{from: jobId}`. The jobs not run again keep run `runNumber`'s outputs.
   */
  rerun(id: string, runNumber: number, opts: RerunRequest = {}): Promise<StatusDocument> {
    return this.request('POST', `/api/workflows/${enc(id)}/runs/${runNumber}/rerun`, opts);
  }

  /**
   * Approves job `jobId` of run `runNumber`, which is awaiting approval (README "Approvals"): a job with a
   * command is queued, an approval alone succeeds. 409 `job_not_awaiting_approval` when it is not waiting.
   */
  approveJob(id: string, runNumber: number, jobId: string, opts: ApprovalRequest = {}): Promise<ApprovalResponse> {
    return this.request('POST', `/api/workflows/${enc(id)}/runs/${runNumber}/jobs/${enc(jobId)}/approve`, opts);
  }

  /** Rejects job `jobId` of run `runNumber`, which is awaiting approval: it fails (not retried). */
  rejectJob(id: string, runNumber: number, jobId: string, opts: ApprovalRequest = {}): Promise<ApprovalResponse> {
    return this.request('POST', `/api/workflows/${enc(id)}/runs/${runNumber}/jobs/${enc(jobId)}/reject`, opts);
  }

  /** A page of the workflow's runs, newest first, each with its jobs counted by state. */
  listRuns(id: string, opts: { limit?: number; offset?: number } = {}): Promise<RunSummary[]> {
    return this.request('GET', `/api/workflows/${enc(id)}/runs`, undefined, { limit: opts.limit, offset: opts.offset });
  }

  /** The status document of run `runNumber` (getStatus is the latest run's). */
  getRun(id: string, runNumber: number): Promise<StatusDocument> {
    return this.request('GET', `/api/workflows/${enc(id)}/runs/${runNumber}`);
  }

  /** Cancels run `opts.run`, or every active run of the workflow (running and queued). */
  cancelWorkflow(id: string, opts: { run?: number } = {}): Promise<CancelResponse> {
    return this.request('POST', `/api/workflows/${enc(id)}/cancel`, undefined, { run: opts.run });
  }

  /** Sets a secret (README "Secrets") for every workflow, or for `workflowId` alone; admin only. */
  setSecret(name: string, value: string, opts: { workflowId?: string } = {}): Promise<SecretView> {
    return this.request('PUT', `/api/secrets/${enc(name)}`, { value }, { workflow_id: opts.workflowId });
  }

  /** Secrets' names, scopes and times; never their values. */
  async listSecrets(): Promise<SecretView[]> {
    return (await this.request<{ secrets: SecretView[] }>('GET', '/api/secrets')).secrets;
  }

  removeSecret(name: string, opts: { workflowId?: string } = {}): Promise<{ deleted: string; workflow_id: string | null }> {
    return this.request('DELETE', `/api/secrets/${enc(name)}`, undefined, { workflow_id: opts.workflowId });
  }

  /** Deletes the workflow with its whole history; 409 `workflow_active` while a run is active. */
  /**
   * Sends a named event (README "Events"): a run of every workflow whose on.event lists `name`, with
   * `payload` as its event. `deliveryId` makes it idempotent: a repeat starts no second run of a workflow.
   */
  sendEvent(name: string, payload: unknown = {}, opts: { deliveryId?: string } = {}): Promise<EventAnswer> {
    return this.request('POST', `/api/events/${encodeURIComponent(name)}`, payload, { delivery_id: opts.deliveryId });
  }

  /** The event payload run `runNumber` was started with (README "Triggers and notifications"); 404 event_not_found without one. */
  getRunEvent(id: string, runNumber: number): Promise<unknown> {
    return this.request('GET', `/api/workflows/${encodeURIComponent(id)}/runs/${runNumber}/event`);
  }

  deleteWorkflow(id: string): Promise<{ deleted: string }> {
    return this.request('DELETE', `/api/workflows/${enc(id)}`);
  }

  getLogs(workflowId: string, jobId: string, opts: { run?: number; attempt?: number } = {}): Promise<LogChunkView[]> {
    return this.request('GET', `/api/workflows/${enc(workflowId)}/jobs/${enc(jobId)}/logs`, undefined, opts);
  }

  /**
   * Live log events of a job over SSE: replay, live chunks, attempt changes, then `end`. The iterator
   * finishes after `end` or when `signal` aborts.
   */
  async *streamLogs(workflowId: string, jobId: string, opts: StreamLogsOptions = {}): AsyncGenerator<LogStreamEvent> {
    const path = `/api/workflows/${enc(workflowId)}/jobs/${enc(jobId)}/logs/stream`;
    const headers: Record<string, string> = { ...this.baseHeaders, accept: 'text/event-stream' };
    if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
    let res: Response;
    try {
      res = await this.fetchImpl(this.baseUrl + path, { headers, signal: opts.signal });
    } catch (err) {
      throw networkError(err, 'GET', path, null, opts.signal);
    }
    if (!res.ok) throw await fetchError(res, 'GET', path);
    if (!res.body) return;
    const queue: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (e) => queue.push(e) });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    try {
      for (;;) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          if (opts.signal?.aborted) return;
          throw err;
        }
        if (next.done) return;
        parser.feed(decoder.decode(next.value, { stream: true }));
        while (queue.length > 0) {
          const e = queue.shift()!;
          // Other events (and comments) are for other readers: their data need not be JSON.
          if (e.event === 'log') yield { type: 'log', id: Number(e.id), chunk: JSON.parse(e.data) as LogChunkView };
          else if (e.event === 'attempt') yield { type: 'attempt', attempt: (JSON.parse(e.data) as { attempt: number }).attempt };
          else if (e.event === 'end') {
            const data = JSON.parse(e.data) as Partial<LogEndEvent> & Pick<LogEndEvent, 'status'>;
            yield { type: 'end', status: data.status, run_number: data.run_number ?? null };
            return;
          }
        }
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  // ------------------------------------------------------------- workers

  listWorkers(): Promise<WorkerView[]> {
    return this.request('GET', '/api/workers');
  }

  registerWorker(workerId: string, labels: string[] = [], opts?: RequestOptions): Promise<WorkerView> {
    return this.request('POST', '/api/workers/register', { worker_id: workerId, labels }, undefined, opts);
  }

  // ------------------------------------------------------------- worker protocol

  /**
   * The next job that fits, with its lease, or null. With `waitSecs` (a long poll, 0..60) the server
   * holds the call until a job fits or the time is up; the call's timeout grows by that much.
   */
  claim(
    workerId: string,
    labels: string[] = [],
    leaseTtlSecs = 30,
    opts: RequestOptions & { waitSecs?: number } = {},
  ): Promise<ClaimResult | null> {
    const { waitSecs, ...rest } = opts;
    const body: ClaimRequest = { worker_id: workerId, labels, lease_ttl_secs: leaseTtlSecs };
    if (waitSecs) body.wait_secs = waitSecs;
    return this.request('POST', '/api/jobs/claim', body, undefined, this.withWait(rest, waitSecs));
  }

  /** A long poll may take its wait on top of the usual answer time. */
  private withWait(opts: RequestOptions, waitSecs: number | undefined): RequestOptions {
    return waitSecs ? { ...opts, timeoutMs: (opts.timeoutMs ?? this.timeoutMs) + waitSecs * 1000 } : opts;
  }

  /**
   * Up to `max_jobs` jobs in one call (docs/api.md "Batches"); `wait_secs` makes it a long poll. A
   * server without batches answers 404 (a WorkflowApiError).
   */
  claimBatch(req: BatchClaimRequest, opts: RequestOptions = {}): Promise<BatchClaimResponse> {
    return this.request('POST', '/api/jobs/claim-batch', req, undefined, this.withWait(opts, req.wait_secs));
  }

  /** Completes and fails many leases in one call, each on its own; with `claim`, claims more in the same round trip. */
  reportBatch(reports: Report[], claim?: BatchClaimRequest, opts: RequestOptions = {}): Promise<ReportBatchResponse> {
    const body: ReportBatchRequest = claim ? { reports, claim } : { reports };
    return this.request('POST', '/api/jobs/report-batch', body, undefined, this.withWait(opts, claim?.wait_secs));
  }

  /** Renews many leases in one call; each answers as its own heartbeat would. */
  heartbeatBatch(leaseIds: string[], opts?: RequestOptions): Promise<HeartbeatBatchResponse> {
    return this.request('POST', '/api/jobs/heartbeat-batch', { lease_ids: leaseIds }, undefined, opts);
  }

  heartbeat(leaseId: string, opts?: RequestOptions): Promise<HeartbeatResponse> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/heartbeat`, undefined, undefined, opts);
  }

  complete(leaseId: string, outputs: Outputs = {}, opts?: RequestOptions): Promise<CompleteResponse> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/complete`, { outputs }, undefined, opts);
  }

  fail(
    leaseId: string,
    error: string,
    retryable: boolean,
    opts?: RequestOptions,
  ): Promise<FailResponse> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/fail`, { error, retryable }, undefined, opts);
  }

  pushLogs(leaseId: string, chunks: IncomingLogChunk[], opts?: RequestOptions): Promise<PushLogsResponse> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/logs`, { chunks }, undefined, opts);
  }

  /**
   * Whether the job was cancelled in run `opts.run`; without it, in the workflow's newest running run
   * (docs/api.md). A worker passes the run of the job it holds, as a workflow may run several at once.
   */
  isCancelled(workflowId: string, jobId: string, opts: RequestOptions & { run?: number } = {}): Promise<boolean> {
    const { run, ...request } = opts;
    return this.request('GET', `/api/jobs/${enc(workflowId)}/${enc(jobId)}/cancelled`, undefined, { run }, request);
  }

  // ------------------------------------------------------------- artifacts (README "Artifacts")

  /** Uploads `body` as artifact `name` of the lease's attempt, streamed; `sha256` is its digest. */
  uploadArtifact(leaseId: string, name: string, body: AsyncIterable<Uint8Array> | Uint8Array, sha256: string, opts?: { size?: number; signal?: AbortSignal }): Promise<ArtifactView> {
    return uploadArtifact(this.artifactTransport(), leaseId, name, body, sha256, opts);
  }

  /** The run's artifacts (one job's, with `jobId`). */
  listArtifacts(workflowId: string, run: number, jobId?: string): Promise<ArtifactList> {
    return listArtifacts(this.artifactTransport(), workflowId, run, jobId);
  }

  /** One artifact as a streaming Response (`range`: e.g. `bytes=100-`). */
  downloadArtifact(workflowId: string, run: number, jobId: string, name: string, opts?: { range?: string; signal?: AbortSignal }): Promise<Response> {
    return downloadArtifact(this.artifactTransport(), artifactUrlPath(workflowId, run, jobId, name), opts);
  }

  /** The same, by the download path a claimed job's `downloads` entry names. */
  downloadArtifactPath(path: string, opts?: { range?: string; signal?: AbortSignal }): Promise<Response> {
    return downloadArtifact(this.artifactTransport(), path, opts);
  }

  private artifactTransport(): ArtifactTransport {
    return {
      send: async (method, path, init) => {
        let res: Response;
        const headers = { ...this.baseHeaders, ...(init.headers as Record<string, string> | undefined) };
        // A streamed upload goes through Node's http module, which keeps to the socket's pace (node-upload.ts),
        // unless a fetch of the caller's own was given.
        const streamed = init.body != null && typeof (init.body as unknown as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function';
        try {
          res =
            streamed && this.fetchImpl === globalThis.fetch && typeof process !== 'undefined' && process.versions?.node
              ? await nodeUpload(this.baseUrl + path, method, headers, init.body as unknown as AsyncIterable<Uint8Array>, init.signal ?? undefined)
              : await this.fetchImpl(this.baseUrl + path, { ...init, method, headers });
        } catch (err) {
          throw networkError(err, method, path, null, init.signal ?? undefined);
        }
        if (!res.ok) throw await fetchError(res, method, path);
        return res;
      },
    };
  }

  health(): Promise<{ ok: boolean; event_loop_delay_ms?: { p50: number; p99: number; max: number } }> {
    return this.request('GET', '/healthz');
  }

  // ------------------------------------------------------------- transport

  private async request<T>(
    method: string,
    path: string,
    body?: unknown,
    query?: Record<string, string | number | undefined>,
    opts: RequestOptions = {},
  ): Promise<T> {
    let url = this.baseUrl + path;
    if (query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
      const s = qs.toString();
      if (s) url += `?${s}`;
    }
    const timeoutMs = Math.max(1, Math.ceil(opts.timeoutMs ?? this.timeoutMs));
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
    const headers = body === undefined ? this.baseHeaders : { ...this.baseHeaders, 'content-type': 'application/json' };
    const payload = body === undefined ? undefined : JSON.stringify(body);
    let answer: PlainAnswer;
    try {
      if (this.plainCalls) {
        answer = await (await loadNodeJson()).jsonCall(url, method, headers, payload, signal);
      } else {
        const res = await this.fetchImpl(url, { method, signal, headers, ...(payload !== undefined ? { body: payload } : {}) });
        if (!res.ok) throw await fetchError(res, method, path);
        answer = { status: res.status, statusText: res.statusText, text: await res.text() };
      }
    } catch (err) {
      if (err instanceof WorkflowApiError) throw err;
      throw networkError(err, method, path, timeout.aborted ? timeoutMs : null, opts.signal);
    }
    if (answer.status < 200 || answer.status > 299) throw apiError(answer, method, path);
    return (answer.text === '' ? undefined : JSON.parse(answer.text)) as T;
  }
}

/** Wraps a fetch failure so that its message names the call; `cause` stays the socket-level error. */
function networkError(err: unknown, method: string, path: string, timedOutAfterMs: number | null, signal?: AbortSignal): WorkflowNetworkError {
  if (timedOutAfterMs !== null) {
    const secs = timedOutAfterMs >= 1000 ? Number((timedOutAfterMs / 1000).toFixed(1)) : timedOutAfterMs / 1000;
    return new WorkflowNetworkError(method, path, `no answer within ${secs} s`, true, err);
  }
  if (signal?.aborted) return new WorkflowNetworkError(method, path, 'aborted', false, err);
  // Node's fetch says only "fetch failed"; what happened is in its cause (ECONNREFUSED, ECONNRESET, …).
  const inner = err instanceof TypeError && err.cause instanceof Error ? err.cause : err;
  return new WorkflowNetworkError(method, path, causeText(inner), false, inner);
}

function causeText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.message !== '') return err.message;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  if (err instanceof AggregateError && err.errors.length > 0) return err.errors.map(causeText).join('; ');
  return err.name;
}

const enc = encodeURIComponent;

/** ./node-json.ts, imported once, on the first JSON call that uses it (not where Node's modules do not exist). */
let nodeJson: Promise<typeof import('./node-json.js')> | null = null;
const loadNodeJson = () => (nodeJson ??= import('./node-json.js'));

/** The error of a refused fetch, its body read. */
async function fetchError(res: Response, method: string, path: string): Promise<WorkflowApiError> {
  return apiError({ status: res.status, statusText: res.statusText, text: await res.text().catch(() => '') }, method, path);
}

function apiError(res: PlainAnswer, method: string, path: string): WorkflowApiError {
  const text = res.text;
  let body: unknown = text;
  let error = 'http_error';
  let message = text || res.statusText;
  try {
    body = JSON.parse(text);
    const b = body as { error?: unknown; message?: unknown };
    if (typeof b.error === 'string') error = b.error;
    if (typeof b.message === 'string') message = b.message;
  } catch {
    // Not JSON (a proxy's error page, say): keep the raw text as the message.
  }
  return new WorkflowApiError(res.status, res.statusText, error, message, body, method, path);
}
