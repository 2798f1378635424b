/**
 * A streamed request body sent with Node's own http module. Node's fetch (undici) reads a streamed
 * body ahead of what the socket takes, so a large upload would sit in memory whole; http.request
 * through `pipeline` sends no faster than the server takes it (README "Artifacts"). Loaded only when
 * used, so the client still loads where Node's modules do not exist.
 */
export async function nodeUpload(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: AsyncIterable<Uint8Array>,
  signal?: AbortSignal,
): Promise<Response> {
  const target = new URL(url);
  const mod = target.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const { Readable } = await import('node:stream');
  const { pipeline } = await import('node:stream/promises');
  return new Promise<Response>((resolve, reject) => {
    const req = mod.request(target, { method, headers, signal }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const answer = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') answer.set(k, v);
        resolve(new Response(Buffer.concat(parts), { status: res.statusCode ?? 500, statusText: res.statusMessage ?? '', headers: answer }));
      });
    });
    req.on('error', reject);
    // An early answer (413, a refused lease) may come while the body is still going out: the server
    // reads and drops the rest, and the answer above settles the promise either way.
    pipeline(Readable.from(body, { objectMode: false }), req).catch(reject);
  });
}
