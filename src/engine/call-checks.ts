/**
 * The checks of a definition's calls that need other workflows (README "Workflows calling
 * workflows"): a called workflow that exists takes the `with:` values it is given (no unknown input,
 * every required one given); a save the store refused names the chain it would make. Both become a
 * 400 `invalid_workflow` naming the job and field, as any definition problem.
 */
import { callChainMessage } from '../domain/calls.js';
import type { WorkflowDefinition } from '../domain/model.js';
import { DefinitionError, type DefinitionIssue } from '../definitions/index.js';
import type { CallChainRefusal, StoreReads } from '../store/store.js';

/** Throws a DefinitionError listing every `with:` that does not fit a called workflow saved now. */
export async function checkCallInputs(r: StoreReads, def: WorkflowDefinition): Promise<void> {
  const issues: DefinitionIssue[] = [];
  const source = `workflow "${def.id}"`;
  const read = new Map<string, WorkflowDefinition | null>();
  for (const job of def.jobs) {
    if (job.uses === undefined) continue;
    if (!read.has(job.uses)) read.set(job.uses, (await r.getWorkflow(job.uses))?.definition ?? null);
    // A workflow not saved yet (files load in any order) is checked when the call starts.
    const callee = read.get(job.uses);
    if (!callee) continue;
    const declared = callee.inputs ?? {};
    const names = Object.keys(declared);
    for (const name of Object.keys(job.with ?? {})) {
      if (!Object.hasOwn(declared, name)) {
        issues.push({ source, job: job.id, field: `with.${name}`, message: `workflow "${job.uses}" has no input "${name}" (${names.length > 0 ? `it declares ${names.join(', ')}` : 'it declares no inputs'})` });
      }
    }
    const missing = names.filter((n) => declared[n]!.required && !Object.hasOwn(job.with ?? {}, n));
    if (missing.length > 0) {
      issues.push({ source, job: job.id, field: 'with', message: `workflow "${job.uses}" requires input ${missing.map((n) => `"${n}"`).join(', ')}; give it in with:` });
    }
  }
  if (issues.length > 0) throw new DefinitionError(source, issues);
}

/** The store's refusal of a save whose calls close a cycle or nest too deep, as a definition problem. */
export function callChainError(def: WorkflowDefinition, refusal: CallChainRefusal): DefinitionError {
  const { problem } = refusal;
  const at = problem.chain.indexOf(def.id);
  const callee = problem.chain[at + 1];
  const job = def.jobs.find((j) => j.uses === callee) ?? def.jobs.find((j) => j.uses !== undefined);
  const source = `workflow "${def.id}"`;
  return new DefinitionError(source, [{ source, job: job?.id ?? null, field: 'uses', message: callChainMessage(def.id, problem) }]);
}
