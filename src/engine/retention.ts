import type { DeleteLimits, PrunedRun, PruneRequest, Store } from '../store/store.js';

/**
 * Retention (README "Retention"): which finished runs go, and the loop that deletes them in small
 * batches. Each batch is one store operation of bounded size, so that a backlog of thousands of runs
 * never holds SQLite's single writer (and the claims waiting on it) or PostgreSQL row locks for long.
 */

export interface RetentionPolicy {
  /** RETAIN_RUNS: keep this many newest runs of each workflow; null for no count rule. */
  retainRuns: number | null;
  /** RETAIN_DAYS: delete runs finished more than this many days ago; null for no age rule. */
  retainDays: number | null;
}

export const DAY_MS = 86_400_000;

/** One batch: a hundred runs and two thousand log chunks, a few milliseconds of writing (README "Retention"). */
export const PRUNE_BATCH = { max_runs: 100, max_log_chunks: 2_000 } as const;

/** How much one call of deleteWorkflow deletes before the next (the same bounds as retention). */
export const DELETE_BATCH: DeleteLimits = PRUNE_BATCH;

/** A reaper pass deletes at most this many batches; a larger backlog is worked off over later passes. */
export const BATCHES_PER_PASS = 10;

/** WORKER_RETAIN_SECS by default: a worker unseen for a week (and holding no lease) is forgotten. */
export const DEFAULT_WORKER_RETAIN_MS = 7 * DAY_MS;

/** Workers deleted by one pruneWorkers call; a reaper pass makes up to BATCHES_PER_PASS of them. */
export const WORKER_PRUNE_BATCH = 500;

/**
 * Deletes the workers last seen before `seenBeforeMs` that hold no lease, batch after batch until
 * none is left or `maxBatches` were done; answers how many went and whether more may be due.
 */
export async function pruneWorkersInBatches(store: Store, seenBeforeMs: number, maxBatches: number): Promise<{ deleted: number; more: boolean }> {
  let deleted = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const n = await store.pruneWorkers(seenBeforeMs, WORKER_PRUNE_BATCH);
    deleted += n;
    if (n < WORKER_PRUNE_BATCH) return { deleted, more: false };
  }
  return { deleted, more: true };
}

export function hasRetention(policy: RetentionPolicy): boolean {
  return policy.retainRuns !== null || policy.retainDays !== null;
}

export function pruneRequest(policy: RetentionPolicy, nowMs: number, dryRun: boolean, maxRuns: number = PRUNE_BATCH.max_runs): PruneRequest {
  return {
    retain_runs: policy.retainRuns,
    finished_before_ms: policy.retainDays === null ? null : nowMs - Math.round(policy.retainDays * DAY_MS),
    max_runs: maxRuns,
    max_log_chunks: PRUNE_BATCH.max_log_chunks,
    dry_run: dryRun,
  };
}

export interface PruneTotals {
  /** Runs deleted whole, each with every log chunk deleted for it over the batches. */
  runs: PrunedRun[];
  /** Log chunks deleted of runs not yet deleted whole (the last batch stopped inside one). */
  partial_log_chunks: number;
  /** More runs are due than these batches deleted. */
  more: boolean;
  /** Blob ids of the deleted runs' artifacts no row names any more (for ARTIFACTS_DIR's files). */
  unnamed_blobs: string[];
}

/**
 * Deletes batch after batch until nothing is due or `maxBatches` were done; `onBatch` hears of each
 * batch's runs as they go. A dry run is one batch: it deletes nothing, so the next would list the same.
 */
export async function pruneInBatches(
  store: Store,
  req: PruneRequest,
  maxBatches: number,
  onBatch?: (runs: readonly PrunedRun[]) => void,
): Promise<PruneTotals> {
  const runs: PrunedRun[] = [];
  const unnamed: string[] = [];
  // Chunks deleted of a run before the batch that deleted the run itself.
  const earlier = new Map<string, number>();
  const key = (r: { workflow_id: string; run_number: number }) => `${r.run_number}\u0000${r.workflow_id}`;
  let more = true;
  const batches = req.dry_run ? 1 : maxBatches;
  for (let batch = 0; more && batch < batches; batch++) {
    const out = await store.pruneRuns(req);
    const done = out.runs.map((r) => {
      const before = earlier.get(key(r)) ?? 0;
      earlier.delete(key(r));
      return before === 0 ? r : { ...r, log_chunks: r.log_chunks + before };
    });
    if (out.partial) earlier.set(key(out.partial), (earlier.get(key(out.partial)) ?? 0) + out.partial.log_chunks);
    runs.push(...done);
    unnamed.push(...(out.unnamed_blobs ?? []));
    if (done.length > 0) onBatch?.(done);
    more = out.more;
  }
  let partial = 0;
  for (const n of earlier.values()) partial += n;
  return { runs, partial_log_chunks: partial, more, unnamed_blobs: unnamed };
}
