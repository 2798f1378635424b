/**
 * The run's DAG, laid out by dagre and drawn as SVG. Every job is in the page at once, each node
 * carrying `data-job-id` and `data-state` (weft's state). The layout depends only on the jobs and
 * their `depends_on`, so state changes redraw nodes without laying anything out again; panning and
 * zooming change one transform attribute directly, without re-rendering.
 */
import { Component } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef } from 'preact/hooks';
import dagre from '@dagrejs/dagre';
import type { JobView } from '../../protocol/wire.js';
import { STATE_ICON, duration, useNow } from '../format';
import { graphNodes, type GraphNode } from '../groups';
import { STATE_ORDER } from './common';

const NODE_W = 190;
/** Below this scale a node's text cannot be read: a graph that only fits smaller opens at START_SCALE. */
const READABLE_SCALE = 0.45;
const START_SCALE = 0.8;
const NODE_H = 64;

interface Layout {
  width: number;
  height: number;
  nodes: Map<string, { x: number; y: number }>;
  edges: { from: string; to: string; d: string }[];
}

/**
 * dagre's default ranker (network simplex) draws the shortest edges, but on a few hundred jobs it
 * takes seconds; beyond this size each job is ranked by its depth instead, which is what a pipeline's
 * stages are anyway.
 */
const QUICK_RANKING_ABOVE = 150;

function layoutOf(jobs: GraphNode[]): Layout {
  const g = new dagre.graphlib.Graph();
  const ranker = jobs.length > QUICK_RANKING_ABOVE ? 'longest-path' : 'network-simplex';
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 60, marginx: 20, marginy: 20, ranker });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(jobs.map((j) => j.id));
  for (const j of jobs) g.setNode(j.id, { width: NODE_W, height: NODE_H });
  for (const j of jobs) for (const d of j.depends_on) if (ids.has(d)) g.setEdge(d, j.id);
  const t0 = performance.now();
  dagre.layout(g);
  // Read by the browser tests, which report how long a large graph takes.
  (globalThis as { weftLayoutMs?: number }).weftLayoutMs = performance.now() - t0;
  const nodes = new Map<string, { x: number; y: number }>();
  for (const id of g.nodes()) {
    const n = g.node(id);
    nodes.set(id, { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2 });
  }
  const edges = g.edges().map((e) => {
    const pts: { x: number; y: number }[] = g.edge(e).points ?? [];
    const d = pts.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
    return { from: e.v, to: e.w, d };
  });
  const gg = g.graph();
  return { width: gg.width ?? 0, height: gg.height ?? 0, nodes, edges };
}

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

interface NodeProps {
  node: GraphNode;
  x: number;
  y: number;
  selected: boolean;
  onOpen(id: string): void;
  /** An arrow key on this node: focus the nearest node that way. */
  onArrow(id: string, key: string): void;
}

/** Whether two renderings of a node show the same thing: its job entry (replaced whole by every change), or each of its instances'. */
function sameNode(a: GraphNode, b: GraphNode): boolean {
  if (a.job || b.job) return a.job === b.job;
  const x = a.group!.instances;
  const y = b.group!.instances;
  return x.length === y.length && x.every((j, i) => j === y[i]);
}

/** Redrawn only when what it shows or the selection changes. */
class Node extends Component<NodeProps> {
  override shouldComponentUpdate(next: NodeProps): boolean {
    const p = this.props;
    return !sameNode(next.node, p.node) || next.selected !== p.selected || next.x !== p.x || next.y !== p.y;
  }
  override render({ node, x, y, selected, onOpen, onArrow }: NodeProps) {
    const { job, group } = node;
    const label = group
      ? `${node.name}: ${group.done} of ${group.instances.length} instances done, ${node.state}`
      : `${job!.name}: ${job!.state}, attempt ${job!.attempt + 1}/${job!.max_retries + 1}`;
    return (
      <g
        class={`node st-${node.state}${group ? ' group' : ''}${selected ? ' selected' : ''}`}
        transform={`translate(${x},${y})`}
        data-job-id={node.id}
        data-state={node.state}
        {...(group ? { 'data-instances': String(group.instances.length), 'data-done': String(group.done) } : {})}
        // SVG attributes are case-sensitive: `tabIndex` would not make the node focusable.
        tabindex={0}
        role="button"
        aria-label={label}
        onClick={() => onOpen(node.id)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' || e.key === ' ') {
            e.preventDefault();
            onOpen(node.id);
          } else if (e.key.startsWith('Arrow')) {
            e.preventDefault();
            onArrow(node.id, e.key);
          }
        }}
      >
        <title>{group ? `${node.id}: ${group.instances.length} instances` : `${node.id}: ${node.state}`}</title>
        {group && <rect class="stack" x={5} y={-5} width={NODE_W} height={NODE_H} rx={6} />}
        <rect width={NODE_W} height={NODE_H} rx={6} />
        <text x={10} y={19} class="name">
          {clip(node.name, 24)}
          {group && <tspan class="meta"> ×{group.instances.length}</tspan>}
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
      <text x={10} y={54} class="meta">
        {job.worker_id ? clip(job.worker_id, 28) : ' '}
      </text>
    </>
  );
}

/** `n/N done` and the instances' states, each with its count. */
function GroupLines({ group, state }: { group: NonNullable<GraphNode['group']>; state: string }) {
  const parts = STATE_ORDER.filter((s) => (group.counts[s] ?? 0) > 0);
  return (
    <>
      <text x={10} y={37} class="state">
        {STATE_ICON[state]} {group.done}/{group.instances.length} done
      </text>
      <text x={10} y={54} class="meta">
        {parts.map((s) => `${STATE_ICON[s]}${group.counts[s]}`).join('  ')}
      </text>
    </>
  );
}

interface View {
  x: number;
  y: number;
  k: number;
}

export function Graph({ jobs, selected, onOpen }: { jobs: JobView[]; selected: string | null; onOpen(id: string): void }) {
  const nodes = useMemo(() => graphNodes(jobs), [jobs]);
  // Laid out again only when the shape changes, not on state changes.
  const shape = nodes.map((j) => `${j.id}<${j.depends_on.join(',')}`).join(';');
  const layout = useMemo(() => layoutOf(nodes), [shape]);
  const svg = useRef<SVGSVGElement>(null);
  const layer = useRef<SVGGElement>(null);
  const view = useRef<View>({ x: 0, y: 0, k: 1 });

  const apply = () => {
    const v = view.current;
    layer.current?.setAttribute('transform', `translate(${v.x},${v.y}) scale(${v.k})`);
  };
  const fit = () => {
    const el = svg.current;
    if (!el) return;
    const w = el.clientWidth;
    const h = el.clientHeight;
    const k = Math.min(1.2, w / Math.max(layout.width, 1), h / Math.max(layout.height, 1));
    view.current = { k, x: (w - layout.width * k) / 2, y: (h - layout.height * k) / 2 };
    apply();
  };
  const zoom = (factor: number, cx?: number, cy?: number) => {
    const el = svg.current;
    if (!el) return;
    const v = view.current;
    const px = cx ?? el.clientWidth / 2;
    const py = cy ?? el.clientHeight / 2;
    const k = Math.min(4, Math.max(0.02, v.k * factor));
    view.current = { k, x: px - ((px - v.x) * k) / v.k, y: py - ((py - v.y) * k) / v.k };
    apply();
  };

  // Arrow keys walk the graph: left and right to the nearest node of the previous or next stage, up
  // and down within a stage. Nodes keep their first callback, so this reads the layout through a ref.
  const layoutRef = useRef(layout);
  layoutRef.current = layout;
  const arrow = useMemo(
    () => (from: string, key: string) => {
      const nodes = layoutRef.current.nodes;
      const a = nodes.get(from);
      if (!a) return;
      let best: string | null = null;
      let bestCost = Infinity;
      for (const [id, b] of nodes) {
        if (id === from) continue;
        const dx = b.x - a.x;
        const dy = b.y - a.y;
        const ahead = key === 'ArrowRight' ? dx > 1 : key === 'ArrowLeft' ? dx < -1 : key === 'ArrowDown' ? dy > 1 && Math.abs(dx) < 1 : dy < -1 && Math.abs(dx) < 1;
        if (!ahead) continue;
        const cost = key === 'ArrowRight' || key === 'ArrowLeft' ? Math.abs(dx) + 2 * Math.abs(dy) : Math.abs(dy);
        if (cost < bestCost) {
          bestCost = cost;
          best = id;
        }
      }
      if (best !== null) (svg.current?.querySelector(`[data-job-id="${CSS.escape(best)}"]`) as SVGElement | null)?.focus();
    },
    [],
  );

  /**
   * The first view: the whole graph when it fits at a size one can read; otherwise its start (the
   * first stages, top left) at a readable size, the rest a pan or Fit away, rather than a strip of
   * unreadable boxes.
   */
  const fitsReadably = () => {
    const el = svg.current;
    return el !== null && Math.min(1.2, el.clientWidth / Math.max(layout.width, 1), el.clientHeight / Math.max(layout.height, 1)) >= READABLE_SCALE;
  };
  const firstView = () => {
    if (!svg.current) return;
    if (fitsReadably()) return fit();
    view.current = { k: START_SCALE, x: 10, y: 10 };
    apply();
  };
  useLayoutEffect(firstView, [layout]);
  // The job panel opening or the window resizing changes the room the graph has: fit it again, when
  // it still fits readably (a large graph keeps the place the reader panned to).
  useEffect(() => {
    const el = svg.current;
    if (!el) return;
    let first = true;
    const ro = new ResizeObserver(() => (first ? (first = false) : fitsReadably() && fit()));
    ro.observe(el);
    return () => ro.disconnect();
  }, [layout]);

  useEffect(() => {
    const el = svg.current;
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      zoom(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
    };
    let drag: { x: number; y: number; vx: number; vy: number; id: number } | null = null;
    const onDown = (e: PointerEvent) => {
      if ((e.target as Element).closest('.node')) return;
      drag = { x: e.clientX, y: e.clientY, vx: view.current.x, vy: view.current.y, id: e.pointerId };
      el.setPointerCapture(e.pointerId);
      el.classList.add('dragging');
    };
    const onMove = (e: PointerEvent) => {
      if (!drag || e.pointerId !== drag.id) return;
      view.current = { ...view.current, x: drag.vx + e.clientX - drag.x, y: drag.vy + e.clientY - drag.y };
      apply();
    };
    const onUp = () => {
      drag = null;
      el.classList.remove('dragging');
    };
    el.addEventListener('wheel', onWheel, { passive: false });
    el.addEventListener('pointerdown', onDown);
    el.addEventListener('pointermove', onMove);
    el.addEventListener('pointerup', onUp);
    el.addEventListener('pointercancel', onUp);
    return () => {
      el.removeEventListener('wheel', onWheel);
      el.removeEventListener('pointerdown', onDown);
      el.removeEventListener('pointermove', onMove);
      el.removeEventListener('pointerup', onUp);
      el.removeEventListener('pointercancel', onUp);
    };
  }, []);

  return (
    <div class="graph">
      <div class="graph-tools" role="toolbar" aria-label="Graph view">
        <button type="button" onClick={fit}>
          Fit
        </button>
        <button type="button" aria-label="Zoom in" onClick={() => zoom(1.25)}>
          +
        </button>
        <button type="button" aria-label="Zoom out" onClick={() => zoom(0.8)}>
          −
        </button>
      </div>
      <svg ref={svg} class="graph-canvas" aria-label={`Job graph, ${jobs.length} jobs`}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0L10,5L0,10z" class="arrowhead" />
          </marker>
        </defs>
        <g ref={layer}>
          <g class="edges">
            {layout.edges.map((e) => (
              <path key={`${e.from}>${e.to}`} d={e.d} marker-end="url(#arrow)" />
            ))}
          </g>
          {nodes.map((n) => {
            const p = layout.nodes.get(n.id) ?? { x: 0, y: 0 };
            // A selected instance lights up the node of its group.
            const on = n.id === selected || (n.group !== undefined && n.group.instances.some((i) => i.id === selected));
            return <Node key={n.id} node={n} x={p.x} y={p.y} selected={on} onOpen={onOpen} onArrow={arrow} />;
          })}
        </g>
      </svg>
    </div>
  );
}
