/**
 * Notifications (README "Notifications"): the webhooks told of run ends, from `GET /api/notifications`.
 * The Notifications page (`#/notifications`) lists them all, newest first, a page at a time, filtered by
 * workflow and state; a run's page lists its own under the graph. Both are polled: deliveries and
 * retries happen on the server's time, with no event to follow.
 */
import { useEffect, useState } from 'preact/hooks';
import type { NotificationView } from '../../protocol/wire.js';
import { enc } from '../api';
import { ago, duration, stamp, useNow } from '../format';
import { go, notificationsHref, workflowHref } from '../router';
import { ErrorLine } from './common';
import { usePolled } from './polled';

const PAGE = 50;
const POLL_MS = 5000;
const STATUSES = ['pending', 'delivering', 'delivered', 'failed'] as const;

/** A notification's state as icon and word, in the colours of the job states it resembles. */
const LOOK: Record<string, { icon: string; cls: string }> = {
  pending: { icon: '◔', cls: 'st-queued' },
  delivering: { icon: '▶', cls: 'st-running' },
  delivered: { icon: '✓', cls: 'st-success' },
  failed: { icon: '✗', cls: 'st-failed' },
};

function NotifyBadge({ status }: { status: string }) {
  const look = LOOK[status] ?? { icon: '?', cls: '' };
  return (
    <span class={`badge ${look.cls}`}>
      <span aria-hidden="true">{look.icon}</span> {status}
    </span>
  );
}


/** Where a notification stands in time: delivered when, next attempt when, or nothing more to come. */
function when(n: NotificationView, now: number) {
  if (n.status === 'delivered' && n.delivered_at_ms !== null) return <span title={stamp(n.delivered_at_ms)}>delivered {ago(n.delivered_at_ms, now)}</span>;
  if (n.status === 'pending' && n.next_attempt_at_ms !== null) {
    const wait = n.next_attempt_at_ms - now;
    return <span title={stamp(n.next_attempt_at_ms)}>{wait <= 1000 ? 'next attempt now' : `next attempt in ${duration(wait)}`}</span>;
  }
  if (n.status === 'failed') return <span class="muted">gave up</span>;
  return <span class="muted">—</span>;
}

function Target({ n }: { n: NotificationView }) {
  return (
    <>
      <code class="notify-url" title={n.url}>
        {n.url}
      </code>
      <div class="muted small">
        {n.target === 'server' ? 'NOTIFY_WEBHOOK' : n.target} · {n.format ?? 'format by URL'}
        {n.signed ? ' · signed' : ''}
      </div>
    </>
  );
}

function NotificationRows({ list, now, withRun }: { list: NotificationView[]; now: number; withRun: boolean }) {
  return (
    <tbody>
      {list.map((n) => (
        <tr key={n.id} data-notification={n.id} data-status={n.status}>
          <td class="wide-only" title={stamp(n.created_at_ms)}>
            {ago(n.created_at_ms, now)}
          </td>
          {withRun && (
            <td>
              <a href={workflowHref(n.workflow_id, n.run_number)}>
                {n.workflow_id} · run {n.run_number}
              </a>{' '}
              <span class="muted small">{n.run_status}</span>
            </td>
          )}
          <td>
            <NotifyBadge status={n.status} />
          </td>
          <td class="wide-only">
            <Target n={n} />
          </td>
          <td class="wide-only">{n.attempts}</td>
          <td>{when(n, now)}</td>
          <td class="notify-error">{n.last_error ?? <span class="muted">—</span>}</td>
        </tr>
      ))}
    </tbody>
  );
}

function Head({ withRun }: { withRun: boolean }) {
  return (
    <thead>
      <tr>
        {/* A phone keeps what says how it went: the run, the state, when, and why not. */}
        <th class="wide-only">Created</th>
        {withRun && <th>Run</th>}
        <th>Status</th>
        <th class="wide-only">Webhook</th>
        <th class="wide-only">Attempts</th>
        <th>When</th>
        <th>Last error</th>
      </tr>
    </thead>
  );
}

/** `#/notifications?workflow=…&status=…&page=…`: every notification, filtered. */
export function NotificationsView({ query }: { query: URLSearchParams }) {
  const workflow = query.get('workflow') ?? '';
  const status = query.get('status') ?? '';
  const page = Math.max(0, Number(query.get('page') ?? 0) || 0);
  const now = useNow();
  const [typed, setTyped] = useState(workflow);
  useEffect(() => setTyped(workflow), [workflow]);
  const params = new URLSearchParams({ limit: String(PAGE + 1), offset: String(page * PAGE) });
  if (workflow) params.set('workflow_id', workflow);
  if (status) params.set('status', status);
  const { list, error } = usePolled<NotificationView[]>(`/api/notifications?${params}`, POLL_MS);
  const shown = list?.slice(0, PAGE) ?? [];
  const to = (over: { workflow?: string; status?: string; page?: number }) => go(notificationsHref({ workflow, status, page: 0, ...over }));
  return (
    <section aria-labelledby="notifications-title">
      <h1 id="notifications-title">Notifications</h1>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          to({ workflow: typed.trim() });
        }}
      >
        <label>
          Workflow <input name="workflow" value={typed} placeholder="any" onInput={(e) => setTyped(e.currentTarget.value)} />
        </label>
        <label>
          Status{' '}
          <select name="status" value={status} onChange={(e) => to({ status: e.currentTarget.value })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorLine error={error} />
      {list === null ? (
        !error && <p class="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="muted">
          {page > 0 || workflow || status
            ? 'No notifications match.'
            : 'No notifications yet. A workflow asks for them with notify: (README "Notifications"), or the server with NOTIFY_WEBHOOK.'}
        </p>
      ) : (
        <table class="list notifications" aria-label="Notifications">
          <Head withRun />
          <NotificationRows list={shown} now={now} withRun />
        </table>
      )}
      <nav class="pager" aria-label="Pages of notifications">
        {page > 0 && <a href={notificationsHref({ workflow, status, page: page - 1 })}>← Newer</a>}
        {(list?.length ?? 0) > PAGE && <a href={notificationsHref({ workflow, status, page: page + 1 })}>Older →</a>}
      </nav>
    </section>
  );
}

/** The notifications of one run, on its page; nothing when it has none. */
export function RunNotifications({ wf, run }: { wf: string; run: number }) {
  const { list, error } = usePolled<NotificationView[]>(`/api/notifications?workflow_id=${enc(wf)}&run=${run}&limit=100`, POLL_MS);
  const now = useNow();
  if (error) return <ErrorLine error={error} />;
  if (!list || list.length === 0) return null;
  return (
    <section class="run-notifications">
      <h2>
        Notifications of run {run} <a class="small" href={notificationsHref({ workflow: wf })}>all of {wf}</a>
      </h2>
      <table class="list notifications" aria-label={`Notifications of run ${run}`}>
        <Head withRun={false} />
        <NotificationRows list={list} now={now} withRun={false} />
      </table>
    </section>
  );
}
