/** A FIFO async lock: `run` executes its function only after every earlier one has settled. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    // The chain must never reject, or one failed transaction would poison every later one.
    this.tail = result.catch(() => undefined);
    return result;
  }
}
