/**
 * Talking to a weft server (README "Dashboard"): which server, the bearer token, JSON calls. The page
 * talks to the server that served it unless the person confirmed another one in the page: a link
 * with `?server=URL` only asks (it could come from anyone, and the server named gets every request
 * and the token typed into the page), and nothing is sent anywhere while it asks. A confirmed server
 * is remembered in the browser; `?server=` with no value returns to the page's own server.
 * A 401 asks the person for a token once, whatever number of calls were waiting for it.
 */
const CONFIRMED_KEY = 'weft.server.confirmed';
/** Where earlier versions kept any `?server=` without asking: never trusted, removed on sight. */
const UNCONFIRMED_KEY = 'weft.server';

export const OWN_SERVER = location.origin;

/** An http(s) address without credentials, query or fragment and without a trailing slash; else null. */
export function serverAddress(given: string): string | null {
  try {
    const u = new URL(given);
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.username !== '' || u.password !== '') return null;
    return (u.origin + u.pathname).replace(/\/+$/, '');
  } catch {
    return null;
  }
}

function stored(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function store(key: string, value: string | null): void {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // Storage may be off (private windows); the choice then lasts for this page only.
  }
}

/** The address bar without `?server=`, so a reload or a copied link does not ask again. */
function dropServerParam(): void {
  const q = new URLSearchParams(location.search);
  q.delete('server');
  const search = q.toString();
  history.replaceState(history.state, '', `${location.pathname}${search ? `?${search}` : ''}${location.hash}`);
}

/** A `?server=` waiting for the person's answer; `address` is null when the value is not an http(s) URL. */
export interface ServerRequest {
  given: string;
  address: string | null;
}

function pickServer(): { server: string; asking: ServerRequest | null } {
  store(UNCONFIRMED_KEY, null);
  const confirmed = stored(CONFIRMED_KEY);
  const current = confirmed !== null && serverAddress(confirmed) === confirmed ? confirmed : OWN_SERVER;
  const given = new URLSearchParams(location.search).get('server');
  if (given === null) return { server: current, asking: null };
  const address = given === '' ? OWN_SERVER : serverAddress(given);
  if (address === OWN_SERVER) {
    store(CONFIRMED_KEY, null);
    dropServerParam();
    return { server: OWN_SERVER, asking: null };
  }
  if (address === current) {
    dropServerParam();
    return { server: current, asking: null };
  }
  return { server: current, asking: { given, address } };
}

const picked = pickServer();
/** The server every call goes to; changes only when the person confirms another one. */
export let SERVER = picked.server;
let asking = picked.asking;

/** The `?server=` this page was opened with, while the person has not answered it. */
export function serverRequest(): ServerRequest | null {
  return asking;
}

/** The person's answer to serverRequest(): connect to it (remembered), or stay where the page is. */
export function answerServerRequest(connect: boolean): void {
  if (asking === null) return;
  if (connect && asking.address !== null) {
    SERVER = asking.address;
    store(CONFIRMED_KEY, SERVER);
  }
  asking = null;
  dropServerParam();
}

function tokenKey(): string {
  return `weft.token:${SERVER}`;
}

export function currentToken(): string | null {
  try {
    return sessionStorage.getItem(tokenKey());
  } catch {
    return memoryToken;
  }
}
let memoryToken: string | null = null;

function saveToken(token: string | null): void {
  memoryToken = token;
  try {
    if (token === null) sessionStorage.removeItem(tokenKey());
    else sessionStorage.setItem(tokenKey(), token);
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
