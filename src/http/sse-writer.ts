import type { ServerResponse } from 'node:http';

/**
 * One server-sent event as written on the wire. `data` is JSON already, so it holds no line break.
 */
export function sseFrame(event: string, data: string, id?: string): string {
  return id === undefined ? `event: ${event}\ndata: ${data}\n\n` : `event: ${event}\nid: ${id}\ndata: ${data}\n\n`;
}

/**
 * Writes frames as the connection takes them: the next one is pulled only once the last was accepted
 * (or drained), so a producer that queues behind this sees how far behind its client is. Returns when
 * the frames end or the connection closes, whichever comes first, never waiting on a connection that
 * is gone for a drain that cannot come.
 */
export async function writeFrames(raw: ServerResponse, frames: AsyncIterable<string>): Promise<void> {
  for await (const text of frames) {
    if (raw.destroyed || raw.writableEnded) return;
    if (!raw.write(text)) {
      await new Promise<void>((resolve) => {
        const finish = () => {
          raw.off('drain', finish);
          raw.off('close', finish);
          resolve();
        };
        raw.once('drain', finish);
        raw.once('close', finish);
      });
    }
  }
}
