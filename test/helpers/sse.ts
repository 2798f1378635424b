/**
 * A small server-sent-events client for tests, built on fetch's body stream (no EventSource
 * package). It parses the stream as the HTML spec describes: events are separated by a blank line;
 * `event:`, `id:` and `data:` fields (several `data:` lines join with "\n"); lines starting with `:`
 * are comments (heartbeats) and are ignored.
 */

export interface SseEvent {
  /** The `event:` field; "message" when the server sent none. */
  event: string;
  /** The `id:` field of this event, or undefined when it carried none. */
  id: string | undefined;
  data: string;
}

export interface SseConnection {
  status: number;
  headers: Headers;
  /** The body as text when the server did not answer with an event stream (e.g. a JSON error). */
  text: string;
  /** Parsed JSON of `text`, when it is JSON. */
  body: any;
  /** Every event received so far, in order. */
  events: SseEvent[];
  /** True once the server has closed the stream. */
  readonly ended: boolean;
  /**
   * Resolves with all events so far as soon as `pred(events)` is true; rejects when the deadline passes
   * or the stream ends first.
   */
  waitFor(pred: (events: SseEvent[]) => boolean, what: string, timeoutMs?: number): Promise<SseEvent[]>;
  /** Resolves when the server closes the stream; rejects after the deadline. */
  waitForEnd(timeoutMs?: number): Promise<SseEvent[]>;
  /** Aborts the connection from the client side. Safe to call more than once. */
  close(): void;
}

/** The `data` of an event, parsed as JSON. */
export function json<T = any>(ev: SseEvent): T {
  return JSON.parse(ev.data) as T;
}

/** Opens `url` as an event stream. Resolves once the response headers have arrived. */
export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  let ended = false;
  let failure: unknown = null;

  const isStream = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  let text = '';
  let body: any = undefined;
  if (!isStream) {
    text = await res.text();
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    ended = true;
  } else {
    void pump(res.body!, events, notify)
      .catch((err) => {
        if (!abort.signal.aborted) failure = err;
      })
      .finally(() => {
        ended = true;
        notify();
      });
  }

  const conn: SseConnection = {
    status: res.status,
    headers: res.headers,
    text,
    body,
    events,
    get ended() {
      return ended;
    },
    waitFor(pred, what, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; events so far: ${JSON.stringify(events)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        function check() {
          if (pred(events)) {
            cleanup();
            resolve(events);
          } else if (ended) {
            cleanup();
            const why = failure ? ` (stream error: ${String(failure)})` : '';
            reject(new Error(`stream ended before ${what}${why}; events: ${JSON.stringify(events)}`));
          }
        }
        waiters.add(check);
        check();
      });
    },
    waitForEnd(timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${timeoutMs} ms waiting for the server to close the stream; events: ${JSON.stringify(events)}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        function check() {
          if (ended) {
            cleanup();
            resolve(events);
          }
        }
        waiters.add(check);
        check();
      });
    },
    close() {
      if (!ended) abort.abort();
    },
  };
  return conn;
}

async function pump(stream: ReadableStream<Uint8Array>, out: SseEvent[], notify: () => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let id: string | undefined;
  let data: string[] = [];
  let hasData = false;

  const dispatch = () => {
    if (hasData) out.push({ event: event === '' ? 'message' : event, id, data: data.join('\n') });
    event = '';
    id = undefined;
    data = [];
    hasData = false;
  };

  const processLine = (line: string) => {
    if (line === '') {
      dispatch();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'id') id = value;
    else if (field === 'data') {
      data.push(value);
      hasData = true;
    }
  };

  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) !== -1) {
        // A lone CR at the end may be the first half of a CRLF still in flight.
        if (buffer[nl] === '\r' && nl === buffer.length - 1) break;
        const line = buffer.slice(0, nl);
        const sepLen = buffer.startsWith('\r\n', nl) ? 2 : 1;
        buffer = buffer.slice(nl + sepLen);
        processLine(line);
      }
      notify();
    }
  } finally {
    reader.releaseLock();
  }
}
