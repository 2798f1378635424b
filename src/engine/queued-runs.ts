import type { Logger } from 'pino';
import type { JobChange, RunKey, Store } from '../store/store.js';

/** What a queued start's concurrency group decided: waiting runs it replaced, running runs to cancel. */
export interface GroupQueued {
  replaced?: RunKey[];
  supersede?: RunKey[];
}

/** How many workflows with queued runs one reaper pass looks at; the rest wait for the next pass. */
const QUEUED_WORKFLOWS_PER_PASS = 1000;

/**
 * Starts queued runs when a slot of their workflow, or their concurrency group, frees (docs/architecture.md
 * "Concurrent runs"), and carries out what a grouped start decided (afterQueued). The
 * store does the starting, exactly once under the workflow row's lock; this only decides when to ask:
 * right after an operation of this process changed a job of a workflow known to have queued runs, and
 * on every reaper pass for every workflow that has any (so runs queued through another server, or
 * left by a process that stopped, start within REAP_INTERVAL_SECS).
 */
export class QueuedRuns {
  /** Workflows that had a queued run when last seen; refreshed from the store on each reaper pass. */
  private readonly waiting = new Set<string>();
  /**
   * Of those, the ones whose queued run waits on a concurrency group: another workflow's run may free
   * it, so every change here gives them a chance (README "Concurrency groups").
   */
  private readonly waitingOnGroup = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly announce: (changes: readonly JobChange[]) => void,
    /** A workflow's runs changed (a run cancelled here): told to live-event listeners. */
    private readonly workflowChanged: (workflowId: string) => void,
    private readonly log: Logger,
  ) {}

  noteQueued(workflowId: string, grouped = false): void {
    this.waiting.add(workflowId);
    if (grouped) this.waitingOnGroup.add(workflowId);
  }

  /**
   * After a run of `workflowId` was queued (README "Concurrency groups"): the group's waiting runs it
   * replaced are told about, and with cancel_in_progress the group's running runs are cancelled, each
   * as a cancel does, after which the queued run starts if its slots and group allow. Never throws:
   * the run is queued durably, and the reaper starts it once the group frees if anything here fails.
   */
  async afterQueued(workflowId: string, grouped: boolean, group: GroupQueued): Promise<void> {
    this.noteQueued(workflowId, grouped);
    for (const r of group.replaced ?? []) {
      this.workflowChanged(r.workflow_id);
      this.log.info({ workflow_id: r.workflow_id, run_number: r.run_number, by: workflowId }, 'queued run cancelled: a newer run of its concurrency group replaced it');
    }
    const supersede = group.supersede ?? [];
    if (supersede.length === 0) return;
    try {
      for (const r of supersede) {
        const outcome = await this.store.cancelRun(r.workflow_id, this.now(), r.run_number);
        if (outcome.kind !== 'cancelled') continue;
        this.announce(outcome.changes);
        this.workflowChanged(r.workflow_id);
        this.log.info({ workflow_id: r.workflow_id, run_number: r.run_number, by: workflowId }, 'run cancelled: a newer run of its concurrency group cancels the one in progress');
      }
      await this.start(workflowId);
    } catch (err) {
      this.log.warn({ err, workflow_id: workflowId }, 'could not cancel the run in progress of the concurrency group now; the queued run waits for it to end');
    }
  }

  /**
   * After an operation's changes: the workflows among them with queued runs get a chance to start them.
   * Never throws: the operation itself succeeded, and the reaper tries again.
   */
  async after(changes: readonly JobChange[]): Promise<void> {
    if (this.waiting.size === 0 || changes.length === 0) return;
    const ids = new Set([...changes.map((c) => c.workflow_id).filter((id) => this.waiting.has(id)), ...this.waitingOnGroup]);
    for (const id of ids) {
      try {
        await this.start(id);
      } catch (err) {
        this.log.warn({ err, workflow_id: id }, 'could not start queued runs now; the reaper tries again');
      }
    }
  }

  /** The reaper's pass: every workflow with a queued run, read through the store's runs_queued index. */
  async pass(): Promise<number> {
    const ids = await this.store.read((r) => r.queuedWorkflows(QUEUED_WORKFLOWS_PER_PASS));
    this.waiting.clear();
    // A group waiter known here stays one while its workflow still has a queued run.
    const queued = new Set(ids);
    for (const id of this.waitingOnGroup) if (!queued.has(id)) this.waitingOnGroup.delete(id);
    let started = 0;
    for (const id of ids) {
      this.waiting.add(id);
      started += await this.start(id);
    }
    return started;
  }

  /** Starts what the workflow's free slots and groups allow now; answers how many runs started. */
  async start(workflowId: string): Promise<number> {
    const out = await this.store.startQueuedRuns(workflowId, this.now());
    if (out.started.length === 0) return 0;
    const still = await this.store.read((r) => r.activeRuns(workflowId));
    if (!still.some((r) => r.status === 'queued')) {
      this.waiting.delete(workflowId);
      this.waitingOnGroup.delete(workflowId);
    }
    this.announce(out.changes);
    for (const run of out.started) this.log.info({ workflow_id: workflowId, run_number: run.run_number }, 'queued run started');
    return out.started.length;
  }
}
