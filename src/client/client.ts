import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ClaimResult, IncomingLogChunk, LeaseView } from '../engine/engine.js';
import type { LogChunkView, StatusDocument, WorkerView, WorkflowSummary } from '../engine/views.js';
import type { JobState, Outputs } from '../domain/types.js';

export type { ClaimResult, IncomingLogChunk, LeaseView, LogChunkView, StatusDocument, WorkerView, WorkflowSummary };

/**
 * Any non-2xx answer. `status`/`statusText` are the HTTP ones (SPEC.md §7); `error`/`message` are the
 * server's JSON error body, when it sent one.
 */
export class WorkflowApiError extends Error {
  override name = 'WorkflowApiError';
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly error: string,
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

export interface WorkflowClientOptions {
  /** Base URL, e.g. http://localhost:3000. */
  baseUrl: string;
  /** Per-request timeout; streams are not subject to it. */
  timeoutMs?: number;
  /** Replaceable for tests or proxies; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export interface ListWorkflowsOptions {
  limit?: number;
  offset?: number;
  /** A job state (or the aliases `active`, `failure`). */
  status?: JobState | 'active' | 'failure';
}

export type LogStreamEvent =
  | { type: 'log'; id: number; chunk: LogChunkView }
  | { type: 'attempt'; attempt: number }
  | { type: 'end'; status: JobState; run_number: number | null };

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

  constructor(opts: WorkflowClientOptions | string) {
    const o = typeof opts === 'string' ? { baseUrl: opts } : opts;
    this.baseUrl = o.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.fetchImpl = o.fetch ?? fetch;
  }

  // ------------------------------------------------------------- workflows

  listWorkflows(opts: ListWorkflowsOptions = {}): Promise<WorkflowSummary[]> {
    return this.request('GET', '/api/workflows', undefined, {
      limit: opts.limit,
      offset: opts.offset,
      status: opts.status,
    });
  }

  /** Creates a workflow from a definition object (contract or array form). 409 if the id exists. */
  createWorkflow(definition: object): Promise<StatusDocument> {
    return this.request('POST', '/api/workflows', definition);
  }

  /** Creates or replaces the workflow `id` in place. */
  putWorkflow(id: string, definition: object): Promise<StatusDocument> {
    return this.request('PUT', `/api/workflows/${enc(id)}`, definition);
  }

  getStatus(id: string): Promise<StatusDocument> {
    return this.request('GET', `/api/workflows/${enc(id)}/status`);
  }

  runWorkflow(id: string): Promise<StatusDocument> {
    return this.request('POST', `/api/workflows/${enc(id)}/run`);
  }

  cancelWorkflow(id: string): Promise<StatusDocument & { cancelled_jobs: string[] }> {
    return this.request('POST', `/api/workflows/${enc(id)}/cancel`);
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
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
    const res = await this.fetchImpl(this.baseUrl + path, { headers, signal: opts.signal });
    if (!res.ok) throw await apiError(res, 'GET', path);
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
          const data = JSON.parse(e.data) as Record<string, unknown>;
          if (e.event === 'log') yield { type: 'log', id: Number(e.id), chunk: data as unknown as LogChunkView };
          else if (e.event === 'attempt') yield { type: 'attempt', attempt: data.attempt as number };
          else if (e.event === 'end') {
            yield { type: 'end', status: data.status as JobState, run_number: (data.run_number as number | null) ?? null };
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

  registerWorker(workerId: string, labels: string[] = []): Promise<WorkerView> {
    return this.request('POST', '/api/workers/register', { worker_id: workerId, labels });
  }

  // ------------------------------------------------------------- worker protocol

  /** The next job that fits, with its lease, or null. */
  claim(workerId: string, labels: string[] = [], leaseTtlSecs = 30): Promise<ClaimResult | null> {
    return this.request('POST', '/api/jobs/claim', { worker_id: workerId, labels, lease_ttl_secs: leaseTtlSecs });
  }

  heartbeat(leaseId: string): Promise<LeaseView> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/heartbeat`);
  }

  complete(leaseId: string, outputs: Outputs = {}): Promise<{ ok: true; status: JobState; enqueued: string[] }> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/complete`, { outputs });
  }

  fail(
    leaseId: string,
    error: string,
    retryable: boolean,
  ): Promise<{ ok: true; status: JobState; attempt: number; delayed_until_ms: number }> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/fail`, { error, retryable });
  }

  pushLogs(leaseId: string, chunks: IncomingLogChunk[]): Promise<{ ok: true; accepted: number }> {
    return this.request('POST', `/api/jobs/${enc(leaseId)}/logs`, { chunks });
  }

  isCancelled(workflowId: string, jobId: string): Promise<boolean> {
    return this.request('GET', `/api/jobs/${enc(workflowId)}/${enc(jobId)}/cancelled`);
  }

  health(): Promise<{ ok: boolean }> {
    return this.request('GET', '/healthz');
  }

  // ------------------------------------------------------------- transport

  private async request<T>(
    method: string,
    path: string,
    body?: unknown,
    query?: Record<string, string | number | undefined>,
  ): Promise<T> {
    let url = this.baseUrl + path;
    if (query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) qs.set(k, String(v));
      const s = qs.toString();
      if (s) url += `?${s}`;
    }
    const init: RequestInit = { method, signal: AbortSignal.timeout(this.timeoutMs) };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const res = await this.fetchImpl(url, init);
    if (!res.ok) throw await apiError(res, method, path);
    const text = await res.text();
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}

const enc = encodeURIComponent;

async function apiError(res: Response, method: string, path: string): Promise<WorkflowApiError> {
  const text = await res.text().catch(() => '');
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
