/**
 * What a called workflow's run hands back to its calling job when it ends (README "Workflows calling
 * workflows"): its declared outputs when it succeeded, else an error naming its failed jobs.
 */
import { childFailure, childOutputs } from '../domain/calls.js';
import type { CallResult, RunRecord, StoreReads } from '../store/store.js';

/**
 * A child that failed fails its caller's attempt, which the caller's retries may run again (a new
 * child run); one that was cancelled on its own (not by its caller's cancel, which cancelled the
 * caller first) fails the caller for good: someone meant it to stop.
 */
export async function childResult(r: StoreReads, child: RunRecord, state: 'success' | 'failed' | 'cancelled'): Promise<CallResult> {
  const jobs = await r.getRunJobs(child.workflow_id, child.run_number);
  if (state === 'success') {
    // The definition the run was planned from, so that an edit since does not change what it hands back.
    const def = (child.definition_hash !== null ? await r.getRunDefinition(child.workflow_id, child.definition_hash) : null) ?? (await r.getWorkflow(child.workflow_id))?.definition;
    return { kind: 'success', outputs: def ? childOutputs(def, child.inputs, jobs) : {} };
  }
  return { kind: 'failed', error: childFailure({ workflow_id: child.workflow_id, run_number: child.run_number, state }, jobs), retryable: state === 'failed' };
}
