/**
 * The ceiling: a bare node:http server speaking just enough of the worker protocol for the load
 * generators, with no routing framework, validation or storage. Whatever weft reaches is read as a
 * fraction of this, measured on the same machine in the same run with the same clients.
 *
 * It still reads and parses every request body, because any real server must; the answers are
 * fixed documents shaped and sized like weft's. After CEILING_JOBS jobs it answers null (or an empty
 * `claims`), which ends the load generators' loops exactly as a drained weft queue does.
 */
import http from 'node:http';

const jobs = Number(process.env.CEILING_JOBS ?? '0');
let handedOut = 0;

const CLAIM = Buffer.from(
  JSON.stringify({
    job: {
      job_id: 'j00000', workflow_id: 'bench-0', command: 'true', required_labels: [],
      retry_policy: { max_retries: 0, backoff: 'None' }, attempt: 0, upstream_outputs: {},
      enqueued_at_ms: 1795650000000, delayed_until_ms: 0, run_number: 1, name: 'j00000', env: {}, timeout_secs: null,
    },
    lease: {
      lease_id: '00000000-0000-4000-8000-000000000000', job_id: 'j00000', workflow_id: 'bench-0', worker_id: 'lg0-0',
      ttl_secs: 60, granted_at_ms: 1795650000000, expires_at_ms: 1795650060000,
    },
  }),
);
const NULL = Buffer.from('null');
const OK = Buffer.from(JSON.stringify({ ok: true, status: 'success', enqueued: [] }));
const NOT_FOUND = Buffer.from(JSON.stringify({ error: 'not_found', message: 'no such route on the ceiling server' }));

function answer(res: http.ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}

const CLAIM_TEXT = CLAIM.toString('utf8');
const RESULT_TEXT = JSON.stringify({ lease_id: '00000000-0000-4000-8000-000000000000', ok: true, status: 'success' });

/** Hands out up to `max` jobs of what is left, as the batched endpoints' `claims` array. */
function takeClaims(max: unknown): string {
  const n = Math.max(0, Math.min(typeof max === 'number' ? max : 1, jobs - handedOut));
  handedOut += n;
  return `[${Array(n).fill(CLAIM_TEXT).join(',')}]`;
}

type Body = { max_jobs?: unknown; reports?: unknown[]; claim?: { max_jobs?: unknown } } | undefined;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: Body;
    try {
      if (chunks.length > 0) body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
    } catch {
      return answer(res, 400, NOT_FOUND);
    }
    const url = req.url ?? '';
    if (req.method !== 'POST') return answer(res, 404, NOT_FOUND);
    if (url === '/api/jobs/claim') {
      if (handedOut >= jobs) return answer(res, 200, NULL);
      handedOut++;
      return answer(res, 200, CLAIM);
    }
    if (url === '/api/workers/register' || (url.startsWith('/api/jobs/') && url.endsWith('/complete'))) {
      return answer(res, 200, OK);
    }
    // The batched protocol too, so that its client code path runs (and has a ceiling) before weft has it.
    if (url === '/api/jobs/claim-batch') return answer(res, 200, Buffer.from(`{"claims":${takeClaims(body?.max_jobs)}}`));
    if (url === '/api/jobs/report-batch') {
      const results = Array(Array.isArray(body?.reports) ? body.reports.length : 0).fill(RESULT_TEXT).join(',');
      const claims = body?.claim ? takeClaims(body.claim.max_jobs) : '[]';
      return answer(res, 200, Buffer.from(`{"results":[${results}],"claims":${claims}}`));
    }
    return answer(res, 404, NOT_FOUND);
  });
});
// The load generators keep their connections across the short pause between registering and `go`.
server.keepAliveTimeout = 120_000;
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  process.stdout.write(`ceiling server listening on http://127.0.0.1:${port}\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
