/**
 * Where the graph's nodes go (README "Dashboard"): dagre lays out the drawn nodes (folds.ts) left to
 * right by stage; an expanded fold is one box to dagre, its jobs set out inside it in rows, so that a
 * level of 250 jobs opens as a block one can scan rather than a column 20 000 px high.
 */
import dagre from '@dagrejs/dagre';
import type { Fold, FoldedNode } from './folds.js';

export const NODE_W = 190;
export const NODE_H = 64;
/** Between the jobs of an expanded fold, and its margin and heading. */
export const BOX_GAP_X = 20;
export const BOX_GAP_Y = 18;
export const BOX_PAD = 12;
export const BOX_HEAD = 30;

export interface Point {
  x: number;
  y: number;
}

/** An expanded fold: its box, and how many of its jobs a row holds. */
export interface Box extends Point {
  w: number;
  h: number;
  cols: number;
}

export interface Layout {
  width: number;
  height: number;
  /** The top left corner of every node one can focus: drawn nodes, expanded folds' headings and their jobs. */
  nodes: Map<string, Point>;
  boxes: Map<string, Box>;
  edges: { from: string; to: string; d: string }[];
}

/**
 * dagre's default ranker (network simplex) draws the shortest edges, but on a few hundred jobs it
 * takes seconds; beyond this size each job is ranked by its depth instead, which is what a pipeline's
 * stages are anyway.
 */
const QUICK_RANKING_ABOVE = 150;

/** Jobs a row of an expanded fold holds: a chain reads along rows of 6; a level makes a block about as high as wide. */
export function columns(n: Fold): number {
  const count = n.members.length;
  if (n.kind === 'chain') return Math.min(count, 6);
  // At least two across: one job's width is too narrow for the heading.
  return Math.min(count, Math.max(2, Math.ceil(Math.sqrt((count * (NODE_H + BOX_GAP_Y)) / (NODE_W + BOX_GAP_X)))));
}

function boxSize(fold: Fold): { w: number; h: number; cols: number } {
  const cols = columns(fold);
  const rows = Math.ceil(fold.members.length / cols);
  return {
    cols,
    w: 2 * BOX_PAD + cols * NODE_W + (cols - 1) * BOX_GAP_X,
    h: 2 * BOX_PAD + BOX_HEAD + rows * NODE_H + (rows - 1) * BOX_GAP_Y,
  };
}

/** The top left corner of the `i`th job of an expanded fold in `box`. */
export function memberAt(box: Box, i: number): Point {
  return {
    x: box.x + BOX_PAD + (i % box.cols) * (NODE_W + BOX_GAP_X),
    y: box.y + BOX_PAD + BOX_HEAD + Math.floor(i / box.cols) * (NODE_H + BOX_GAP_Y),
  };
}

/** What the layout depends on: the drawn nodes, their edges, and the jobs of expanded folds; not the states. */
export function shapeOf(nodes: FoldedNode[]): string {
  return nodes.map((n) => `${n.id}<${n.depends_on.join(',')}${n.fold?.expanded ? `[${n.fold.members.map((m) => m.id).join(',')}]` : ''}`).join(';');
}

export function layoutOf(drawn: FoldedNode[]): Layout {
  const g = new dagre.graphlib.Graph();
  const ranker = drawn.length > QUICK_RANKING_ABOVE ? 'longest-path' : 'network-simplex';
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 60, marginx: 20, marginy: 20, ranker });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(drawn.map((j) => j.id));
  const sizes = new Map<string, { w: number; h: number; cols: number }>();
  for (const n of drawn) {
    const size = n.fold?.expanded ? boxSize(n.fold) : { w: NODE_W, h: NODE_H, cols: 1 };
    sizes.set(n.id, size);
    g.setNode(n.id, { width: size.w, height: size.h });
  }
  for (const n of drawn) for (const d of n.depends_on) if (ids.has(d)) g.setEdge(d, n.id);
  const t0 = performance.now();
  dagre.layout(g);
  // Read by the browser tests, which report how long a large graph takes.
  (globalThis as { weftLayoutMs?: number }).weftLayoutMs = performance.now() - t0;
  const nodes = new Map<string, Point>();
  const boxes = new Map<string, Box>();
  for (const n of drawn) {
    const p = g.node(n.id);
    const size = sizes.get(n.id)!;
    const at = { x: p.x - size.w / 2, y: p.y - size.h / 2 };
    if (!n.fold?.expanded) {
      nodes.set(n.id, at);
      continue;
    }
    const box = { ...at, ...size };
    boxes.set(n.id, box);
    // The heading stands in line with the first column, for the arrow keys.
    nodes.set(n.id, { x: box.x + BOX_PAD, y: box.y + BOX_PAD });
    n.fold.members.forEach((m, i) => nodes.set(m.id, memberAt(box, i)));
  }
  const edges = g.edges().map((e) => {
    const pts: Point[] = g.edge(e).points ?? [];
    const d = pts.map((p, i) => `${i === 0 ? 'M' : 'L'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
    return { from: e.v, to: e.w, d };
  });
  const gg = g.graph();
  return { width: gg.width ?? 0, height: gg.height ?? 0, nodes, boxes, edges };
}
