/** The `weft` command: every subcommand is registered from src/cli/commands. */
import { Command } from 'commander';
import { loadServerConfig } from '../runtime/config.js';
import { VERSION } from '../version.js';
import { registerWorkerCommand } from './commands/worker.js';
import { registerClientCommands } from './commands/index.js';
import { registerPrune } from './commands/prune.js';
import { registerDaemons } from './commands/daemons.js';
import { exitOnError } from './commands/common.js';

const program = new Command()
  .name('weft')
  .description('Workflow job orchestration: DAGs of shell commands pulled by workers over HTTP')
  .version(VERSION);

registerDaemons(program);
registerPrune(program, () => loadServerConfig());
registerWorkerCommand(program);
registerClientCommands(program);

program.parseAsync(process.argv).catch(exitOnError);
