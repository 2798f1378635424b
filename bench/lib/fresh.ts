/** A weft server on a store of its own (temp SQLite file or throwaway PostgreSQL database). */
import path from 'node:path';
import { createDatabase, type TempDatabase } from './pg.js';
import { makeTempDir, startWeft, type ServerHandle, type TempDir } from './procs.js';
import type { StoreKind } from './settings.js';

export interface FreshStore {
  kind: StoreKind;
  /** DATABASE_URL of the store. */
  url: string;
  remove(): Promise<void>;
}

export async function freshStore(kind: StoreKind): Promise<FreshStore> {
  if (kind === 'sqlite') {
    const dir: TempDir = makeTempDir('weft-bench-');
    return { kind, url: path.join(dir.path, 'weft.db'), remove: dir.remove };
  }
  const db: TempDatabase = await createDatabase();
  return { kind, url: db.url, remove: db.drop };
}

export interface FreshServer {
  server: ServerHandle;
  /** More servers on the same store, API_ONLY (the first one runs the reaper). */
  extra: ServerHandle[];
  /** Stops the server, then removes its store. */
  close(): Promise<void>;
}

/** Starts weft on `store` (which it then owns), or on a new empty store of that kind. */
export async function freshWeft(storeOrKind: StoreKind | FreshStore, servers = 1): Promise<FreshServer> {
  const store = typeof storeOrKind === 'string' ? await freshStore(storeOrKind) : storeOrKind;
  // An empty WORKFLOWS_DIR: the repository's example workflows would only add rows and log lines.
  const workflows: TempDir = makeTempDir('weft-bench-wf-');
  const remove = async () => {
    await workflows.remove();
    await store.remove();
  };
  const started: ServerHandle[] = [];
  const stopAll = () => Promise.all(started.map((s) => s.stop()));
  try {
    started.push(await startWeft(store.url, workflows.path));
    for (let i = 1; i < servers; i++) started.push(await startWeft(store.url, workflows.path, { API_ONLY: '1' }));
    const [server, ...extra] = started;
    return {
      server: server!,
      extra,
      async close() {
        await stopAll();
        await remove();
      },
    };
  } catch (err) {
    await stopAll();
    await remove();
    throw err;
  }
}
