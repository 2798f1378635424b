/**
 * Every workflow, a page at a time (the list API pages with limit/offset): status, latest run, trigger,
 * job counts, last change, Run and Cancel. The list is read as summaries (`jobs=false`: job counts, not
 * jobs, so a page of large workflows stays small) and kept current by `GET /api/events`, whose
 * `workflow` events carry the same summaries, or by polling a server that has no such stream. An older
 * server that ignores `jobs=false` answers whole documents, whose jobs are counted here instead.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { StatusDocument, WorkflowSummary } from '../../protocol/wire.js';
import { api, ApiError, enc, post } from '../api';
import { RunInputsForm, startRun, type DeclaredInput } from './run-inputs';
import { openStream } from '../sse';
import { ago, nextFire, stamp, useNow } from '../format';
import { triggerText } from '../triggers';
import { go, workflowHref } from '../router';
import { countStates, ErrorLine, JobCounts, StateBadge } from './common';

/** A list item as a server answers it: a summary, or (an older server) the whole status document. */
type ListItem = WorkflowSummary | StatusDocument;

function jobCounts(w: ListItem): Record<string, number> {
  return 'job_counts' in w ? (w.job_counts as Record<string, number>) : countStates(w.jobs);
}

const PAGE = 50;
/** Set once the server answered `jobs=false` with 400: an older weft, asked for whole documents from then on. */
let summariesRefused = false;
const POLL_MS = 3000;
/** A failed read of the list is tried again after this long, doubling up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 5000;
const FILTERS = ['', 'running', 'queued', 'pending', 'success', 'failed', 'skipped', 'cancelled'];

/** The latest time the item tells of: an edit, the run's start or end (and, from a whole document, its jobs'). */
function lastChange(w: ListItem): number {
  const times = [Date.parse(w.updated_at), w.run?.created_at_ms ?? 0, w.run?.finished_at_ms ?? 0];
  if ('jobs' in w) for (const j of w.jobs) times.push(j.finished_at_ms ?? 0, j.started_at_ms ?? 0);
  return Math.max(...times.filter((t) => Number.isFinite(t)));
}

function setQuery(q: Record<string, string>): void {
  const p = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== '' && v !== '0'));
  const s = p.toString();
  go(s ? `#/?${s}` : '#/');
}

export function WorkflowsView({ query }: { query: URLSearchParams }) {
  const status = query.get('status') ?? '';
  const search = query.get('q') ?? '';
  const page = Math.max(0, Number(query.get('page') ?? 0) || 0);
  const [items, setItems] = useState<ListItem[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [searchText, setSearchText] = useState(search);
  const [reload, setReload] = useState(0);
  const now = useNow();
  const loadSeq = useRef(0);

  useEffect(() => setSearchText(search), [search]);

  useEffect(() => {
    const seq = ++loadSeq.current;
    const filter = status ? `&status=${enc(status)}` : '';
    // A failed read is tried again by itself (a server restarting, a network blip), sooner than the
    // event stream's reconnection would bring it back; a stream that connects again reads the list
    // again too, since events were missed meanwhile.
    let failed = false;
    let retry: ReturnType<typeof setTimeout> | null = null;
    let retryMs = RETRY_FIRST_MS;
    const load = async () => {
      if (retry) clearTimeout(retry);
      retry = null;
      try {
        // The server filters and pages (`q` matches id or name), so a search costs one page like any other.
        const q = search ? `&q=${enc(search)}` : '';
        const path = `/api/workflows?limit=${PAGE + 1}&offset=${page * PAGE}${filter}${q}`;
        let list: ListItem[];
        try {
          list = await api<ListItem[]>(`${path}${summariesRefused ? '' : '&jobs=false'}`);
        } catch (err) {
          // An older server refuses the parameter it does not know (400): it only lists whole documents.
          if (!(err instanceof ApiError && err.status === 400) || summariesRefused) throw err;
          summariesRefused = true;
          list = await api<ListItem[]>(path);
        }
        if (seq !== loadSeq.current) return;
        setItems(list);
        setError(null);
        failed = false;
        retryMs = RETRY_FIRST_MS;
      } catch (err) {
        if (seq !== loadSeq.current) return;
        setError(err);
        failed = true;
        retry = setTimeout(() => void load(), retryMs);
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      }
    };
    void load();
    let opens = 0;
    let poll: ReturnType<typeof setInterval> | null = null;
    const stream = openStream('/api/events', {
      onOpen() {
        if (opens++ > 0 || failed) void load();
      },
      onEvent(ev) {
        if (ev.event === 'workflow') {
          const doc = JSON.parse(ev.data) as ListItem;
          setItems((cur) => (cur && cur.some((w) => w.id === doc.id) ? cur.map((w) => (w.id === doc.id ? doc : w)) : cur));
        } else if (ev.event === 'resync') {
          void load();
        }
      },
      onMissing() {
        poll = setInterval(() => void load(), POLL_MS);
      },
    });
    return () => {
      loadSeq.current++;
      stream.close();
      if (poll) clearInterval(poll);
      if (retry) clearTimeout(retry);
    };
  }, [status, search, page, reload]);

  const [asking, setAsking] = useState<{ id: string; inputs: Record<string, DeclaredInput> } | null>(null);
  const act = async (id: string, what: 'run' | 'cancel') => {
    try {
      if (what === 'run') {
        // A workflow with inputs asks for them first (RunInputsForm below).
        if (!(await startRun(id, (inputs) => setAsking({ id, inputs })))) return;
      } else {
        await post(`/api/workflows/${enc(id)}/${what}`);
      }
      setReload((n) => n + 1);
    } catch (err) {
      setError(err);
    }
  };

  const shown = items?.slice(0, PAGE) ?? [];
  const hasNext = (items?.length ?? 0) > PAGE;
  return (
    <section aria-labelledby="wf-title">
      <h1 id="wf-title">Workflows</h1>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery({ status, q: searchText.trim() });
        }}
      >
        <label>
          Search{' '}
          <input type="search" placeholder="id or name" value={searchText} onInput={(e) => setSearchText(e.currentTarget.value)} />
        </label>
        <label>
          Jobs in state{' '}
          <select value={status} onChange={(e) => setQuery({ status: e.currentTarget.value, q: search })}>
            {FILTERS.map((f) => (
              <option key={f} value={f}>
                {f === '' ? 'any' : f}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Find</button>
      </form>
      {asking && (
        <RunInputsForm
          id={asking.id}
          inputs={asking.inputs}
          onDone={() => {
            setAsking(null);
            setReload((n) => n + 1);
          }}
          onCancel={() => setAsking(null)}
        />
      )}
      <ErrorLine error={error} />
      {items === null ? (
        <p class="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p class="muted">No workflows{status || search ? ' match' : ' yet'}.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th>Workflow</th>
              <th>Status</th>
              <th class="wide-only">Latest run</th>
              <th class="wide-only">Trigger</th>
              <th class="wide-only">Jobs</th>
              <th class="wide-only">Last change</th>
              <th>
                <span class="sr">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((w) => (
              <tr key={w.id}>
                <td>
                  <a href={workflowHref(w.id)}>{w.id}</a>
                  {w.name !== w.id && <div class="muted small">{w.name}</div>}
                </td>
                <td>
                  <StateBadge state={w.status} />
                </td>
                <td class="wide-only">{w.run_number ? <a href={workflowHref(w.id, w.run_number)}>Run {w.run_number}</a> : <span class="muted">never run</span>}</td>
                <td class="wide-only trigger">
                  {w.trigger ? triggerText(w.trigger) : <span class="muted">—</span>}
                  {w.next_fire_at_ms != null && (
                    <div class="muted small" title={stamp(w.next_fire_at_ms)}>
                      {nextFire(w.next_fire_at_ms, now)}
                    </div>
                  )}
                </td>
                <td class="wide-only">
                  <JobCounts counts={jobCounts(w)} />
                </td>
                <td class="wide-only">{ago(lastChange(w), now)}</td>
                <td class="actions">
                  <button type="button" disabled={w.status === 'running'} onClick={() => act(w.id, 'run')}>
                    Run
                  </button>
                  <button type="button" disabled={w.status !== 'running' && w.status !== 'queued'} onClick={() => act(w.id, 'cancel')}>
                    Cancel
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={page === 0} onClick={() => setQuery({ status, q: search, page: String(page - 1) })}>
          Previous
        </button>
        <span>Page {page + 1}</span>
        <button type="button" disabled={!hasNext} onClick={() => setQuery({ status, q: search, page: String(page + 1) })}>
          Next
        </button>
      </nav>
    </section>
  );
}
