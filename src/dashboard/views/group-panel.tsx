/**
 * A matrix or fan-out job of the displayed run (README "Matrix, fan-out and artifacts"): how many of
 * its instances are done, their state counts, and each instance with its values, state and worker,
 * one click from its own job panel.
 */
import type { StatusDocument } from '../../protocol/wire.js';
import type { GroupSummary } from '../groups';
import { workflowHref } from '../router';
import { JobCounts, StateBadge } from './common';

/** `run`: the run in the address (null while following the latest), kept by the links. */
export function GroupPanel({ doc, run, id, name, group }: { doc: StatusDocument; run: number | null; id: string; name: string; group: GroupSummary }) {
  return (
    <aside class="panel" aria-label={`Job ${id}`}>
      <div class="panel-head">
        <h2>
          {name} <span class="muted small">{group.instances.length} instances</span>
        </h2>
        <a class="close" href={workflowHref(doc.id, run)} aria-label="Close job panel">
          ×
        </a>
      </div>
      <p>
        {group.done}/{group.instances.length} done <JobCounts counts={group.counts} />
      </p>
      <table class="list instances">
        <thead>
          <tr>
            <th>Instance</th>
            <th>State</th>
            <th>Worker</th>
          </tr>
        </thead>
        <tbody>
          {group.instances.map((j) => (
            <tr key={j.id} data-instance={j.id}>
              <td>
                <a href={workflowHref(doc.id, run, j.id)}>{j.name}</a> <span class="muted small">{j.id}</span>
              </td>
              <td>
                <StateBadge state={j.state} />
              </td>
              <td class="muted">{j.worker_id ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </aside>
  );
}
