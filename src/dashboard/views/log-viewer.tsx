/**
 * A job attempt's log (README "Dashboard"): numbered lines, each with its own URL (`&line=N`), search
 * with a match count, timestamps on demand, steps of a `steps:` job as headings that fold, each with
 * its state and time, a raw download (`…/logs?format=text`), and, for the latest run's current
 * attempt, the live tail (`…/logs/stream`) with a Follow switch and a cue when new lines arrive below.
 * A log of 100,000 lines stays quick: its lines are kept as they arrive (log-lines.ts) and only those
 * in and near view are drawn (log-window.tsx); the toolbar is log-tools.tsx.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { JobState } from '../../domain/model.js';
import type { LogChunkView } from '../../protocol/wire.js';
import { api, enc } from '../api';
import { openStream } from '../sse';
import { duration, useNow } from '../format';
import { LogModel, Matches, Rows, lineHtml } from '../log-lines';
import { saveDownload } from './artifacts';
import { ErrorLine, StateBadge } from './common';
import { LogTools } from './log-tools';
import { LogWindow, centredOn, useViewport } from './log-window';

function clock(ms: number): string {
  const d = new Date(ms);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

export interface LogViewerProps {
  wf: string;
  job: string;
  run: number;
  attempt: number;
  /** Follow the live tail (the latest run's current attempt). */
  live: boolean;
  /** The job's state and end, for the state and time of its last step. */
  state: JobState;
  finishedAtMs: number | null;
  /** A line to show and mark (from the address, `&line=N`). */
  line: number | null;
  /** The address of line N of this log. */
  lineHref(n: number): string;
}

export function LogViewer({ wf, job, run, attempt, live, state, finishedAtMs, line, lineHref }: LogViewerProps) {
  // The lines are appended to the model in place; `version` redraws once they are.
  const [model, setModel] = useState(() => new LogModel());
  const [, setVersion] = useState(0);
  const [note, setNote] = useState<string>('');
  const [error, setError] = useState<unknown>(null);
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(0);
  const [times, setTimes] = useState(false);
  const [follow, setFollow] = useState(true);
  const [unseen, setUnseen] = useState(false);
  const [folded, setFolded] = useState<ReadonlySet<number>>(new Set());
  const box = useRef<HTMLDivElement>(null);
  const [view, sync] = useViewport(box);
  const followRef = useRef(true);
  followRef.current = follow;
  // The marked line last brought into view: it is scrolled to once, not again with every chunk, unless
  // the reader asks for it again (`jumps`: next and previous, which may land on the same match).
  const shown = useRef<{ model: LogModel; line: number; jump: number } | null>(null);
  const [jumps, setJumps] = useState(0);
  const now = useNow(live && state === 'running');

  useEffect(() => {
    let m = new LogModel();
    const reset = () => {
      m = new LogModel();
      setModel(m);
    };
    reset();
    setError(null);
    setFolded(new Set());
    setNote(live ? 'connecting…' : 'loading…');
    setFollow(true);
    setUnseen(false);
    // A resumed stream may repeat what was already shown; the keys tell (a set: a long log is not scanned per chunk).
    const seen = new Set<string>();
    // One redraw a frame however many chunks arrive in it: a replayed stream is a chunk an event, and
    // alternating stdout and stderr makes chunks of a line.
    let frame = 0;
    const redraw = () => {
      frame ||= requestAnimationFrame(() => {
        frame = 0;
        setVersion((v) => v + 1);
      });
    };
    const add = (chunks: LogChunkView[]) => {
      let added = 0;
      for (const c of chunks) {
        const key = `${c.attempt}:${c.sequence}`;
        if (seen.has(key)) continue;
        seen.add(key);
        added += m.append(c);
      }
      if (added === 0) return;
      redraw();
      if (!followRef.current) setUnseen(true);
    };
    if (!live) {
      let gone = false;
      api<LogChunkView[]>(`/api/workflows/${enc(wf)}/jobs/${enc(job)}/logs?run=${run}&attempt=${attempt}`)
        .then((chunks) => {
          if (gone) return;
          add(chunks);
          setNote(chunks.length === 0 ? 'no output' : '');
        })
        .catch((err) => !gone && setError(err));
      return () => {
        gone = true;
        cancelAnimationFrame(frame);
      };
    }
    // The attempt this log shows. The stream starts at the newest attempt that has output, which while
    // a retry waits out its backoff is the previous one: its lines are not this attempt's.
    let attemptNow = attempt;
    const switchTo = (a: number) => {
      attemptNow = a;
      seen.clear();
      reset();
      setFolded(new Set());
      setNote(`attempt ${a + 1} started`);
    };
    const stream = openStream(
      `/api/workflows/${enc(wf)}/jobs/${enc(job)}/logs/stream`,
      {
        onEvent(ev) {
          if (ev.event === 'log') {
            const c = JSON.parse(ev.data) as LogChunkView;
            if (c.attempt < attemptNow) return;
            if (c.attempt > attemptNow) switchTo(c.attempt);
            add([c]);
            setNote('');
          } else if (ev.event === 'attempt') {
            const a = (JSON.parse(ev.data) as { attempt: number }).attempt;
            if (a > attemptNow) switchTo(a);
          } else if (ev.event === 'end') {
            const { status } = JSON.parse(ev.data) as { status: string };
            setNote(`ended: ${status}`);
          }
        },
        onOpen: () => setNote((n) => (n === 'connecting…' || n === 'reconnecting…' ? 'waiting for output…' : n)),
        onState: (s) => s === 'reconnecting' && setNote('reconnecting…'),
        onMissing: () => setError(new Error('this server has no live log stream for the job')),
      },
      (ev) => ev.event === 'end',
    );
    return () => {
      stream.close();
      cancelAnimationFrame(frame);
    };
  }, [wf, job, run, attempt, live]);

  const { lines, steps } = model;
  const count = lines.length;
  // Search: the lines holding the text, case aside, read once each as they arrive; `current` walks them.
  const found = useMemo(() => new Matches(query), [query, model]).update(model);
  const matches = found.lines;
  useEffect(() => setCurrent(0), [query]);
  const searching = matches.length > 0;
  const at = Math.min(current, matches.length - 1);
  const target = searching ? matches[at]! : line !== null ? line - 1 : null;
  const rows = useMemo(() => new Rows(model, folded), [model, count, folded]);

  // Following: the newest line in view as lines arrive, unless a line is marked.
  useLayoutEffect(() => {
    if (target !== null) return;
    // Nothing marked: the next line marked is scrolled to, even if it is the one marked before.
    shown.current = null;
    const el = box.current;
    if (!el || !follow) return;
    el.scrollTop = el.scrollHeight;
    sync();
  }, [model, count, target, follow]);

  // The marked line (a match, or `&line=N`) in view and centred, once it has arrived; a folded step
  // holding it opens first.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el || target === null || target >= count) return;
    if (shown.current?.model === model && shown.current.line === target && shown.current.jump === jumps) return;
    const r = rows.row(target);
    if (r < 0) {
      const step = lines[target]!.step;
      setFolded((cur) => new Set([...cur].filter((s) => s !== step)));
      return;
    }
    shown.current = { model, line: target, jump: jumps };
    el.scrollTop = centredOn(r, el.clientHeight);
    sync();
  }, [model, count, target, rows, jumps]);

  const toggleStep = (i: number) =>
    setFolded((cur) => {
      const next = new Set(cur);
      if (next.has(i)) next.delete(i);
      else next.add(i);
      return next;
    });

  /** A step's state and time: the job's for the last step, success for those it went past. */
  const stepInfo = (i: number): { state: JobState; ms: number | null } => {
    const s = steps[i]!;
    if (i < steps.length - 1) return { state: 'success', ms: steps[i + 1]!.startMs - s.startMs };
    const end = finishedAtMs ?? (state === 'running' ? now : null);
    return { state, ms: end === null ? null : end - s.startMs };
  };

  const drawRow = (r: number) => {
    const i = rows.line(r);
    const l = lines[i]!;
    const number = (
      <a class="ln" href={lineHref(i + 1)} aria-label={`Line ${i + 1}`}>
        {i + 1}
      </a>
    );
    if (l.heading) {
      const info = stepInfo(l.step);
      const open = !folded.has(l.step);
      return (
        <div key={i} class="log-line chunk step" data-stream="step" data-line={i + 1}>
          {number}
          <button type="button" class="step-toggle" aria-expanded={open} onClick={() => toggleStep(l.step)}>
            {open ? '▾' : '▸'} <span dangerouslySetInnerHTML={{ __html: lineHtml(l) }} />
          </button>{' '}
          <StateBadge state={info.state} /> <span class="muted small">{duration(info.ms)}</span>
        </div>
      );
    }
    const cls = `log-line chunk ${l.stream}${target === i ? ' current' : ''}${found.has(i) ? ' match' : ''}`;
    return (
      <div key={i} class={cls} data-stream={l.stream} data-line={i + 1}>
        {number}
        {times && <span class="ts">{clock(l.timestamp_ms)}</span>}
        <span class="text" dangerouslySetInnerHTML={{ __html: lineHtml(l) }} />
      </div>
    );
  };

  const path = `/api/workflows/${enc(wf)}/jobs/${enc(job)}/logs?run=${run}&attempt=${attempt}&format=text`;
  return (
    <>
      <ErrorLine error={error} />
      <LogTools
        query={query}
        onQuery={setQuery}
        matches={matches.length}
        current={at}
        onStep={(by) => {
          setCurrent((c) => (c + by + matches.length) % matches.length);
          setJumps((j) => j + 1);
        }}
        times={times}
        onTimes={setTimes}
        live={live}
        follow={follow}
        onFollow={(on) => {
          setFollow(on);
          if (on) setUnseen(false);
        }}
        onDownload={() => void saveDownload(path, `${wf}-${job}-run${run}-attempt${attempt + 1}.log`).catch(setError)}
        lines={count}
      />
      <div
        ref={box}
        class={`log${times ? ' with-times' : ''}`}
        role="log"
        // Only the following tail is announced: lines drawn as the reader scrolls are not news.
        aria-live={live && follow ? 'polite' : 'off'}
        aria-label={`Log of ${job}, attempt ${attempt + 1}`}
        tabIndex={0}
        onScroll={(e) => {
          sync();
          const el = e.currentTarget;
          const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          if (atEnd !== followRef.current && live) {
            setFollow(atEnd);
            if (atEnd) setUnseen(false);
          }
        }}
      >
        <LogWindow count={rows.count} view={view} widestCh={model.widest + (times ? 13 : 0)} numberCh={Math.max(4, String(count).length)} row={drawRow} />
      </div>
      {unseen && live && (
        <button
          type="button"
          class="new-lines"
          onClick={() => {
            setFollow(true);
            setUnseen(false);
          }}
        >
          New lines below ↓
        </button>
      )}
      {note && <p class="muted small log-note">{note}</p>}
    </>
  );
}
