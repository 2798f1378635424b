/**
 * The log viewer's toolbar (README "Dashboard"): search with its match count and the arrows to the
 * previous and next match, timestamps on demand, Follow for the live tail, the raw download, and how
 * many lines the log has (the page holds only those in view, so the browser's own find sees no more).
 */

export interface LogToolsProps {
  query: string;
  onQuery(q: string): void;
  /** How many lines match, and which of them is current (from 0). */
  matches: number;
  current: number;
  /** Moves to the next (1) or previous (-1) match. */
  onStep(by: 1 | -1): void;
  times: boolean;
  onTimes(on: boolean): void;
  /** Follow is offered for the live tail only. */
  live: boolean;
  follow: boolean;
  onFollow(on: boolean): void;
  onDownload(): void;
  lines: number;
}

export function LogTools(p: LogToolsProps) {
  const searching = p.matches > 0;
  return (
    <div class="log-tools" role="toolbar" aria-label="Log tools">
      <input
        type="search"
        placeholder="Search the log"
        aria-label="Search the log"
        value={p.query}
        onInput={(e) => p.onQuery(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && searching) p.onStep(e.shiftKey ? -1 : 1);
        }}
      />
      {p.query.trim() !== '' && (
        <span class="muted small" aria-live="polite">
          {searching ? `${p.current + 1} of ${p.matches}` : 'no match'}
        </span>
      )}
      <button type="button" aria-label="Previous match" disabled={!searching} onClick={() => p.onStep(-1)}>
        ↑
      </button>
      <button type="button" aria-label="Next match" disabled={!searching} onClick={() => p.onStep(1)}>
        ↓
      </button>
      <label>
        <input type="checkbox" checked={p.times} onChange={(e) => p.onTimes(e.currentTarget.checked)} /> Timestamps
      </label>
      {p.live && (
        <label>
          <input type="checkbox" checked={p.follow} onChange={(e) => p.onFollow(e.currentTarget.checked)} /> Follow
        </label>
      )}
      <button type="button" onClick={p.onDownload}>
        Download
      </button>
      <span class="muted small log-count">
        {p.lines} {p.lines === 1 ? 'line' : 'lines'}
      </span>
    </div>
  );
}
