/**
 * Server-sent events read with fetch, so the stream carries the bearer token (EventSource cannot send
 * headers). Reconnects with a growing delay and resumes with Last-Event-ID; a 404 means the server
 * has no such stream (an older weft), which the caller is told so it can poll instead.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { askForToken, currentToken, SERVER, authHeaders } from './api';

export interface StreamHandlers {
  onEvent(ev: EventSourceMessage): void;
  /** The stream is connected (again): whatever was missed is replayed or announced by the server. */
  onOpen?(): void;
  /** The server has no such stream. */
  onMissing?(): void;
  /** Connection state for display. */
  onState?(state: 'live' | 'reconnecting'): void;
}

export interface Stream {
  close(): void;
}

export function openStream(path: string, h: StreamHandlers, stopAfter?: (ev: EventSourceMessage) => boolean): Stream {
  const abort = new AbortController();
  let lastId: string | undefined;
  let retryMs = 1000;
  let closed = false;

  const run = async () => {
    let delay = 500;
    while (!closed) {
      try {
        const sent = currentToken();
        const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders() };
        if (lastId !== undefined) headers['last-event-id'] = lastId;
        const res = await fetch(SERVER + path, { headers, signal: abort.signal, cache: 'no-store' });
        if (res.status === 401) {
          await res.body?.cancel();
          await askForToken(sent);
          continue;
        }
        if (res.status === 404) {
          await res.body?.cancel();
          h.onMissing?.();
          return;
        }
        if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
        delay = 500;
        h.onState?.('live');
        h.onOpen?.();
        let stop = false;
        const parser = createParser({
          onEvent(ev) {
            if (ev.id !== undefined) lastId = ev.id;
            if (stop) return;
            h.onEvent(ev);
            if (stopAfter?.(ev)) stop = true;
          },
          onRetry(ms) {
            retryMs = ms;
          },
        });
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          parser.feed(value);
          if (stop) {
            await reader.cancel();
            return;
          }
        }
      } catch (err) {
        if (closed) return;
      }
      if (closed) return;
      h.onState?.('reconnecting');
      await new Promise((r) => setTimeout(r, Math.max(delay, retryMs)));
      // At most a few seconds between tries, so that a page opened while the server was away is
      // live again soon after it is back.
      delay = Math.min(delay * 2, 5_000);
    }
  };
  void run();
  return {
    close() {
      closed = true;
      abort.abort();
    },
  };
}
