import type { Command } from 'commander';

/** Client-side commands (run, status, logs, workers, validate, apply). */
export function registerClientCommands(_program: Command): void {}
