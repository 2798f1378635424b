/** Hash routes, so every view has a URL that can be shared (README "Dashboard"). */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { view: 'workflows'; query: URLSearchParams }
  | { view: 'workflow'; id: string; run: number | null; job: string | null; attempt: number | null; definition: boolean; line: number | null }
  | { view: 'runs'; id: string; page: number }
  | { view: 'workers' }
  | { view: 'secrets' }
  | { view: 'notifications'; query: URLSearchParams }
  | { view: 'unknown'; path: string };

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const [pathPart = '/', queryPart = ''] = raw.split('?', 2);
  const query = new URLSearchParams(queryPart);
  let parts: string[];
  try {
    parts = pathPart.split('/').filter((p) => p !== '').map(decodeURIComponent);
  } catch {
    // A malformed escape (`%E0%A4%A`): no page has that address.
    return { view: 'unknown', path: pathPart };
  }
  if (parts.length === 0) return { view: 'workflows', query };
  if (parts[0] === 'workers' && parts.length === 1) return { view: 'workers' };
  if (parts[0] === 'secrets' && parts.length === 1) return { view: 'secrets' };
  if (parts[0] === 'notifications' && parts.length === 1) return { view: 'notifications', query };
  if (parts[0] === 'workflows' && parts[1] !== undefined && parts[2] === 'runs' && parts.length === 3) {
    return { view: 'runs', id: parts[1], page: Math.max(0, Number(query.get('page') ?? 0) || 0) };
  }
  if (parts[0] === 'workflows' && parts[1] !== undefined) {
    let i = 2;
    let run: number | null = null;
    let job: string | null = null;
    if (parts[i] === 'runs' && /^\d+$/.test(parts[i + 1] ?? '')) {
      run = Number(parts[i + 1]);
      i += 2;
    }
    if (parts[i] === 'jobs' && parts[i + 1] !== undefined) {
      job = parts[i + 1]!;
      i += 2;
    }
    const definition = parts[i] === 'definition';
    if (definition) i++;
    if (i === parts.length) {
      const a = query.get('attempt');
      const attempt = a !== null && /^\d+$/.test(a) ? Number(a) : null;
      const l = query.get('line');
      const line = l !== null && /^[1-9]\d*$/.test(l) ? Number(l) : null;
      return { view: 'workflow', id: parts[1], run, job, attempt, definition, line };
    }
  }
  return { view: 'unknown', path: pathPart };
}

const e = encodeURIComponent;

export function workflowHref(id: string, run?: number | null, job?: string | null, attempt?: number | null): string {
  let h = `#/workflows/${e(id)}`;
  if (run != null) h += `/runs/${run}`;
  if (job != null) h += `/jobs/${e(job)}`;
  if (attempt != null) h += `?attempt=${attempt}`;
  return h;
}

/** A workflow's run history (README "Dashboard"), page `page` (0: the newest runs). */
export function historyHref(id: string, page = 0): string {
  return `#/workflows/${e(id)}/runs${page > 0 ? `?page=${page}` : ''}`;
}

/** The Notifications page (README "Notifications"), filtered by workflow and state, page `page`. */
export function notificationsHref(f: { workflow?: string; status?: string; page?: number } = {}): string {
  const q = new URLSearchParams();
  if (f.workflow) q.set('workflow', f.workflow);
  if (f.status) q.set('status', f.status);
  if (f.page) q.set('page', String(f.page));
  const s = q.toString();
  return `#/notifications${s ? `?${s}` : ''}`;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function go(hash: string): void {
  if (location.hash !== hash) location.hash = hash;
}
