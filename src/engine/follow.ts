/**
 * Runs that follow runs (README "Runs that follow runs"): the run-end outbox's `follow` consumer. When
 * a run of workflow W ends, every workflow whose `on.workflow_run` follows W for that end starts a run
 * with `{action, workflow_run: {…}}` as its event. Each is started with the delivery key
 * `workflow_run/<W>/<n>`, recorded with the run in the transaction that starts it, so the same end
 * handled twice (two servers' passes, a crash before the outbox entry was finished) starts one run.
 * Chains stop as GitHub's do: a run MAX_CHAIN_DEPTH followers deep starts no further follower.
 */
import type { Logger } from 'pino';
import { conclusionOf, deliveryKey, followsEnd, MAX_CHAIN_DEPTH } from '../domain/triggers.js';
import { WeftError } from '../protocol/errors.js';
import type { RunEnd } from '../store/run-end-types.js';
import type { RunRecord, Store, StoreReads } from '../store/store.js';
import type { StartEvent } from './run-start.js';
import { NotListening, type StartFrom } from './triggers.js';

export function followRuns(deps: { store: Store; log: Logger; start: StartFrom }): (ends: readonly RunEnd[]) => Promise<void> {
  return async (ends) => {
    // Most ended runs have no follower: each workflow's followers are read once a batch, by key.
    const ids = [...new Set(ends.map((e) => e.workflow_id))];
    const followed = await deps.store.read(async (r) => {
      const followers = await Promise.all(ids.map((id) => r.listeners('workflow_run', id)));
      return new Set(ids.filter((_, i) => followers[i]!.length > 0));
    });
    for (const end of ends) {
      if (!followed.has(end.workflow_id)) continue;
      const found = await deps.store.read(async (r) => {
        const followers = await r.listeners('workflow_run', end.workflow_id);
        if (followers.length === 0) return null;
        const [wf, run] = await Promise.all([r.getWorkflow(end.workflow_id), r.getRun(end.workflow_id, end.run_number)]);
        return wf && run ? { followers, name: wf.name, run, depth: await depthOf(r, run) } : null;
      });
      // No follower, or the run went meanwhile (deleted with its workflow, pruned): nothing to start.
      if (!found) continue;
      const depth = found.depth + 1;
      if (depth > MAX_CHAIN_DEPTH) {
        deps.log.info({ workflow_id: end.workflow_id, run_number: end.run_number, followers: found.followers, depth }, `runs that follow runs stop at a chain of ${MAX_CHAIN_DEPTH}: no follower started`);
        continue;
      }
      const payload = {
        action: 'completed',
        workflow_run: {
          workflow_id: end.workflow_id,
          name: found.name,
          run_number: end.run_number,
          status: end.state,
          conclusion: conclusionOf(end.state),
          trigger: found.run.trigger,
          event_name: found.run.event_name,
          created_at_ms: found.run.created_at_ms,
          finished_at_ms: end.ended_at_ms,
          depth,
        },
      };
      const event: StartEvent = { name: 'workflow_run', payload, text: JSON.stringify(payload) };
      for (const id of found.followers) {
        try {
          const begun = await deps.start(id, { trigger: 'workflow_run', event, delivery_key: deliveryKey.workflowRun(end.workflow_id, end.run_number) }, (wf) => {
            const f = wf.definition.triggers?.workflow_run;
            if (!f || !f.workflows.includes(end.workflow_id) || !followsEnd(f.types, end.state)) throw new NotListening();
          });
          if (!begun.duplicate) deps.log.info({ workflow_id: id, run_number: begun.run.run_number, after: `${end.workflow_id}#${end.run_number}`, state: end.state, depth }, 'run started by the end of a run it follows');
        } catch (err) {
          if (err instanceof NotListening) continue;
          // A start refused as any start is (an active run, a secret not set) is not tried again,
          // as a scheduled time that finds the workflow busy is skipped; a store outage is (it throws).
          if (err instanceof WeftError) {
            deps.log.warn({ workflow_id: id, after: `${end.workflow_id}#${end.run_number}`, error: err.code, reason: err.message }, 'a run that follows a run could not start');
            continue;
          }
          throw err;
        }
      }
    }
  };
}

/**
 * How many runs that follow runs lead to `run`: the depth its own event carries when a followed run's
 * end started it (or a re-run of such a run), else 0.
 */
async function depthOf(r: StoreReads, run: RunRecord): Promise<number> {
  if (run.event_name !== 'workflow_run' || (run.trigger !== 'workflow_run' && run.trigger !== 'rerun')) return 0;
  const text = await r.getRunEvent(run.workflow_id, run.run_number);
  const depth = text === null ? undefined : (JSON.parse(text) as { workflow_run?: { depth?: unknown } }).workflow_run?.depth;
  return typeof depth === 'number' && Number.isInteger(depth) && depth >= 0 ? depth : 0;
}
