/**
 * Problems found in a workflow definition. Validation collects every issue before failing so a
 * user fixes a file in one pass instead of one error per restart.
 */

export interface DefinitionIssue {
  /** File name, or a label such as "request body". */
  source: string;
  /** Job id (or `jobs[i]` when the job has no usable id); null for workflow-level issues. */
  job: string | null;
  /** Key path inside the job or workflow, e.g. `needs`, `backoff.fixed.delay_secs`, `steps[1].run`. */
  field: string | null;
  message: string;
}

export function formatIssue(issue: DefinitionIssue): string {
  const where: string[] = [];
  if (issue.job !== null) where.push(`job '${issue.job}'`);
  if (issue.field !== null) where.push(`field '${issue.field}'`);
  const prefix = where.length > 0 ? `${issue.source}: ${where.join(', ')}: ` : `${issue.source}: `;
  // Values quoted in messages may hold newlines; the message format is one line per issue.
  return (prefix + issue.message).replace(/\r?\n/g, '\\n');
}

// A request body with thousands of broken jobs would otherwise yield a message of thousands of
// lines; `issues` still holds every one.
const MAX_MESSAGE_LINES = 50;

function summarize(source: string, issues: readonly DefinitionIssue[]): string {
  if (issues.length === 0) return `${source}: invalid workflow definition`;
  const lines = issues.slice(0, MAX_MESSAGE_LINES).map(formatIssue);
  if (issues.length > MAX_MESSAGE_LINES) lines.push(`${source}: … and ${issues.length - MAX_MESSAGE_LINES} more issues`);
  return lines.join('\n');
}

export class DefinitionError extends Error {
  readonly issues: DefinitionIssue[];
  readonly source: string;

  constructor(source: string, issues: DefinitionIssue[]) {
    super(summarize(source, issues));
    this.name = 'DefinitionError';
    this.source = source;
    this.issues = issues;
  }
}

/** Accumulates issues for one source; readers report into it and keep going. */
export class Issues {
  readonly list: DefinitionIssue[] = [];

  constructor(readonly source: string) {}

  add(job: string | null, field: string | null, message: string): void {
    this.list.push({ source: this.source, job, field, message });
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new DefinitionError(this.source, this.list);
  }
}
