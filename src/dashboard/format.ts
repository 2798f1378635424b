/** How states, times and durations read on the page. A state is always shown as icon and word, never colour alone. */
import { useEffect, useState } from 'preact/hooks';

export const STATE_ICON: Record<string, string> = {
  pending: '○',
  // A person is asked to decide (README "Approvals").
  awaiting_approval: '⚑',
  queued: '◔',
  running: '▶',
  success: '✓',
  failed: '✗',
  skipped: '↷',
  cancelled: '⊘',
  idle: '–',
  busy: '●',
  offline: '⊘',
};

export function duration(ms: number | null | undefined): string {
  if (ms == null || ms < 0) return '';
  // Tenths below ten seconds, as the CLI prints them: a 3.3 s run is not "3s".
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

export function ago(ms: number | null | undefined, now: number): string {
  if (ms == null) return '—';
  const d = Math.max(0, now - ms);
  if (d < 5000) return 'just now';
  return `${duration(d)} ago`;
}

export function stamp(ms: number | null | undefined): string {
  return ms == null ? '' : new Date(ms).toLocaleString();
}

/** One ticker for every clock on the page; only components that ask for it re-render each second. */
const tickers = new Set<(n: number) => void>();
let timer: ReturnType<typeof setInterval> | null = null;

export function useNow(active = true): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    tickers.add(setNow);
    timer ??= setInterval(() => {
      const n = Date.now();
      for (const t of tickers) t(n);
    }, 1000);
    return () => {
      tickers.delete(setNow);
      if (tickers.size === 0 && timer) {
        clearInterval(timer);
        timer = null;
      }
    };
  }, [active]);
  return now;
}

/** When a schedule next starts a run: "next in 13h 02m", its local time in the tooltip (stamp). */
export function nextFire(ms: number | null | undefined, now: number): string | null {
  if (ms == null) return null;
  return ms <= now ? 'next due now' : `next in ${duration(ms - now)}`;
}
