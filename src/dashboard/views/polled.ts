/**
 * A list read by polling: what changes on the server's own time (deliveries, retries) or rarely (a
 * workflow's run history) is read again every `everyMs` rather than followed by events.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';

/** Reads `path` now and every `everyMs`; `list` is null until the first answer for this path. */
export function usePolled<T>(path: string, everyMs: number): { list: T | null; error: unknown } {
  const [list, setList] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let gone = false;
    setList(null);
    const load = () =>
      api<T>(path).then(
        (l) => {
          if (gone) return;
          setList(l);
          setError(null);
        },
        (err: unknown) => !gone && setError(err),
      );
    void load();
    const t = setInterval(load, everyMs);
    return () => {
      gone = true;
      clearInterval(t);
    };
  }, [path, everyMs]);
  return { list, error };
}
