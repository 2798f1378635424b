/**
 * The definition as YAML in the workflow-file form (README "Workflow definitions"), rebuilt from the
 * status document's fields: there is no endpoint for the file itself, and the document carries no `env`.
 */
import { stringify } from 'yaml';
import type { StatusDocument } from '../../protocol/types.js';

export function definitionYaml(doc: StatusDocument): string {
  const jobs: Record<string, Record<string, unknown>> = {};
  for (const j of doc.jobs) {
    const def: Record<string, unknown> = {};
    if (j.name !== j.id) def.name = j.name;
    if (j.depends_on.length > 0) def.needs = j.depends_on;
    // Older servers send no condition; success() is the default either way.
    if (j.condition && j.condition !== 'success()') def.if = j.condition;
    def.run = j.command;
    if (j.required_labels.length > 0) def.labels = j.required_labels;
    if (j.max_retries > 0) def.retries = j.max_retries;
    if (j.backoff !== 'None') def.backoff = j.backoff;
    if (j.timeout_secs != null) def.timeout_secs = j.timeout_secs;
    jobs[j.id] = def;
  }
  const top: Record<string, unknown> = {};
  if (doc.name !== doc.id) top.name = doc.name;
  if (doc.trigger) top.on = doc.trigger;
  top.jobs = jobs;
  return stringify(top, { lineWidth: 0 });
}

export function Definition({ doc }: { doc: StatusDocument }) {
  return (
    <section class="definition" aria-label="Definition">
      <p class="muted small">
        Rebuilt from the status document as YAML in the workflow-file form (environment variables are not shown).
      </p>
      <pre tabIndex={0}>{definitionYaml(doc)}</pre>
    </section>
  );
}
