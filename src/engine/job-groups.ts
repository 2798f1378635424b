import type { Logger } from 'pino';
import type { JobChange, Store } from '../store/store.js';
import { StoreUnavailableError } from '../store/index.js';
import { SingleFlight } from '../util/single-flight.js';

/** How many groups one store call settles; a call that fills it is followed by another. */
const GROUPS_PER_CALL = 64;

/**
 * Concurrency groups of jobs (README "Concurrency groups"): after a change that may have made a job of
 * a group queued, the store settles the arrivals (store.settleJobGroups: the waiting jobs they replace,
 * and with cancel_in_progress the running ones, are cancelled). The claim keeps a group to one running
 * job whether or not this has run; this carries out the replacing. Changes are looked at only for the
 * workflows known to put jobs in groups (from runs this server started and from what earlier calls
 * settled), so other workflows cost a set lookup; the reaper's pass settles every group whatever this
 * server knows (a run started by another server, a crash between a change and its settling).
 */
export class JobGroups {
  private readonly grouped = new Set<string>();
  private readonly passes = new SingleFlight(() => this.settleRound());

  constructor(
    private readonly store: Store,
    private readonly now: () => number,
    private readonly announce: (changes: readonly JobChange[]) => void,
    private readonly log: Logger,
    /** The first grouped workflow became known: other servers' changes matter here from now on. */
    private readonly watched: () => void = () => {},
  ) {}

  /** Whether any workflow is known to put jobs in groups (its changes, from any server, are looked at). */
  get watching(): boolean {
    return this.grouped.size > 0;
  }

  /** A workflow whose runs put jobs in concurrency groups. */
  note(workflowId: string): void {
    this.add(workflowId);
  }

  private add(workflowId: string): void {
    if (this.grouped.has(workflowId)) return;
    this.grouped.add(workflowId);
    if (this.grouped.size === 1) this.watched();
  }

  /** Durable changes (this server's or another's): settles soon if they are of a grouped workflow. */
  afterChanges(changes: readonly JobChange[]): void {
    if (this.grouped.size === 0) return;
    if (changes.some((c) => this.grouped.has(c.workflow_id))) void this.settle().catch(() => undefined);
  }

  /**
   * Settles every group with an arrival; resolves once the arrivals known when it was called are
   * settled. One call runs at a time; changes meanwhile make it run once more.
   */
  settle(): Promise<void> {
    return this.passes.run();
  }

  private async settleRound(): Promise<void> {
    for (;;) {
      let outcome;
      try {
        outcome = await this.store.settleJobGroups(this.now(), GROUPS_PER_CALL);
      } catch (err) {
        // The reaper's next pass settles what this missed.
        if (!(err instanceof StoreUnavailableError)) this.log.error({ err }, 'settling concurrency groups of jobs failed');
        throw err;
      }
      for (const w of outcome.workflows) this.add(w);
      if (outcome.changes.length > 0) {
        this.log.info({ jobs: outcome.changes.length }, 'jobs cancelled or decided by arrivals in concurrency groups');
        this.announce(outcome.changes);
      }
      if (outcome.groups < GROUPS_PER_CALL) break;
    }
  }
}
