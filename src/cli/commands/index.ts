import type { Command } from 'commander';
import { registerApply } from './apply.js';
import { registerLogs } from './logs.js';
import { registerRerun } from './rerun.js';
import { registerRun } from './run.js';
import { registerStatus } from './status.js';
import { registerToken } from './token.js';
import { registerList } from './list.js';
import { registerRuns } from './runs.js';
import { registerCancel } from './cancel.js';
import { registerApprovals } from './approve.js';
import { registerValidate } from './validate.js';
import { registerWorkers } from './workers.js';
import { registerArtifacts } from './artifacts.js';
import { registerSecret } from './secret.js';
import { registerEvent } from './event.js';

/** Client-side commands (run, rerun, list, runs, cancel, approve, reject, status, logs, artifacts, workers, validate, apply, token, secret, event): one module each. */
export function registerClientCommands(program: Command): void {
  registerRun(program);
  registerRerun(program);
  registerList(program);
  registerRuns(program);
  registerCancel(program);
  registerApprovals(program);
  registerStatus(program);
  registerLogs(program);
  registerArtifacts(program);
  registerWorkers(program);
  registerValidate(program);
  registerApply(program);
  registerToken(program);
  registerSecret(program);
  registerEvent(program);
}
