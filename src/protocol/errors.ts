/**
 * The one catalogue of error codes weft answers with (docs/protocol.md "Errors"). The server raises
 * them, the client exposes them on `WorkflowApiError.error`, and the worker and CLI decide what to do
 * from them, so every side reads the same table instead of matching strings of its own.
 */

export const ERROR_CODES = {
  // 400: the request itself is wrong; retrying it unchanged cannot help.
  invalid_request: { status: 400, meaning: 'a body field, query parameter or path parameter is malformed' },
  invalid_json: { status: 400, meaning: 'the body is not valid JSON' },
  invalid_workflow: { status: 400, meaning: 'the workflow definition does not validate; `issues` lists every problem' },
  chunk_mismatch: { status: 400, meaning: 'a log chunk names another workflow or job than its lease' },
  invalid_last_event_id: { status: 400, meaning: 'Last-Event-ID is not a log sequence number' },
  bad_url: { status: 400, meaning: 'the URL cannot be routed (bad encoding, too long a segment)' },
  bad_request: { status: 400, meaning: 'the HTTP request is malformed' },
  invalid_artifact_name: { status: 400, meaning: 'an artifact name must be a relative path without `..`, `.`, empty segments, backslashes or control characters' },
  artifact_checksum_mismatch: { status: 400, meaning: 'the uploaded bytes do not hash to the x-weft-sha256 the upload declared; nothing was stored' },
  // 401/403: authentication is on (README "Access tokens").
  unauthorized: { status: 401, meaning: 'no token, or one the server does not know; send `Authorization: Bearer <token>`' },
  forbidden: { status: 403, meaning: "the token's role does not allow this route" },
  // Browsers' requests (README "Browsers and origins"): refused whatever the token.
  forbidden_origin: { status: 403, meaning: 'a web page from an origin this server does not allow asked to change something; see CORS_ORIGINS' },
  forbidden_host: { status: 421, meaning: 'the Host header names a host this server does not answer to (DNS rebinding defence); see ALLOWED_HOSTS' },
  token_scope: { status: 403, meaning: 'the token is limited to some worker ids or labels (its tokens-file line), and this call goes beyond them' },
  lease_not_yours: { status: 403, meaning: 'the lease was claimed with another token; only that token may use it' },
  // README "Webhooks": one answer for every refusal, so that an unsigned caller learns nothing of which workflows exist.
  invalid_signature: {
    status: 401,
    meaning: 'X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of the body under the hook\'s secret, or no workflow here takes webhook deliveries under that id',
  },
  // 404: the thing named in the path does not exist.
  not_found: { status: 404, meaning: 'no such route' },
  workflow_not_found: { status: 404, meaning: 'no workflow with that id' },
  job_not_found: { status: 404, meaning: 'the workflow has no job with that id' },
  run_not_found: { status: 404, meaning: 'the workflow has no run with that number' },
  event_not_found: { status: 404, meaning: 'the run was started without an event (manually, by a schedule)' },
  definition_not_recorded: { status: 404, meaning: 'the run started before weft kept the definition each run used; only the current definition is known' },
  secret_not_found: { status: 404, meaning: 'no secret of that name in that scope (global, or the workflow given)' },
  artifact_not_found: { status: 404, meaning: "the run's job has no artifact of that name (only a successful attempt's artifacts exist)" },
  // 409: the request conflicts with the current state.
  workflow_exists: { status: 409, meaning: 'a workflow with that id already exists' },
  run_active: { status: 409, meaning: 'the workflow already has an active run' },
  nothing_to_rerun: { status: 409, meaning: 'every job of the run to re-run succeeded; nothing is left to run again' },
  job_not_awaiting_approval: { status: 409, meaning: 'the job is not awaiting approval (not yet, or already decided, cancelled or ended); `state` says where it is' },
  workflow_active: { status: 409, meaning: 'the workflow has an active run, so it cannot be deleted; cancel the run first' },
  secret_missing: { status: 409, meaning: 'a job of the workflow uses a secret that is not set; set it, then start the run again' },
  secrets_unavailable: { status: 409, meaning: 'the server has no secret key (WEFT_SECRET_KEY or WEFT_SECRET_KEY_FILE), so it stores no secrets' },
  lease_not_found: { status: 409, meaning: 'the lease was never granted' },
  lease_expired: { status: 409, meaning: 'the lease ran out before this call; the job was re-queued or failed' },
  lease_timed_out: { status: 409, meaning: "the job's attempt outlived timeout_secs; the lease is void" },
  lease_completed: { status: 409, meaning: 'the lease was already completed' },
  lease_failed: { status: 409, meaning: 'a failure was already reported on this lease' },
  job_cancelled: { status: 409, meaning: "the lease's job was cancelled; stop working on it" },
  lease_released: { status: 409, meaning: 'the lease was handed back unused (its claim was never delivered)' },
  // Transport limits.
  request_timeout: { status: 408, meaning: 'the request did not arrive whole within REQUEST_TIMEOUT_SECS' },
  payload_too_large: { status: 413, meaning: 'the body is larger than the server accepts' },
  artifact_too_large: { status: 413, meaning: 'the artifact is larger than MAX_ARTIFACT_BYTES; nothing was stored' },
  range_not_satisfiable: { status: 416, meaning: 'the Range header asks for bytes the artifact does not have' },
  unsupported_media_type: { status: 415, meaning: 'the body is not application/json' },
  headers_too_large: { status: 431, meaning: 'the request headers are larger than the server accepts' },
  internal: { status: 500, meaning: 'a server fault; the server log has the details' },
  // 503: nothing is wrong with the request; the same request may succeed shortly.
  store_unavailable: { status: 503, meaning: 'the database cannot be reached or did not answer in time; retry with backoff' },
  too_many_streams: { status: 503, meaning: 'the server holds MAX_STREAMS open streams already; retry after Retry-After' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Every non-2xx answer (docs/api.md "Errors"). */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  [detail: string]: unknown;
}

/** An error meant for the caller: a catalogue code, a message for a person, optional detail fields. */
export class WeftError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'WeftError';
    this.status = ERROR_CODES[code].status;
  }

  toBody(): ErrorBody {
    return { error: this.code, message: this.message, ...this.details };
  }
}

/** Lease states that end a lease, each answered with its own code when the lease is used again. */
export type SettledLeaseState = 'completed' | 'failed' | 'expired' | 'timed_out' | 'released';

export function settledLeaseCode(state: SettledLeaseState): ErrorCode {
  return `lease_${state}` as const;
}

/**
 * What a worker does with an answer to a lease call (heartbeat, complete, fail, logs):
 * - `cancelled`: the job was cancelled: stop it, report nothing more.
 * - `lease_lost`: the lease is gone (expired, timed out, settled, unknown): stop, report nothing more.
 * - `transient`: no answer, or one that says "try again" (408, 429, 5xx): retry while the lease lasts.
 * - `refused`: the server will not take this request as it is (a 4xx other than the above).
 */
export type LeaseCallOutcome = 'cancelled' | 'lease_lost' | 'transient' | 'refused';

export function classifyAnswer(status: number | null, code: string | null): LeaseCallOutcome {
  if (status === null || isTransientStatus(status)) return 'transient';
  if (code === 'job_cancelled') return 'cancelled';
  if (status === 409) return 'lease_lost';
  return 'refused';
}

/** Statuses that say "try again later": timeouts, throttling, and server or proxy faults. */
export function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * For a report whose first try may have landed without its answer arriving: the code a retry gets
 * when the earlier try did land. Only `lease_completed` / `lease_failed` mean "your report landed";
 * `lease_timed_out` and `lease_expired` mean the server settled the job without it.
 */
export function landedReportCode(outcome: 'complete' | 'fail'): ErrorCode {
  return outcome === 'complete' ? 'lease_completed' : 'lease_failed';
}
