/** The embeddable worker's options, checked, with their timings in milliseconds. */
import type { WorkerOptions } from './worker-api.js';

/** The options' timings in milliseconds, checked; a bad value throws a RangeError naming it. */
export function checkOptions(opts: WorkerOptions) {
  if (typeof opts.handler !== 'function') throw new TypeError('Worker: `handler` must be a function');
  const ttl = opts.leaseTtlSecs ?? 30;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 86_400) throw new RangeError(`Worker: leaseTtlSecs must be an integer 1..86400, got ${ttl}`);
  const hb = opts.heartbeatSecs ?? ttl / 3;
  if (!(hb > 0 && hb < ttl)) throw new RangeError(`Worker: heartbeatSecs must be above 0 and below leaseTtlSecs (${ttl}), got ${hb}`);
  const positive = (name: string, v: number) => {
    if (!(Number.isFinite(v) && v > 0)) throw new RangeError(`Worker: ${name} must be a positive number, got ${v}`);
    return v;
  };
  const concurrency = opts.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`Worker: concurrency must be a positive integer, got ${concurrency}`);
  const longPollSecs = opts.longPollSecs ?? 20;
  if (!(Number.isFinite(longPollSecs) && longPollSecs >= 0 && longPollSecs <= 60)) {
    throw new RangeError(`Worker: longPollSecs must be 0..60, got ${longPollSecs}`);
  }
  return {
    leaseTtlSecs: ttl,
    heartbeatMs: hb * 1000,
    pollMs: positive('pollSecs', opts.pollSecs ?? 2) * 1000,
    longPollSecs,
    concurrency,
    cancelPollMs: positive('cancelPollSecs', opts.cancelPollSecs ?? 2) * 1000,
    maxBackoffMs: positive('maxBackoffSecs', opts.maxBackoffSecs ?? 15) * 1000,
    logFlushMs: Math.max(0, opts.logFlushMs ?? 250),
    logDrainMs: Math.max(0, opts.logDrainSecs ?? 10) * 1000,
    abortGraceMs: Math.max(0, opts.abortGraceMs ?? 10_000),
  };
}
