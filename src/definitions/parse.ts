/**
 * Text → definition. Syntax problems are reported with a line and column, in the same
 * `DefinitionError` shape as validation problems, so callers handle one error type.
 */
import { LineCounter, parseDocument } from 'yaml';
import type { WorkflowDefinition } from '../domain/model.js';
import { Issues } from './issues.js';
import { validateWorkflow } from './workflow.js';

export interface TextOptions {
  source: string;
  format: 'yaml' | 'json';
  /** The file name without extension. */
  id: string;
}

export interface ObjectOptions {
  source: string;
  id?: string;
  generateId?: () => string;
}

export function parseWorkflowText(text: string, opts: TextOptions): WorkflowDefinition {
  const value = opts.format === 'json' ? parseJson(text, opts.source) : parseYaml(text, opts.source);
  return validateWorkflow(value, opts.source, { id: opts.id });
}

export function parseWorkflowObject(value: unknown, opts: ObjectOptions): WorkflowDefinition {
  return validateWorkflow(value, opts.source, { id: opts.id, generateId: opts.generateId });
}

type YamlProblem = { code: string; message: string; pos: [number, number] };

function parseYaml(text: string, source: string): unknown {
  const issues = new Issues(source);
  const lines = new LineCounter();
  // uniqueKeys: a repeated job id or key would otherwise silently replace the first one.
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter: lines });
  // Warnings (e.g. an unknown `!tag`) are errors here: the value would silently become a string.
  for (const problem of [...doc.errors, ...doc.warnings] as YamlProblem[]) {
    issues.add(null, null, yamlMessage(problem, text, lines));
  }
  issues.throwIfAny();
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // Unresolvable or exponentially expanding aliases surface here, not in doc.errors.
    issues.add(null, null, `YAML error: ${(err as Error).message}`);
    issues.throwIfAny();
  }
  if (value === null || value === undefined) {
    issues.add(null, null, "the document is empty; expected a mapping with a 'jobs' key");
    issues.throwIfAny();
  }
  return value;
}

function yamlMessage(problem: YamlProblem, text: string, lines: LineCounter): string {
  const { line, col } = lines.linePos(problem.pos[0]);
  const where = `line ${line}, column ${col}`;
  if (problem.code === 'DUPLICATE_KEY') {
    const key = keyAt(text, problem.pos[0]);
    return `YAML error at ${where}: duplicate key${key !== '' ? ` '${key}'` : ''}`;
  }
  return `YAML error at ${where}: ${problem.message}`;
}

function parseJson(text: string, source: string): unknown {
  const issues = new Issues(source);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    issues.add(null, null, `JSON syntax error: ${jsonErrorText((err as Error).message, text)}`);
    issues.throwIfAny();
  }
  findJsonDuplicateKeys(text, issues);
  issues.throwIfAny();
  return value;
}

/** V8 sometimes reports a character offset; a line and column are what an editor needs. */
function jsonErrorText(message: string, text: string): string {
  const match = /at position (\d+)/.exec(message);
  if (match === null) return text.trim() === '' ? 'the file is empty' : message;
  const offset = Number(match[1]);
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const col = offset - before.lastIndexOf('\n');
  return `${message.replace(/ in JSON at position \d+.*$/, '').replace(/ at position \d+.*$/, '')} at line ${line}, column ${col}`;
}

/**
 * JSON.parse keeps the last of two equal keys; a duplicated job would vanish silently. Valid JSON
 * is valid YAML 1.2 flow syntax, so the YAML parser locates duplicates; its other complaints are
 * ignored because JSON.parse already accepted the text.
 */
function findJsonDuplicateKeys(text: string, issues: Issues): void {
  const lines = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter: lines });
  for (const problem of doc.errors as YamlProblem[]) {
    if (problem.code !== 'DUPLICATE_KEY') continue;
    const { line, col } = lines.linePos(problem.pos[0]);
    const key = keyAt(text, problem.pos[0]);
    issues.add(null, null, `JSON error at line ${line}, column ${col}: duplicate key${key !== '' ? ` '${key}'` : ''}`);
  }
}

/** The yaml library points at a duplicate key's first character only; read the whole key token. */
function keyAt(text: string, offset: number): string {
  const rest = text.slice(offset, offset + 200);
  const quoted = /^"((?:[^"\\\n]|\\.)*)"|^'((?:[^'\n]|'')*)'/.exec(rest);
  if (quoted !== null) return quoted[1] ?? quoted[2] ?? '';
  return (/^[^:,{}[\]\n]*/.exec(rest)?.[0] ?? '').trim();
}
