/**
 * The graph's nodes (README "Dashboard"): a job, a matrix group (groups.ts), a fold of jobs
 * (folds.ts), and the box of an expanded fold. Each is a button: Enter or a click opens a job or a
 * group, and expands or folds a fold. Every node carries `data-node-id` (for the arrow keys) and
 * `data-state`; jobs and groups also `data-job-id`.
 */
import { Component } from 'preact';
import type { JobView } from '../../protocol/wire.js';
import { STATE_ICON, duration, useNow } from '../format';
import type { GroupSummary } from '../groups';
import type { Fold, FoldedNode } from '../folds';
import { BOX_HEAD, BOX_PAD, NODE_H, NODE_W, memberAt, type Box } from '../graph-layout';
import { STATE_ORDER } from './common';
import { workflowHref } from '../router';

/**
 * At most `n` characters, cut in the middle: names that differ only at the end ("Integration tests
 * shard 17") stay told apart. The whole name is the node's label and tooltip.
 */
function clip(s: string, n: number): string {
  if (s.length <= n) return s;
  const head = Math.ceil((n - 1) * 0.55);
  return `${s.slice(0, head)}…${s.slice(s.length - (n - 1 - head))}`;
}

/** The attempt's running time, after a separator; nothing (no stray separator) when it has none. */
function Elapsed({ job }: { job: JobView }) {
  const running = job.state === 'running';
  const now = useNow(running);
  const text = running && job.started_at_ms != null ? duration(now - job.started_at_ms) : duration(job.duration_ms);
  return text ? <> · {text}</> : null;
}

/** A button of the graph: Enter and Space act as a click, the arrows walk the graph. */
function keys(id: string, act: (id: string) => void, onArrow: (id: string, key: string) => void) {
  return (e: KeyboardEvent) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      act(id);
    } else if (e.key.startsWith('Arrow')) {
      e.preventDefault();
      onArrow(id, e.key);
    }
  };
}

/** A fold's jobs by name, for its tooltip: the full names hidden behind its count. */
function foldTitle(fold: Fold): string {
  const n = fold.members.length;
  const what = fold.kind === 'chain' ? `${n} jobs one after the other` : `${n} jobs${fold.needs.length ? ` needing ${fold.needs.join(', ')}` : ' without needs'}`;
  const shown = fold.members.slice(0, 40).map((j) => `${j.name}: ${j.state}`);
  return `${what}:\n${shown.join('\n')}${n > shown.length ? `\n… and ${n - shown.length} more` : ''}`;
}

interface NodeProps {
  node: FoldedNode;
  x: number;
  y: number;
  selected: boolean;
  /** A click or Enter: open a job or group, expand or fold a fold. */
  onOpen(id: string): void;
  /** An arrow key on this node: focus the nearest node that way. */
  onArrow(id: string, key: string): void;
}

/** Whether two renderings of a node show the same thing: its job entry (replaced whole by every change), or each of its jobs'. */
function sameNode(a: FoldedNode, b: FoldedNode): boolean {
  if (a.job || b.job) return a.job === b.job;
  const x = a.group?.instances ?? a.fold!.members;
  const y = b.group?.instances ?? b.fold!.members;
  return x.length === y.length && x.every((j, i) => j === y[i]) && a.fold?.expanded === b.fold?.expanded;
}

/** Redrawn only when what it shows or the selection changes. */
export class Node extends Component<NodeProps> {
  override shouldComponentUpdate(next: NodeProps): boolean {
    const p = this.props;
    return !sameNode(next.node, p.node) || next.selected !== p.selected || next.x !== p.x || next.y !== p.y;
  }
  override render({ node, x, y, selected, onOpen, onArrow }: NodeProps) {
    const { job, fold } = node;
    const group = node.group ?? fold?.summary;
    const count = group?.instances.length ?? 0;
    const label = fold
      ? `${node.name}: ${count} jobs folded, ${group!.done} done, ${node.state}; Enter shows them`
      : group
        ? `${node.name}: ${group.done} of ${count} instances done, ${node.state}`
        : `${job!.name}: ${job!.state}, attempt ${job!.attempt + 1}/${job!.max_retries + 1}`;
    return (
      <g
        class={`node st-${node.state}${group ? ' group' : ''}${fold ? ' fold' : ''}${selected ? ' selected' : ''}`}
        transform={`translate(${x},${y})`}
        data-node-id={node.id}
        {...(fold ? { 'data-fold': fold.kind, 'aria-expanded': 'false' } : { 'data-job-id': node.id })}
        data-state={node.state}
        {...(group ? { 'data-instances': String(count), 'data-done': String(group.done) } : {})}
        // SVG attributes are case-sensitive: `tabIndex` would not make the node focusable.
        tabindex={0}
        role="button"
        aria-label={label}
        onClick={() => onOpen(node.id)}
        onKeyDown={keys(node.id, onOpen, onArrow)}
      >
        <title>{fold ? foldTitle(fold) : group ? `${node.id}: ${count} instances` : `${job!.name === node.id ? node.id : `${job!.name} (${node.id})`}: ${node.state}`}</title>
        {group && <rect class="stack" x={5} y={-5} width={NODE_W} height={NODE_H} rx={6} />}
        <rect width={NODE_W} height={NODE_H} rx={6} />
        <text x={10} y={19} class="name">
          {fold && <tspan class="meta">▸ </tspan>}
          {clip(node.name, fold ? 16 : 24)}
          {group && <tspan class="meta"> ×{count}</tspan>}
        </text>
        {group ? <GroupLines group={group} state={node.state} /> : <JobLines job={job!} />}
      </g>
    );
  }
}

function JobLines({ job }: { job: JobView }) {
  // The attempt only once there was a retry: a first try that worked is not "1/4".
  const attempts = job.attempt > 0 ? ` · try ${job.attempt + 1}/${job.max_retries + 1}` : '';
  return (
    <>
      <text x={10} y={37} class="state">
        {STATE_ICON[job.state]} {job.state}
        <tspan class="meta">
          {attempts}
          <Elapsed job={job} />
        </tspan>
      </text>
      {job.uses !== undefined ? <CallLine job={job} /> : (
        <text x={10} y={54} class="meta">
          {job.worker_id ? clip(job.worker_id, 28) : ' '}
        </text>
      )}
    </>
  );
}

/**
 * A job that calls a workflow (README "Workflows calling workflows"): which one, and once its run
 * started, a link that opens that run (the job's panel has the same link for the keyboard).
 */
function CallLine({ job }: { job: JobView }) {
  const child = job.child_run;
  if (!child) return <text x={10} y={54} class="meta">calls {clip(job.uses!, 22)}</text>;
  return (
    <a
      class="child-run"
      href={workflowHref(child.workflow_id, child.run_number)}
      tabindex={-1}
      data-child-run={`${child.workflow_id}/${child.run_number}`}
      // The node itself opens the job's panel; this link opens the called run instead.
      onClick={(e) => e.stopPropagation()}
    >
      <title>Open run {child.run_number} of {child.workflow_id}</title>
      <text x={10} y={54} class="meta">
        ↗ {clip(child.workflow_id, 18)} run {child.run_number}
      </text>
    </a>
  );
}

/** The state counts of a group's or fold's jobs, each with its count. */
function countsText(group: GroupSummary): string {
  return STATE_ORDER.filter((s) => (group.counts[s] ?? 0) > 0)
    .map((s) => `${STATE_ICON[s]}${group.counts[s]}`)
    .join('  ');
}

/** `n/N done` and the instances' states, each with its count. */
function GroupLines({ group, state }: { group: GroupSummary; state: string }) {
  return (
    <>
      <text x={10} y={37} class="state">
        {STATE_ICON[state]} {group.done}/{group.instances.length} done
      </text>
      <text x={10} y={54} class="meta">
        {countsText(group)}
      </text>
    </>
  );
}

/**
 * An expanded fold: a box around its jobs (drawn by the graph as nodes of their own), headed by a
 * button that folds them again. A chain's jobs are in order along the rows, an arrow between each.
 */
export function FoldBox({ node, box, onOpen, onArrow }: { node: FoldedNode; box: Box; onOpen(id: string): void; onArrow(id: string, key: string): void }) {
  const fold = node.fold!;
  const n = fold.members.length;
  const arrows = [];
  if (fold.kind === 'chain') {
    for (let i = 0; i + 1 < n; i++) {
      if ((i + 1) % box.cols === 0) continue;
      const a = memberAt(box, i);
      const y = a.y + NODE_H / 2;
      arrows.push(<path key={i} d={`M${a.x + NODE_W},${y}H${memberAt(box, i + 1).x}`} marker-end="url(#arrow)" />);
    }
  }
  return (
    <g class={`fold-box st-${node.state}`} data-fold-box={node.id}>
      <rect class="box" x={box.x} y={box.y} width={box.w} height={box.h} rx={8} />
      <g
        class="fold-head"
        transform={`translate(${box.x + BOX_PAD},${box.y + BOX_PAD})`}
        data-node-id={node.id}
        data-state={node.state}
        tabindex={0}
        role="button"
        aria-expanded="true"
        aria-label={`${node.name}: ${n} jobs, ${fold.summary.done} done; Enter folds them`}
        onClick={() => onOpen(node.id)}
        onKeyDown={keys(node.id, onOpen, onArrow)}
      >
        <title>{foldTitle(fold)}</title>
        <rect width={box.w - 2 * BOX_PAD} height={BOX_HEAD - 6} rx={4} />
        <text x={8} y={17}>
          ▾ {node.name} <tspan class="meta">×{n} · {fold.summary.done}/{n} done · {countsText(fold.summary)} · fold</tspan>
        </text>
      </g>
      {arrows.length > 0 && <g class="links">{arrows}</g>}
    </g>
  );
}
