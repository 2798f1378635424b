/**
 * The run's jobs as a list (README "Dashboard"): every job by its full name with its state, attempt,
 * time and worker, narrowed by state and by text. Where a graph of hundreds of jobs is a strip of
 * boxes, this is where the failed one is found; a row opens the job's panel.
 */
import { useMemo, useState } from 'preact/hooks';
import type { JobView } from '../../protocol/wire.js';
import { duration, useNow } from '../format';
import { StateBadge, STATE_ORDER } from './common';

export function JobList({
  jobs,
  state,
  onState,
  selected,
  onOpen,
}: {
  jobs: JobView[];
  /** Only jobs in this state; '' for all. */
  state: string;
  onState(state: string): void;
  selected: string | null;
  onOpen(id: string): void;
}) {
  const [text, setText] = useState('');
  const now = useNow(jobs.some((j) => j.state === 'running'));
  const shown = useMemo(() => {
    const t = text.trim().toLowerCase();
    return jobs.filter((j) => (state === '' || j.state === state) && (t === '' || j.name.toLowerCase().includes(t) || j.id.toLowerCase().includes(t)));
  }, [jobs, state, text]);
  return (
    <section class="job-list" aria-label="Jobs">
      <div class="toolbar">
        <label>
          State{' '}
          <select value={state} onChange={(e) => onState(e.currentTarget.value)}>
            <option value="">all</option>
            {STATE_ORDER.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <input type="search" placeholder="Filter by name" aria-label="Filter jobs by name" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        <span class="muted small">
          {shown.length} of {jobs.length} jobs
        </span>
      </div>
      <table class="list">
        <thead>
          <tr>
            <th>Job</th>
            <th>State</th>
            <th>Try</th>
            <th>Time</th>
            <th>Worker</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((j) => (
            <tr key={j.id} data-job-row={j.id} class={[j.id === selected ? 'selected' : '', j.state === 'awaiting_approval' ? 'awaiting' : ''].filter(Boolean).join(' ') || undefined}>
              <td>
                <a
                  href="#"
                  onClick={(e) => {
                    e.preventDefault();
                    onOpen(j.id);
                  }}
                >
                  {j.name}
                </a>
                {j.name !== j.id && <span class="muted small"> {j.id}</span>}
              </td>
              <td>
                <StateBadge state={j.state} />
              </td>
              <td>{j.attempt > 0 ? `${j.attempt + 1}/${j.max_retries + 1}` : ''}</td>
              <td>{j.state === 'running' && j.started_at_ms != null ? duration(now - j.started_at_ms) : duration(j.duration_ms)}</td>
              <td>{j.worker_id ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
