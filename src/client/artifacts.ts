/**
 * The artifact calls of the client (README "Artifacts"): bodies stream both ways, so they bypass the
 * JSON transport of client.ts, and carry no timeout of their own (a large file may rightly take long;
 * pass `signal` to bound one).
 */
import type { ArtifactView } from '../domain/artifacts.js';

/** How the calls reach the server: client.ts sends, and turns a failure into its error classes. */
export interface ArtifactTransport {
  send(method: string, path: string, init: RequestInit): Promise<Response>;
}

export interface ArtifactList {
  workflow_id: string;
  run_number: number;
  artifacts: ArtifactView[];
}

const enc = encodeURIComponent;

export function artifactUrlPath(workflowId: string, run: number, jobId: string, name: string): string {
  return `/api/workflows/${enc(workflowId)}/runs/${run}/artifacts/${enc(jobId)}/${enc(name)}`;
}

const send = (t: ArtifactTransport, method: string, path: string, init: RequestInit) => t.send(method, path, init);

/** PUT /api/jobs/{lease_id}/artifacts/{name}: `body` streamed, `sha256` its digest (lowercase hex). */
export async function uploadArtifact(
  t: ArtifactTransport,
  leaseId: string,
  name: string,
  body: AsyncIterable<Uint8Array> | Uint8Array,
  sha256: string,
  opts: { size?: number; signal?: AbortSignal } = {},
): Promise<ArtifactView> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'x-weft-sha256': sha256 };
  if (opts.size !== undefined) headers['content-length'] = String(opts.size);
  const init: RequestInit & { duplex?: 'half' } = {
    headers,
    body: body instanceof Uint8Array ? body : (body as unknown as ReadableStream),
    duplex: 'half',
    signal: opts.signal,
  };
  const res = await send(t, 'PUT', `/api/jobs/${enc(leaseId)}/artifacts/${enc(name)}`, init);
  return (await res.json()) as ArtifactView;
}

/** GET /api/workflows/{id}/runs/{n}/artifacts (one job's with `jobId`). */
export async function listArtifacts(t: ArtifactTransport, workflowId: string, run: number, jobId?: string): Promise<ArtifactList> {
  const q = jobId === undefined ? '' : `?job=${enc(jobId)}`;
  const res = await send(t, 'GET', `/api/workflows/${enc(workflowId)}/runs/${run}/artifacts${q}`, {});
  return (await res.json()) as ArtifactList;
}

/**
 * GET one artifact; the answer's body is the stream of its bytes (206 with `range`, e.g. `bytes=0-99`).
 * `path`: the download path a claim's `downloads` entry names, instead of the four parts.
 */
export async function downloadArtifact(
  t: ArtifactTransport,
  path: string,
  opts: { range?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  return send(t, 'GET', path, { headers: opts.range ? { range: opts.range } : {}, signal: opts.signal });
}
