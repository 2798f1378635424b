/** The workers the server knows: labels, status, the job each holds (linked) and when it was last seen. */
import { useEffect, useState } from 'preact/hooks';
import type { CurrentJob, WorkerView } from '../../protocol/wire.js';
import { api, SERVER } from '../api';
import { ago, useNow } from '../format';
import { workflowHref } from '../router';
import { ErrorLine, StateBadge } from './common';

const POLL_MS = 3000;

export function WorkersView() {
  const [workers, setWorkers] = useState<WorkerView[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const now = useNow();
  useEffect(() => {
    let gone = false;
    // No stream of worker changes exists; the list is small, so it is polled.
    const load = () =>
      api<WorkerView[]>('/api/workers')
        .then((w) => {
          if (!gone) {
            setWorkers(w);
            setError(null);
          }
        })
        .catch((err) => !gone && setError(err));
    void load();
    const t = setInterval(load, POLL_MS);
    return () => {
      gone = true;
      clearInterval(t);
    };
  }, []);
  return (
    <section aria-labelledby="workers-title">
      <h1 id="workers-title">Workers</h1>
      <ErrorLine error={error} />
      {workers === null ? (
        <p class="muted">Loading…</p>
      ) : workers.length === 0 ? (
        <div class="muted">
          <p>No worker has registered yet. Start one where jobs should run (it asks this server for jobs):</p>
          <pre class="command">SERVER_URL={SERVER} weft worker</pre>
          <p>
            Add <code>WORKER_LABELS=linux,gpu</code> to take jobs that need labels, and <code>WEFT_TOKEN</code> when the server
            requires tokens (README "The worker").
          </p>
        </div>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th>Worker</th>
              <th>Labels</th>
              <th>Status</th>
              <th>Current job</th>
              <th>Last seen</th>
            </tr>
          </thead>
          <tbody>
            {workers.map((w) => (
              <tr key={w.worker_id} data-worker-id={w.worker_id}>
                <td>
                  <code>{w.worker_id}</code>
                </td>
                <td>{w.labels.length ? w.labels.join(', ') : <span class="muted">none</span>}</td>
                <td>
                  <StateBadge state={w.status} />
                </td>
                <td>
                  {heldJobs(w).length === 0 ? (
                    <span class="muted">—</span>
                  ) : (
                    heldJobs(w).map((l) => (
                      <div key={`${l.workflow_id}/${l.run_number}/${l.job_id}`}>
                        <a href={workflowHref(l.workflow_id, l.run_number, l.job_id)}>
                          {l.workflow_id} / {l.job_id}
                        </a>{' '}
                        <span class="muted small">
                          run {l.run_number}, attempt {l.attempt + 1}
                        </span>
                      </div>
                    ))
                  )}
                </td>
                <td title={new Date(w.last_seen_ms).toLocaleString()}>{ago(w.last_seen_ms, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Every job the worker holds: `current_jobs`, which any token sees (older servers send only their leases). */
function heldJobs(w: WorkerView): CurrentJob[] {
  return w.current_jobs ?? w.current_leases;
}
