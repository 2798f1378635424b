/**
 * `weft validate <files...>`: the server's own parser and validator, run locally on workflow files.
 * `weft apply` checks its files the same way before sending anything.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { DefinitionError, formatIssue, parseWorkflowText } from '../../definitions/index.js';
import type { WorkflowDefinition } from '../../domain/model.js';
import { action, serverOption } from './common.js';

const FORMATS: Record<string, 'yaml' | 'json'> = { '.yml': 'yaml', '.yaml': 'yaml', '.json': 'json' };

export interface CheckedFile {
  file: string;
  /** Set when the file is valid. */
  definition?: WorkflowDefinition;
  /** The document as written (what `apply` sends); set when the file is valid. */
  document?: unknown;
  /** One line per problem, in the `<file>: job '…', field '…': …` form. */
  problems: string[];
}

/** Checks each file (a directory stands for its workflow files, as the server loads WORKFLOWS_DIR). */
export function checkFiles(args: string[]): CheckedFile[] {
  const results = expand(args).map(checkFile);
  // The server keys workflows by file name: two files giving one id in one directory collide there.
  const owners = new Map<string, string>();
  for (const r of results) {
    if (!r.definition) continue;
    const key = join(resolve(dirname(r.file)), r.definition.id);
    const owner = owners.get(key);
    if (owner === undefined) owners.set(key, r.file);
    // The same file named twice (`dir` and `./dir/a.yml`) is no collision.
    else if (resolve(owner) !== resolve(r.file)) {
      r.problems.push(`${r.file}: workflow id '${r.definition.id}' is already defined by ${owner}`);
      delete r.definition;
      delete r.document;
    }
  }
  return results;
}

function expand(args: string[]): string[] {
  const files: string[] = [];
  for (const arg of args) {
    let isDir = false;
    try {
      isDir = statSync(arg).isDirectory();
    } catch {
      // Reported by checkFile, with the reason.
    }
    if (!isDir) {
      files.push(arg);
      continue;
    }
    const names = readdirSync(arg)
      .filter((n) => !n.startsWith('.') && FORMATS[extname(n).toLowerCase()] !== undefined)
      .sort();
    files.push(...names.map((n) => join(arg, n)).filter((f) => statSync(f).isFile()));
  }
  return files;
}

function checkFile(file: string): CheckedFile {
  const ext = extname(file);
  const format = FORMATS[ext.toLowerCase()];
  let text: string;
  try {
    // Editors on Windows may save a BOM, which JSON.parse rejects.
    text = readFileSync(file, 'utf8').replace(/^\uFEFF/, '');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const reason = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.message;
    return { file, problems: [`${file}: cannot read file: ${reason}`] };
  }
  if (format === undefined) {
    return { file, problems: [`${file}: not a workflow file: the name must end in .yml, .yaml or .json`] };
  }
  const id = basename(file, ext);
  try {
    const definition = parseWorkflowText(text, { source: file, format, id });
    const document = format === 'json' ? JSON.parse(text) : parseYaml(text);
    return { file, definition, document, problems: [] };
  } catch (err) {
    if (!(err instanceof DefinitionError)) throw err;
    return { file, problems: err.issues.map(formatIssue) };
  }
}

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check workflow files locally (no server needed); exit 1 if any has an error')
    .argument('<files...>', 'workflow files (.yml, .yaml, .json) or directories of them')
    // Accepted like on every other command, so scripts can pass one set of flags; never used.
    .addOption(serverOption().hideHelp())
    .action(
      action(async (files: string[]) => {
        const results = checkFiles(files);
        let bad = 0;
        for (const r of results) {
          if (r.definition) {
            const n = r.definition.jobs.length;
            process.stdout.write(`ok ${r.file} (${n} ${n === 1 ? 'job' : 'jobs'})\n`);
          } else {
            bad++;
            for (const line of r.problems) process.stdout.write(`${line}\n`);
          }
        }
        if (results.length > 1) {
          process.stdout.write(`${results.length - bad} of ${results.length} files valid\n`);
        }
        if (bad > 0 || results.length === 0) process.exitCode = 1;
        if (results.length === 0) process.stderr.write('weft: no workflow files found\n');
      }),
    );
}
