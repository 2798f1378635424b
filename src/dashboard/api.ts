/**
 * Talking to a weft server (README "Dashboard"): which server, the bearer token, JSON calls. The page
 * defaults to the server that served it; `?server=URL` points it at another one and is remembered.
 * A 401 asks the person for a token once, whatever number of calls were waiting for it.
 */
const SERVER_KEY = 'weft.server';

function pickServer(): string {
  const given = new URLSearchParams(location.search).get('server');
  try {
    if (given !== null) {
      if (given === '') localStorage.removeItem(SERVER_KEY);
      else localStorage.setItem(SERVER_KEY, given.replace(/\/+$/, ''));
    }
    return localStorage.getItem(SERVER_KEY) ?? location.origin;
  } catch {
    // Storage may be off (private windows); the query still works for this page.
    return given ? given.replace(/\/+$/, '') : location.origin;
  }
}

export const SERVER = pickServer();
const TOKEN_KEY = `weft.token:${SERVER}`;

export function currentToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return memoryToken;
  }
}
let memoryToken: string | null = null;

function saveToken(token: string | null): void {
  memoryToken = token;
  try {
    if (token === null) sessionStorage.removeItem(TOKEN_KEY);
    else sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // memoryToken keeps it for this page.
  }
}

export interface TokenRequest {
  /** Why the form is shown: no token yet, or the last one was refused. */
  reason: 'required' | 'rejected';
  submit(token: string): void;
}

let pendingAsk: { req: TokenRequest; done: Promise<void> } | null = null;
const askListeners = new Set<(req: TokenRequest | null) => void>();

export function onTokenRequest(fn: (req: TokenRequest | null) => void): () => void {
  askListeners.add(fn);
  fn(pendingAsk?.req ?? null);
  return () => askListeners.delete(fn);
}

/** Resolves once a token was entered; concurrent callers share the one form. */
export function askForToken(rejected: string | null): Promise<void> {
  // A call that sent an older token than the current one just retries with the new one.
  if (rejected !== null && rejected !== currentToken()) return Promise.resolve();
  if (pendingAsk) return pendingAsk.done;
  if (rejected !== null) saveToken(null);
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  const req: TokenRequest = {
    reason: rejected === null ? 'required' : 'rejected',
    submit(token) {
      saveToken(token.trim());
      pendingAsk = null;
      for (const fn of askListeners) fn(null);
      resolve();
    },
  };
  pendingAsk = { req, done };
  for (const fn of askListeners) fn(req);
  return done;
}

export function authHeaders(): Record<string, string> {
  const token = currentToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** fetch against the chosen server with the token; a 401 asks for a token and retries. */
export async function authedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  for (;;) {
    const sent = currentToken();
    const res = await fetch(SERVER + path, { ...init, headers: { ...(init.headers as Record<string, string>), ...authHeaders() } });
    if (res.status !== 401) return res;
    await res.body?.cancel();
    await askForToken(sent);
  }
}

export async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await authedFetch(path, init);
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // An answer that is not JSON (a proxy's error page) is reported by its status below.
  }
  if (!res.ok) {
    const e = (body ?? {}) as { error?: string; message?: string };
    throw new ApiError(res.status, e.error ?? 'http_error', e.message ?? `${res.status} ${res.statusText}`);
  }
  return body as T;
}

export function post<T>(path: string, body?: unknown): Promise<T> {
  if (body === undefined) return api<T>(path, { method: 'POST' });
  return api<T>(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

export const enc = encodeURIComponent;
