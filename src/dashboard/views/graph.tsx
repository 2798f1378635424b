/**
 * The run's DAG, laid out by dagre (graph-layout.ts) and drawn as SVG, with wide levels and long
 * chains folded (folds.ts). Each node carries `data-node-id` and `data-state` (weft's state), jobs and
 * matrix groups also `data-job-id`. The layout depends only on what is drawn and its edges, so state
 * changes redraw nodes without laying anything out again; panning and zooming change one transform
 * attribute directly, without re-rendering.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { JobView } from '../../protocol/wire.js';
import { graphNodes } from '../groups';
import { foldGraph, type FoldedNode } from '../folds';
import { layoutOf, NODE_H, NODE_W, shapeOf } from '../graph-layout';
import { FoldBox, Node } from './graph-node';

/** Below this scale a node's text cannot be read: a graph that only fits smaller opens at START_SCALE. */
const READABLE_SCALE = 0.45;
const START_SCALE = 0.8;

interface View {
  x: number;
  y: number;
  k: number;
}

export function Graph({ jobs, selected, onOpen }: { jobs: JobView[]; selected: string | null; onOpen(id: string): void }) {
  const nodes = useMemo(() => graphNodes(jobs), [jobs]);
  // The folds the reader opened (folds.ts): their ids stay the same while their jobs' states change.
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const drawn = useMemo(() => foldGraph(nodes, expanded, selected), [nodes, expanded, selected]);
  // Laid out again only when the shape changes, not on state changes.
  const shape = shapeOf(drawn);
  const layout = useMemo(() => layoutOf(drawn), [shape]);
  const svg = useRef<SVGSVGElement>(null);
  const layer = useRef<SVGGElement>(null);
  const view = useRef<View>({ x: 0, y: 0, k: 1 });
  // Whether the reader zoomed or panned since the last Fit: a new layout then keeps their view.
  const moved = useRef(false);
  // A fold just expanded or folded, and where on the screen it was: it stays there in the new layout.
  const anchor = useRef<{ id: string; sx: number; sy: number; folding: boolean } | null>(null);

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
    moved.current = true;
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
      if (best !== null) focusNode(best);
    },
    [],
  );

  const onOpenRef = useRef(onOpen);
  onOpenRef.current = onOpen;
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const focusNode = (id: string) => (svg.current?.querySelector(`[data-node-id="${CSS.escape(id)}"]`) as SVGElement | null)?.focus();
  // A click or Enter on a fold expands or folds it; on anything else it opens it (the route's job).
  const drawnRef = useRef(drawn);
  drawnRef.current = drawn;
  const activate = useMemo(
    () => (id: string) => {
      if (!drawnRef.current.some((n) => n.id === id && n.fold)) return onOpenRef.current(id);
      const p = layoutRef.current.nodes.get(id);
      const v = view.current;
      const folding = drawnRef.current.some((n) => n.id === id && n.fold?.expanded);
      if (p) anchor.current = { id, sx: p.x * v.k + v.x, sy: p.y * v.k + v.y, folding };
      setExpanded((cur) => {
        const next = new Set(cur);
        if (!next.delete(id)) next.add(id);
        return next;
      });
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
  /** The selected job's node brought into view when it is not (a large graph opens on its start). */
  const reveal = () => {
    const el = svg.current;
    const id = selectedRef.current;
    const p = id === null ? undefined : layoutRef.current.nodes.get(id);
    if (!el || !p) return;
    const v = view.current;
    const x = p.x * v.k + v.x;
    const y = p.y * v.k + v.y;
    if (x >= 0 && y >= 0 && x + NODE_W * v.k <= el.clientWidth && y + NODE_H * v.k <= el.clientHeight) return;
    view.current = { ...v, x: el.clientWidth / 2 - (p.x + NODE_W / 2) * v.k, y: el.clientHeight / 2 - (p.y + NODE_H / 2) * v.k };
    apply();
  };
  useLayoutEffect(() => {
    const a = anchor.current;
    const p = a && layout.nodes.get(a.id);
    anchor.current = null;
    if (a && p && a.folding && fitsReadably()) {
      // Folded back to a graph that fits: the whole of it again.
      moved.current = false;
      fit();
    } else if (a && p) {
      // The fold the reader acted on stays under the pointer, at the same scale.
      const k = view.current.k;
      view.current = { k, x: a.sx - p.x * k, y: a.sy - p.y * k };
      moved.current = true;
      apply();
    } else if (!moved.current) firstView();
    // The keyboard's focus stays on the fold, expanded or not.
    if (a && p) focusNode(a.id);
    reveal();
  }, [layout]);
  useLayoutEffect(reveal, [selected]);
  // The job panel opening or the window resizing changes the room the graph has: fit it again, when
  // it still fits readably and the reader has not moved it.
  useEffect(() => {
    const el = svg.current;
    if (!el) return;
    let first = true;
    const ro = new ResizeObserver(() => {
      if (first) return void (first = false);
      if (!moved.current && fitsReadably()) fit();
      reveal();
    });
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
      if ((e.target as Element).closest('.node, .fold-head')) return;
      drag = { x: e.clientX, y: e.clientY, vx: view.current.x, vy: view.current.y, id: e.pointerId };
      el.setPointerCapture(e.pointerId);
      el.classList.add('dragging');
    };
    const onMove = (e: PointerEvent) => {
      if (!drag || e.pointerId !== drag.id) return;
      moved.current = true;
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
        <button
          type="button"
          onClick={() => {
            moved.current = false;
            fit();
          }}
        >
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
          {drawn.map((n) => {
            const box = layout.boxes.get(n.id);
            return box && <FoldBox key={n.id} node={n} box={box} onOpen={activate} onArrow={arrow} />;
          })}
          <g class="edges">
            {layout.edges.map((e) => (
              <path key={`${e.from}>${e.to}`} d={e.d} marker-end="url(#arrow)" />
            ))}
          </g>
          {drawn.flatMap((n) => {
            // An expanded fold's jobs, each a node of its own inside the fold's box.
            const shown: FoldedNode[] = n.fold?.expanded ? n.fold.members.map((job) => ({ id: job.id, name: job.name, state: job.state, depends_on: job.depends_on, job })) : [n];
            return shown.map((m) => {
              const p = layout.nodes.get(m.id) ?? { x: 0, y: 0 };
              // A selected instance lights up the node of its group.
              const on = m.id === selected || (m.group !== undefined && m.group.instances.some((i) => i.id === selected));
              return <Node key={m.id} node={m} x={p.x} y={p.y} selected={on} onOpen={activate} onArrow={arrow} />;
            });
          })}
        </g>
      </svg>
    </div>
  );
}
