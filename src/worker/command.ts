import type { Command } from 'commander';

/** `weft worker`. */
export function registerWorkerCommand(_program: Command): void {}
