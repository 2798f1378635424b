/**
 * Hiding secrets in what a worker sends back for a job that uses them (README "Secrets"), before
 * anything is stored: the error of a failure, the outputs of a success, and log text. Workers that
 * `weft worker` runs hide them already; this is for every other worker, and for what slips past one.
 */
import { maskAcrossSeam, maskText } from '../domain/masking.js';
import type { Outputs } from '../domain/model.js';
import type { IncomingLogChunk } from '../protocol/wire.js';
import type { Store } from '../store/store.js';

export function maskOutputs(outputs: Outputs, forms: readonly string[]): Outputs {
  const out: Outputs = {};
  for (const [k, v] of Object.entries(outputs)) out[maskText(k, forms)] = maskText(v, forms);
  return out;
}

/**
 * The chunks with every secret hidden, including one that a chunk ends and the next begins: inside the
 * push, and across the seam with the attempt's chunk stored just before (which is rewritten with its
 * piece hidden, so that the stored log never reads the secret whole). A secret split across two
 * pushes shows its first piece to a live reader until the second push arrives; both are hidden from
 * then on.
 */
export async function maskChunks(store: Store, leaseId: string, chunks: IncomingLogChunk[], forms: readonly string[]): Promise<IncomingLogChunk[]> {
  const out = chunks.map((c) => ({ ...c, data: maskText(c.data, forms) })).sort((a, b) => a.sequence - b.sequence);
  for (let i = 1; i < out.length; i++) {
    const seam = maskAcrossSeam(out[i - 1]!.data, out[i]!.data, forms);
    if (seam) {
      out[i - 1]!.data = seam.before;
      out[i]!.data = seam.after;
    }
  }
  const first = out[0];
  if (first === undefined) return out;
  // Two tries: a concurrent push of the same attempt may rewrite the chunk between the read and the write.
  for (let tries = 0; tries < 2; tries++) {
    const found = await store.read(async (r) => {
      const lease = await r.getLease(leaseId);
      // An unknown lease is refused by the push itself, which stores nothing.
      if (lease === null) return null;
      const key = { workflow_id: lease.workflow_id, run_number: lease.run_number, job_id: lease.job_id, attempt: lease.attempt, sequence: first.sequence };
      const before = await r.logChunkBefore(key);
      return before && { key: { ...key, sequence: before.sequence }, before };
    });
    if (found === null) return out;
    const seam = maskAcrossSeam(found.before.data, first.data, forms);
    if (seam === null) return out;
    if (await store.rewriteLogChunk(found.key, found.before.data, seam.before)) {
      first.data = seam.after;
      return out;
    }
  }
  return out;
}
