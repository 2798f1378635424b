import type { Logger } from 'pino';
import { type FirePlan, planFires } from '../domain/schedule.js';
import type { FireScheduleOutcome, LabelSet, Store, WorkflowRecord } from '../store/store.js';
import { freshRun } from './run-start.js';
import type { GroupQueued } from './queued-runs.js';

/**
 * The scheduler pass (docs/api.md "Schedules", docs/architecture.md "Schedules"): every workflow whose
 * next fire time has come is handed to the store's fireSchedule, which handles each time once however
 * many schedulers race for it.
 */

/** Workflows read per batch; a pass reads batches until fewer are due, at most MAX_BATCHES. */
const DUE_BATCH = 100;
const MAX_BATCHES = 10;
/** A definition saved between reading it and firing is rare; a few tries settle it. */
const TRIES = 5;

export interface ScheduleTotals {
  started: number;
  /** Due times passed over because the workflow had an active run. */
  skipped: number;
  /** Workflows whose missed times `catch_up: none` dropped. */
  dropped: number;
}

export interface SchedulePassOptions {
  now: () => number;
  graceMs: number;
  log: Logger;
  /** A run was started: the engine announces it as it does a run started through the API. */
  onStarted: (outcome: FireScheduleOutcome & { kind: 'started' }, labelSets: LabelSet[]) => void;
  /** A run was queued behind the workflow's active runs (docs/architecture.md "Concurrent runs"). */
  /** A run was queued; `group` says what its concurrency group's rule decided (README "Concurrency groups"). */
  onQueued: (workflowId: string, group: GroupQueued) => void;
}

export async function fireDueSchedules(store: Store, opts: SchedulePassOptions): Promise<ScheduleTotals> {
  const totals: ScheduleTotals = { started: 0, skipped: 0, dropped: 0 };
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const now = opts.now();
    const due = await store.read((r) => r.dueSchedules(now, DUE_BATCH));
    for (const wf of due) await fireOne(store, wf, now, opts, totals);
    if (due.length < DUE_BATCH) break;
  }
  return totals;
}

async function fireOne(store: Store, first: WorkflowRecord, now: number, opts: SchedulePassOptions, totals: ScheduleTotals): Promise<void> {
  let wf: WorkflowRecord | null = first;
  for (let tries = 0; tries < TRIES && wf; tries++) {
    const due = wf.next_fire_at_ms ?? null;
    if (due === null || due > now) return;
    const plan = planOrUnschedule(wf, due, now, opts);
    const start = plan.fire_at_ms !== null;
    // A scheduled run takes the inputs' defaults (a scheduled workflow has no required input without one).
    const { jobs, labelSets, inputs, group } = start ? freshRun(wf, {}, now) : { jobs: [], labelSets: [], inputs: {}, group: null };
    const outcome = await store.fireSchedule({
      workflow_id: wf.id,
      expected_hash: wf.hash,
      jobs,
      label_sets: labelSets,
      inputs,
      group,
      trigger: 'schedule',
      now_ms: now,
      fire_at_ms: due,
      next_fire_at_ms: plan.next_fire_at_ms,
      start,
    });
    const fields = { workflow_id: wf.id, fire_at: iso(plan.fire_at_ms), next_fire_at: iso(plan.next_fire_at_ms) };
    if (plan.dropped_at_ms !== null && outcome.kind !== 'taken' && outcome.kind !== 'stale' && outcome.kind !== 'not_found') {
      totals.dropped++;
      opts.log.info({ ...fields, missed_at: iso(plan.dropped_at_ms) }, 'missed scheduled times dropped (catch_up: none)');
    }
    switch (outcome.kind) {
      case 'started': {
        totals.started++;
        opts.onStarted(outcome, labelSets);
        const late = now - plan.fire_at_ms! > opts.graceMs;
        opts.log.info({ ...fields, run_number: outcome.run.run_number, late }, late ? 'scheduled run started for a missed time' : 'scheduled run started');
        return;
      }
      case 'queued':
        totals.started++;
        opts.onQueued(wf.id, outcome);
        opts.log.info(
          { ...fields, run_number: outcome.run.run_number, concurrency_group: outcome.run.concurrency_group ?? undefined },
          'scheduled run queued: every slot of the workflow is taken, or its concurrency group is busy',
        );
        return;
      case 'skipped':
        totals.skipped++;
        opts.log.warn({ ...fields, active_run: outcome.run_number }, 'scheduled run skipped: the workflow already has an active run');
        return;
      case 'advanced':
      case 'taken':
      case 'not_found':
        return;
      case 'stale':
        wf = await store.read((r) => r.getWorkflow(first.id));
    }
  }
}

/**
 * A stored schedule that no longer computes (a time zone this runtime does not know) would stop every
 * pass at the same workflow: it is unscheduled instead, with an error naming it, until it is saved again.
 */
function planOrUnschedule(wf: WorkflowRecord, due: number, now: number, opts: SchedulePassOptions): FirePlan {
  try {
    return planFires(wf.definition.schedules, due, now, opts.graceMs);
  } catch (err) {
    opts.log.error({ workflow_id: wf.id, err }, 'schedule cannot be computed; the workflow is unscheduled until its definition is saved again');
    return { fire_at_ms: null, dropped_at_ms: null, next_fire_at_ms: null };
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
