/**
 * The log drawn a window at a time (README "Dashboard"): only the rows in and near the log box's
 * viewport are in the page, placed in a block as tall as every row together, so the scroll bar, the
 * scroll position and the browser's own scrolling behave as if every line were there. Every row is
 * ROW_PX high (set here, applied by styles.css through `--log-row`; a line is never wrapped but
 * scrolls sideways), so a row's place is arithmetic: no row is measured.
 */
import type { ComponentChild, RefObject } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';

/** The height of every row of the log, in CSS pixels. */
export const ROW_PX = 19;
/** Rows drawn above and below the viewport, so a scroll of a few lines finds them already there. */
const OVERSCAN = 40;
/**
 * The scroll position is kept in steps of this many rows (fewer than OVERSCAN): scrolling redraws
 * the window every few rows, not every pixel.
 */
const STEP = 10;

export interface Viewport {
  /** The box's scroll position, rounded down to STEP rows. */
  top: number;
  /** The box's visible height. */
  height: number;
}

/**
 * The log box's scroll position and height, for the window to draw. `sync` reads them again: after
 * a scroll, and after the viewer scrolls the box itself, so the window is drawn before the next paint.
 */
export function useViewport(box: RefObject<HTMLElement>): [Viewport, () => void] {
  const [view, setView] = useState<Viewport>(() => ({ top: 0, height: window.innerHeight }));
  const sync = useCallback(() => {
    const el = box.current;
    if (!el) return;
    const top = Math.floor(el.scrollTop / (STEP * ROW_PX)) * STEP * ROW_PX;
    // Not laid out yet (0): the window's height is a fair guess.
    const height = el.clientHeight || window.innerHeight;
    setView((v) => (v.top === top && v.height === height ? v : { top, height }));
  }, [box]);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const watch = new ResizeObserver(sync);
    watch.observe(el);
    return () => watch.disconnect();
  }, [box, sync]);
  return [view, sync];
}

/** Where row `row` is centred in a box of that height: the scroll position to set. */
export function centredOn(row: number, height: number): number {
  return Math.max(0, row * ROW_PX - (height - ROW_PX) / 2);
}

export interface LogWindowProps {
  /** How many rows the log has. */
  count: number;
  view: Viewport;
  /** The widest line, in characters: the sideways scroll does not change with the rows drawn. */
  widestCh: number;
  /** The width of the line numbers, in characters. */
  numberCh: number;
  /** Draws row `row` (keyed, so a row kept in the window keeps its element and any selection in it). */
  row(row: number): ComponentChild;
}

export function LogWindow({ count, view, widestCh, numberCh, row }: LogWindowProps) {
  const first = Math.max(0, Math.floor(view.top / ROW_PX) - OVERSCAN);
  const end = Math.min(count, Math.ceil((view.top + view.height) / ROW_PX) + STEP + OVERSCAN);
  const drawn: ComponentChild[] = [];
  for (let r = first; r < end; r++) drawn.push(row(r));
  const style = {
    height: `${count * ROW_PX}px`,
    '--log-row': `${ROW_PX}px`,
    '--log-ln': `${numberCh}ch`,
    // The text, the numbers and the gaps between (timestamps aside).
    minWidth: `calc(${widestCh + numberCh}ch + 2rem)`,
  };
  return (
    <div class="log-rows" style={style}>
      <div class="log-window" style={{ top: `${first * ROW_PX}px` }}>
        {drawn}
      </div>
    </div>
  );
}
