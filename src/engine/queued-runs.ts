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
 * Starts queued runs when a slot of their workflow frees (docs/architecture.md "Concurrent runs"). The
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
    private readonly log: Logger,
  ) {}

  noteQueued(workflowId: string, grouped = false): void {
    this.waiting.add(workflowId);
    if (grouped) this.waitingOnGroup.add(workflowId);
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
    this.waitingOnGroup.clear();
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
