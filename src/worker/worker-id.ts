/** The id a worker registers under when it is given none. */
import { randomBytes } from 'node:crypto';
import os from 'node:os';

/** `${hostname}-${6 hex}`: the worker id used when none is given. */
export function defaultWorkerId(): string {
  return `${os.hostname()}-${randomBytes(3).toString('hex')}`;
}
