/**
 * `${{ … }}` value expressions (README "Matrix, fan-out and artifacts"): GitHub Actions' syntax for a
 * value only, no operators and no functions. A template is split into literal text and references;
 * what a reference may name, and where, is checked by src/definitions/expressions.ts, and each layer
 * that knows a value substitutes it (matrix and inputs when a run is planned, needs when a job is
 * leased, items when a fan-out is expanded, the event a run was started with when the run starts).
 */
import { parsePath, PATH_SOURCE, type Path } from './triggers.js';

export type ExprRef =
  | { kind: 'matrix'; key: string }
  | { kind: 'inputs'; key: string }
  | { kind: 'needs_output'; job: string; key: string }
  | { kind: 'needs_result'; job: string }
  | { kind: 'item'; key: string | null }
  | { kind: 'secrets'; name: string }
  /** A value of the event payload the run was started with (README "Triggers and notifications"); '' when absent. */
  | { kind: 'event'; path: Path }
  /** The name of that event (`push`, `deployed`, `workflow_run`, …); '' for a run started otherwise. */
  | { kind: 'event_name' }
  /** `${{ jobs.<job>.outputs.<key> }}`: only in a workflow's `outputs:` (README "Workflows calling workflows"). */
  | { kind: 'jobs_output'; job: string; key: string }
  /** `${{ '…' }}`: text as written (`''` is one quote), e.g. `${{ '${{' }}` for a literal opener. */
  | { kind: 'literal'; value: string };

export type TemplatePart = string | { ref: ExprRef; text: string };

const EXPR = /\$\{\{([\s\S]*?)\}\}/g;
const KEY = '[A-Za-z_][A-Za-z0-9_-]*';
/** What a secret may be called (README "Secrets"): a letter or underscore, then letters, digits, underscores. */
export const SECRET_NAME_PATTERN = '[A-Za-z_][A-Za-z0-9_]{0,127}';
const JOB = '[A-Za-z0-9_-]+';
const FORMS: Array<[RegExp, (m: RegExpExecArray) => ExprRef]> = [
  [new RegExp(`^matrix\\.(${KEY})$`), (m) => ({ kind: 'matrix', key: m[1]! })],
  [new RegExp(`^inputs\\.(${KEY})$`), (m) => ({ kind: 'inputs', key: m[1]! })],
  [new RegExp(`^needs\\.(${JOB})\\.outputs\\.(${KEY})$`), (m) => ({ kind: 'needs_output', job: m[1]!, key: m[2]! })],
  [new RegExp(`^needs\\.(${JOB})\\.result$`), (m) => ({ kind: 'needs_result', job: m[1]! })],
  [/^item$/, () => ({ kind: 'item', key: null })],
  [new RegExp(`^item\\.(${KEY})$`), (m) => ({ kind: 'item', key: m[1]! })],
  [new RegExp(`^secrets\\.(${SECRET_NAME_PATTERN})$`), (m) => ({ kind: 'secrets', name: m[1]! })],
  [new RegExp(`^event\\.(${PATH_SOURCE})$`), (m) => ({ kind: 'event', path: parsePath(m[1]!)! })],
  [/^event_name$/, () => ({ kind: 'event_name' })],
  [new RegExp(`^jobs\\.(${JOB})\\.outputs\\.(${KEY})$`), (m) => ({ kind: 'jobs_output', job: m[1]!, key: m[2]! })],
  [/^'((?:[^']|'')*)'$/, (m) => ({ kind: 'literal', value: m[1]!.replace(/''/g, "'") })],
];

export const EXPRESSION_FORMS = "matrix.<key>, inputs.<name>, needs.<job>.outputs.<key>, needs.<job>.result, item, item.<key>, secrets.<NAME>, event.<path>, event_name, jobs.<job>.outputs.<key>, '<text>'";


export function hasExpression(text: string): boolean {
  return text.includes('${{');
}

/** Splits `text` into literals and references; `error` names the first expression that is not a value this syntax knows. */
export function parseTemplate(text: string): { parts: TemplatePart[] } | { error: string } {
  const parts: TemplatePart[] = [];
  let last = 0;
  EXPR.lastIndex = 0;
  for (let m = EXPR.exec(text); m !== null; m = EXPR.exec(text)) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    const inner = m[1]!.trim();
    const form = FORMS.map(([re, make]) => {
      const hit = re.exec(inner);
      return hit ? make(hit) : null;
    }).find((r) => r !== null);
    if (!form) return { error: `unsupported expression '${m[0]}': only values are supported (${EXPRESSION_FORMS})` };
    parts.push({ ref: form, text: m[0] });
    last = m.index + m[0].length;
  }
  const rest = text.slice(last);
  if (rest.includes('${{')) return { error: `unterminated expression '${rest.slice(rest.indexOf('${{'), rest.indexOf('${{') + 40)}': close it with '}}'` };
  if (last < text.length) parts.push(rest);
  return { parts };
}

/** References of a template (none for a parse error, which the definition reader reports). */
export function referencesOf(text: string): ExprRef[] {
  if (!hasExpression(text)) return [];
  const parsed = parseTemplate(text);
  return 'parts' in parsed ? parsed.parts.flatMap((p) => (typeof p === 'string' ? [] : [p.ref])) : [];
}

/**
 * Replaces the references `resolve` answers (undefined: left as written, for a later layer).
 * Non-string values are written as JSON, as GitHub writes an object or a number.
 */
export function substitute(text: string, resolve: (ref: ExprRef) => unknown, opts: { keepForLater?: boolean } = {}): string {
  if (!hasExpression(text)) return text;
  const parsed = parseTemplate(text);
  if (!('parts' in parsed)) return text;
  return parsed.parts
    .map((p) => {
      if (typeof p === 'string') return p;
      if (p.ref.kind === 'literal') return opts.keepForLater ? p.text : p.ref.value;
      const v = resolve(p.ref);
      if (v === undefined) return p.text;
      return opts.keepForLater ? escapeExpressions(valueText(v)) : valueText(v);
    })
    .join('');
}

/**
 * A value put into a template that a later layer parses again (an env value filled with an input when
 * a run is planned, or an item when a fan-out is expanded, is parsed once more when the job is leased):
 * each `${{` it holds becomes the literal `${{ '${{' }}`, so that the value is text to that layer and
 * never a reference of its own. Without this, an input or an upstream job's output holding
 * `${{ secrets.DEPLOY_KEY }}` would have the lease fill a secret in where the definition put none.
 */
export function escapeExpressions(value: string): string {
  return value.includes('${{') ? value.replaceAll('${{', "${{ '${{' }}") : value;
}

/** A value as text: strings as they are, null as '', anything else as JSON. */
export function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  return JSON.stringify(v);
}
