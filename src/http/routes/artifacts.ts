import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { artifactView } from '../../engine/artifacts.js';
import type { Engine } from '../../engine/engine.js';
import { WeftError } from '../../protocol/errors.js';
import { ArtifactList, ArtifactListQuery, ArtifactParams, ArtifactRunParams, ArtifactUploadParams, ArtifactView } from '../../protocol/wire.js';
import { leaseHolder } from '../auth.js';
import { LEASE_ERRORS } from '../route-docs.js';

/**
 * Artifacts (README "Artifacts", docs/api.md "Artifacts"): a worker uploads a file of its lease's
 * attempt as a raw streamed body; anyone who may read downloads it, whole or by Range. Neither
 * direction holds the file in memory: the upload is stored a chunk at a time as it arrives, the
 * download read a chunk at a time as the connection takes it.
 *
 * Job ids in these paths are taken as they come (matrix instances carry `~`): the store answers
 * whether such a job has artifacts. A name is one path segment, URL-encoded (its `/` as %2F); the
 * router decodes it and the engine checks it (domain/artifacts.ts).
 */
const BYTES = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };

export function artifactRoutes(app: FastifyInstance, engine: Engine): void {
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  // The body of an upload goes to the route as the request stream itself, never buffered; no other
  // route takes application/octet-stream.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));

  api.put(
    '/api/jobs/:lease_id/artifacts/:name',
    {
      schema: {
        summary: "Upload a file of the lease's attempt as artifact {name}",
        description:
          'The body is the file, `Content-Type: application/octet-stream`, streamed; `x-weft-sha256` is its SHA-256 (64 lowercase hex ' +
          "digits). `{name}` is the path relative to the job's working directory, URL-encoded as one segment. The lease must be live " +
          "and held by the caller's token when the upload starts and ends. The server hashes as it stores and refuses a mismatch; " +
          'over MAX_ARTIFACT_BYTES it answers 413. Either way nothing is stored. The same name again in the attempt replaces it; ' +
          "only a successful attempt's artifacts are ever listed. Exempt from REQUEST_TIMEOUT_SECS; cut after 60 s without a byte.",
        tags: ['artifacts'],
        params: ArtifactUploadParams,
        docs: {
          answers: { 201: { description: 'Stored', schema: ArtifactView } },
          errors: [
            'invalid_artifact_name',
            'artifact_checksum_mismatch',
            'artifact_too_large',
            'unsupported_media_type',
            'lease_not_yours',
            'job_cancelled',
            ...LEASE_ERRORS,
          ],
          headers: {
            type: 'object',
            required: ['x-weft-sha256'],
            properties: { 'x-weft-sha256': { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the body, as the uploader computed it' } },
          },
        },
      },
    },
    async (req, reply) => {
      const body = req.body as unknown;
      if (!body || typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') {
        throw new WeftError('invalid_request', 'an artifact upload must be sent with Content-Type: application/octet-stream and the file as its body');
      }
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > engine.artifacts.maxBytes) {
        throw new WeftError('artifact_too_large', `the upload declares ${declared} bytes; MAX_ARTIFACT_BYTES is ${engine.artifacts.maxBytes}; nothing was stored`);
      }
      exemptFromRequestTimeout(req.raw);
      const sha = req.headers['x-weft-sha256'];
      const view = await engine.artifacts.upload(
        req.params.lease_id,
        req.params.name,
        typeof sha === 'string' ? sha.toLowerCase() : undefined,
        body as AsyncIterable<Uint8Array>,
        leaseHolder(req),
      );
      return reply.code(201).send(view);
    },
  );

  api.get(
    '/api/workflows/:wf_id/runs/:run/artifacts',
    {
      schema: {
        summary: "A run's artifacts",
        description: "Of the jobs that succeeded, by job then name; `job` keeps one job's. A re-run's kept jobs list those of the run they were kept from.",
        tags: ['artifacts'],
        params: ArtifactRunParams,
        querystring: ArtifactListQuery,
        docs: {
          answers: { 200: { description: 'The artifacts', schema: ArtifactList } },
          errors: ['workflow_not_found', 'run_not_found'],
        },
      },
    },
    async (req): Promise<ArtifactList> => {
      const { wf_id, run } = req.params;
      const artifacts = await engine.readStore(async (r) => {
        const wf = await r.getWorkflow(wf_id);
        if (!wf) throw new WeftError('workflow_not_found', `no workflow "${wf_id}"`);
        if (!(await r.getRun(wf_id, run))) throw new WeftError('run_not_found', `workflow "${wf_id}" has no run #${run} (latest is ${wf.latest_run || 'none'})`);
        return r.listArtifacts(wf_id, run, req.query.job);
      });
      return { workflow_id: wf_id, run_number: run, artifacts: artifacts.map(artifactView) };
    },
  );

  api.get(
    '/api/workflows/:wf_id/runs/:run/artifacts/:job_id/:name',
    {
      schema: {
        summary: 'Download an artifact (Range supported)',
        description:
          'The bytes, streamed, as an attachment, with `x-weft-sha256`, `ETag` and `Accept-Ranges: bytes`. One `Range` (`bytes=a-b`, ' +
          '`bytes=a-`, `bytes=-n`) answers 206 with `Content-Range`; a range past the end answers 416; several ranges get the whole file.',
        tags: ['artifacts'],
        params: ArtifactParams,
        docs: {
          answers: {
            200: { description: 'The whole artifact', content: BYTES },
            206: { description: 'The requested range', content: BYTES },
          },
          errors: ['artifact_not_found', 'range_not_satisfiable'],
        },
      },
    },
    async (req, reply) => {
      const a = await engine.artifacts.find(req.params.wf_id, req.params.run, req.params.job_id, req.params.name);
      const range = parseRange(req.headers.range, a.size);
      if (range === 'unsatisfiable') {
        void reply.header('content-range', `bytes */${a.size}`);
        throw new WeftError('range_not_satisfiable', `Range "${String(req.headers.range)}" asks for bytes outside the artifact's ${a.size}`);
      }
      const [start, end] = range ?? [0, a.size - 1];
      void reply
        .header('accept-ranges', 'bytes')
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(Math.max(0, end - start + 1)))
        .header('content-disposition', contentDisposition(a.name))
        .header('x-weft-sha256', a.sha256)
        .header('etag', `"${a.sha256}"`)
        // An artifact is never run or shown by the browser on this origin: it is a download.
        .header('content-security-policy', "default-src 'none'; sandbox");
      if (range) void reply.code(206).header('content-range', `bytes ${start}-${end}/${a.size}`);
      return reply.send(Readable.from(engine.artifacts.bytes(a, start, end), { objectMode: false, highWaterMark: 1 }));
    },
  );
}

/** How long an upload may go without a byte arriving before its connection is closed. */
const UPLOAD_IDLE_MS = 60_000;

/**
 * REQUEST_TIMEOUT_SECS bounds how long a whole request may take to arrive (README "Limits"), which a
 * large artifact rightly exceeds. An authenticated upload (the hooks have run) is taken out of that
 * check, leaving Node's parser of this one request off the list of connections it watches (it joins
 * again with the next request on the connection); instead, an upload that stalls for
 * UPLOAD_IDLE_MS is cut. `remove` is the parser's own method (Node 18.14+); without it the upload
 * stays bounded by REQUEST_TIMEOUT_SECS.
 */
function exemptFromRequestTimeout(raw: IncomingMessage): void {
  const parser = (raw.socket as unknown as { parser?: { remove?: () => void } }).parser;
  if (typeof parser?.remove === 'function') parser.remove();
  raw.setTimeout(UPLOAD_IDLE_MS, () => raw.destroy(new Error(`no upload bytes for ${UPLOAD_IDLE_MS / 1000} s`)));
}

/**
 * One `bytes=` range (RFC 9110 14.1.2): `a-b`, `a-` or `-n`; null for no header or one this does not
 * take (several ranges, another unit), which is answered with the whole artifact as the RFC allows.
 */
export function parseRange(header: string | undefined, size: number): [number, number] | null | 'unsatisfiable' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return [start, end];
}

/** `attachment` with the name's last segment, ASCII-safe and RFC 5987 encoded. */
function contentDisposition(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const ascii = base.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(base)}`;
}
