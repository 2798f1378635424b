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
  return prefix + issue.message;
}

export class DefinitionError extends Error {
  readonly issues: DefinitionIssue[];
  readonly source: string;

  constructor(source: string, issues: DefinitionIssue[]) {
    super(issues.length > 0 ? issues.map(formatIssue).join('\n') : `${source}: invalid workflow definition`);
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
