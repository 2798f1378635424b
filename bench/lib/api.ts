/** The orchestrator's own calls to a server (creating and running workflows, probes). */
import { request } from 'undici';

export interface ApiAnswer {
  status: number;
  text: string;
  json: unknown;
}

export async function api(origin: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<ApiAnswer> {
  const r = await request(`${origin}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
  const text = await r.body.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // Left undefined: callers that need JSON check the status first and report the text.
  }
  return { status: r.statusCode, text, json };
}

export async function apiOk(origin: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<ApiAnswer> {
  const a = await api(origin, method, path, body);
  if (a.status < 200 || a.status > 299) throw new Error(`${method} ${path} answered ${a.status}: ${a.text.slice(0, 500)}`);
  return a;
}

export type JobsSpec = Record<string, { run: string; needs?: string[] }>;

/** Creates a workflow in the contract form. */
export async function createWorkflow(origin: string, id: string, jobs: JobsSpec): Promise<void> {
  await apiOk(origin, 'POST', '/api/workflows', { id, jobs });
}

export async function runWorkflow(origin: string, id: string): Promise<void> {
  const a = await apiOk(origin, 'POST', `/api/workflows/${encodeURIComponent(id)}/run`);
  if (a.status !== 202) throw new Error(`run ${id} answered ${a.status}, expected 202`);
}

/**
 * Queues `total` independent no-op jobs through the API: several workflows (a run enqueues all its
 * roots in one transaction, and a single huge workflow would be an unusual shape), all created first
 * and then run, so every job is queued before the load generators start.
 */
export async function seedRootJobs(origin: string, total: number, perWorkflow = 2000): Promise<{ workflows: number; ms: number }> {
  const t0 = Date.now();
  const ids: string[] = [];
  for (let start = 0, w = 0; start < total; start += perWorkflow, w++) {
    const jobs: JobsSpec = {};
    for (let i = start; i < Math.min(total, start + perWorkflow); i++) jobs[`j${String(i).padStart(6, '0')}`] = { run: 'true' };
    const id = `bench-${w}`;
    await createWorkflow(origin, id, jobs);
    ids.push(id);
  }
  for (const id of ids) await runWorkflow(origin, id);
  return { workflows: ids.length, ms: Date.now() - t0 };
}
