import type { Logger } from 'pino';
import type { WorkflowDefinition } from '../domain/model.js';
import { WeftError } from '../protocol/errors.js';
import type { JobChange, LabelSet, NewJob, StartRunOutcome, Store, StoreReads, WorkflowRecord } from '../store/store.js';
import type { JobGroups } from './job-groups.js';
import type { QueuedRuns } from './queued-runs.js';
import { workflowNotFound } from './reads.js';
import { freshRun, rerunOf, type Begun, type RunStart, type StartedFrom } from './run-start.js';
import type { RerunScope } from './run-plan.js';

/** A definition saved between reading it and starting the run is rare; a few tries settle it. */
const START_RUN_TRIES = 5;

/** How a start reads the workflow and plans the run's jobs, in one snapshot. */
export type RunPlanner = (r: StoreReads, wf: WorkflowRecord, nowMs: number) => Promise<RunStart>;

export interface RunStartsContext {
  store: Store;
  now: () => number;
  log: Logger;
  requireWorkflow(r: StoreReads, id: string): Promise<WorkflowRecord>;
  /** Refuses a start whose jobs name a secret that is not set (README "Secrets"). */
  checkSecrets(id: string, jobs: ReadonlyArray<{ job_id: string; env: NewJob['env'] }>): Promise<void>;
  /** The started workflow's definition, for the calls its jobs may make (README "Workflows calling workflows"). */
  noteDefinition(id: string, def: WorkflowDefinition): void;
  /** Label sets of new jobs: known here and told to the other servers. */
  labelSetsAdded(sets: readonly LabelSet[]): void;
  /** The workflow's status changed (SSE). */
  workflowChanged(id: string): void;
  /** Waiting claims may find something now. */
  wake(): void;
  announce(changes: readonly JobChange[]): void;
  queued: QueuedRuns;
  jobGroups: JobGroups;
}

/**
 * Starting runs (README "How a run works", "Re-running a run", "Triggers and notifications"): by hand,
 * as a re-run, from outside, and the called workflows' runs (calls.ts) once their store start is done.
 * A start plans in one snapshot and starts in one store operation guarded by the definition's hash;
 * a definition saved in between makes it plan again.
 */
export class RunStarts {
  constructor(private readonly ctx: RunStartsContext) {}

  /** A fresh run with these inputs (checked against the declared ones) and priority. */
  fresh(id: string, opts: { inputs?: Readonly<Record<string, string>>; priority?: number }): Promise<Begun> {
    return this.begin(id, async (_r, wf, now) => freshRun(wf, opts.inputs ?? {}, now, opts.priority));
  }

  /** A re-run of run `runNumber`: the jobs `scope` keeps start as `success` with that run's outputs. */
  rerun(id: string, runNumber: number, scope: RerunScope, opts: { priority?: number }): Promise<Begun> {
    return this.begin(id, (r, wf, now) => rerunOf(r, wf, runNumber, scope, now, opts.priority));
  }

  /**
   * A run from outside (a webhook, an event, the end of a followed run) with the inputs' defaults. A
   * delivery key seen before starts nothing and answers its run with `duplicate`. `check` sees the
   * workflow as the start reads it, and may refuse.
   */
  from(id: string, from: StartedFrom, check?: (wf: WorkflowRecord) => void): Promise<Begun> {
    return this.begin(id, async (_r, wf, now) => {
      check?.(wf);
      return freshRun(wf, {}, now, undefined, from);
    });
  }

  private async begin(id: string, plan: RunPlanner): Promise<Begun> {
    const { store, now: clock, log } = this.ctx;
    for (let tries = 0; tries < START_RUN_TRIES; tries++) {
      const now = clock();
      const { wf, start } = await store.read(async (r) => {
        const wf = await this.ctx.requireWorkflow(r, id);
        return { wf, start: await plan(r, wf, now) };
      });
      const { jobs, labelSets, inputs, rerun_of, group, trigger, delivery_key } = start;
      const event = start.event && { name: start.event.name, payload: start.event.text };
      // Its changes may queue calls of other workflows (README "Workflows calling workflows").
      this.ctx.noteDefinition(id, wf.definition);
      // A re-run's kept jobs start as success and never run: their secrets need not be set any more.
      await this.ctx.checkSecrets(id, jobs.filter((j) => j.status !== 'success'));
      const outcome = await store.startRun({ workflow_id: id, expected_hash: wf.hash, jobs, label_sets: labelSets, now_ms: now, inputs, rerun_of, group, trigger, event, delivery_key });
      switch (outcome.kind) {
        case 'not_found':
          throw workflowNotFound(id);
        case 'duplicate':
          return { run: outcome.run, duplicate: true };
        case 'active': {
          const runs = outcome.run_numbers.map((n) => `#${n}`).join(', ');
          throw new WeftError(
            'run_active',
            outcome.run_numbers.length > 1
              ? `workflow "${id}" already has as many active runs as its concurrency.max_runs allows (${runs}); cancel one or wait for one to finish`
              : `workflow "${id}" already has an active run (${runs}); cancel it or wait for it to finish`,
            { run_number: outcome.run_number, run_numbers: outcome.run_numbers },
          );
        }
        case 'queued':
          await this.queued(id, start, outcome);
          return { run: outcome.run, duplicate: false };
        case 'stale':
          continue;
        case 'started':
          await this.started(id, start, outcome);
          log.info(
            { workflow_id: id, run_number: outcome.run.run_number, trigger, ...(rerun_of !== null ? { rerun_of, kept: start.kept } : {}) },
            rerun_of !== null ? 'run started (re-run)' : 'run started',
          );
          return { run: outcome.run, duplicate: false };
      }
    }
    throw new Error(`workflow "${id}" kept changing while its run was being started`);
  }

  /** After a start (or a called workflow's start) found the run waiting: its label sets and group told. */
  async queued(id: string, start: RunStart, outcome: StartRunOutcome & { kind: 'queued' }): Promise<void> {
    const { labelSets, group } = start;
    this.ctx.labelSetsAdded(labelSets);
    this.ctx.workflowChanged(id);
    // The start may have begun older queued runs first (docs/architecture.md "Concurrent runs").
    this.ctx.wake();
    this.ctx.log.info(
      { workflow_id: id, run_number: outcome.run.run_number, concurrency_group: outcome.run.concurrency_group ?? undefined },
      group ? `run queued: concurrency group "${group.name}" has a running run, or every slot of the workflow is taken` : 'run queued: every slot of the workflow is taken',
    );
    await this.ctx.queued.afterQueued(id, group !== null, outcome);
  }

  /** After a start (or a called workflow's start): its label sets, changes and job groups told. */
  async started(id: string, start: RunStart, outcome: StartRunOutcome & { kind: 'started' }): Promise<void> {
    const { jobs, labelSets } = start;
    this.ctx.labelSetsAdded(labelSets);
    if (jobs.some((j) => j.concurrency_group !== null)) this.ctx.jobGroups.note(id);
    this.ctx.announce(outcome.changes);
    // Its jobs that arrived in a concurrency group replace the group's waiting ones before the answer.
    if (jobs.some((j) => j.concurrency_group !== null && j.status === 'queued')) await this.ctx.jobGroups.settle().catch(() => undefined);
  }
}
