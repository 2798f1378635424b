/**
 * One pass at a time over work that may keep arriving (settling groups, the run-end outbox, ready
 * calls, waiting claims, due notifications): a call while a pass runs makes the pass run once more and
 * shares its promise, so whatever was pending when a caller called is handled by the time that
 * caller's promise resolves. The pass is cleared synchronously as the loop ends (not in a later
 * `.finally` callback), so a call landing between the last round and the promise settling starts a new
 * pass instead of sharing one that will not look again.
 */
export class SingleFlight {
  private running: Promise<void> | null = null;
  private again = false;

  /**
   * @param round one round of the work; a rejection ends the pass and rejects its callers.
   * @param goOn whether another round may start (false once the owner is stopping).
   */
  constructor(
    private readonly round: () => Promise<void>,
    private readonly goOn: () => boolean = () => true,
  ) {}

  /** Whether a pass is under way. */
  get busy(): boolean {
    return this.running !== null;
  }

  /** The pass under way, if any (to wait for it on shutdown). */
  get current(): Promise<void> | null {
    return this.running;
  }

  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.loop();
    return this.running;
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.round();
      } while (this.again && this.goOn());
    } finally {
      this.running = null;
    }
  }
}
