/**
 * Reads WORKFLOWS_DIR. The only module here that touches the file system. A bad file is returned
 * as an error next to the good ones so the server can report it and still start.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { WorkflowDefinition } from '../domain/model.js';
import { definitionHash } from './hash.js';
import { DefinitionError } from './issues.js';
import { parseWorkflowText } from './parse.js';
import { ID_PATTERN, badIdMessage } from './workflow.js';

const FORMATS: Record<string, 'yaml' | 'json'> = { '.yml': 'yaml', '.yaml': 'yaml', '.json': 'json' };

export interface LoadedWorkflow {
  file: string;
  definition: WorkflowDefinition;
  hash: string;
}

export interface LoadResult {
  loaded: LoadedWorkflow[];
  errors: Array<{ file: string; error: DefinitionError }>;
}

function splitName(file: string): { id: string; format: 'yaml' | 'json' } | null {
  const dot = file.lastIndexOf('.');
  if (dot <= 0) return null;
  const format = FORMATS[file.slice(dot).toLowerCase()];
  return format === undefined ? null : { id: file.slice(0, dot), format };
}

function fail(file: string, message: string): { file: string; error: DefinitionError } {
  return { file, error: new DefinitionError(file, [{ source: file, job: null, field: null, message }]) };
}

export function loadWorkflowDir(dir: string): LoadResult {
  const result: LoadResult = { loaded: [], errors: [] };
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    // A fresh install has no workflows directory; anything else (not a directory, no permission) is a real misconfiguration.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return result;
    throw err;
  }
  const claimedBy = new Map<string, string>();
  // Dotfiles are editor and OS leftovers (.#ci.yml, ._ci.yml), never workflows.
  for (const file of names.filter((n) => !n.startsWith('.')).sort()) {
    const kind = splitName(file);
    if (kind === null) continue;
    const path = join(dir, file);
    let text: string;
    try {
      if (!statSync(path).isFile()) continue;
      // Editors on Windows may save a BOM, which JSON.parse rejects.
      text = readFileSync(path, 'utf8').replace(/^\uFEFF/, '');
    } catch (err) {
      result.errors.push(fail(file, `cannot read file: ${(err as Error).message}`));
      continue;
    }
    if (!ID_PATTERN.test(kind.id)) {
      result.errors.push(fail(file, `file name gives ${badIdMessage(kind.id)}`));
      continue;
    }
    const owner = claimedBy.get(kind.id);
    if (owner !== undefined) {
      result.errors.push(fail(file, `workflow id '${kind.id}' is already defined by ${owner}`));
      continue;
    }
    claimedBy.set(kind.id, file);
    try {
      const definition = parseWorkflowText(text, { source: file, format: kind.format, id: kind.id });
      result.loaded.push({ file, definition, hash: definitionHash(definition) });
    } catch (err) {
      if (!(err instanceof DefinitionError)) throw err;
      result.errors.push({ file, error: err });
    }
  }
  return result;
}
