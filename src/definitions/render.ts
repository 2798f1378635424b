/**
 * A stored definition written back in the contract form of a workflow file (README "Workflow
 * definitions"), for `GET /api/workflows/{id}/definition` and the dashboard's definition view. Parsing
 * what this writes gives the same definition again (test/unit/definitions.test.ts), so the view shows
 * what runs. Defaults are left out, as a person would write the file; the array form's display fields
 * (docs/protocol.md) are not part of a workflow file and are left out too.
 */
import type { Backoff, JobSpec, WorkflowDefinition, WorkflowTriggers } from '../domain/model.js';

export type DefinitionDocument = Record<string, unknown> & { id: string; jobs: Record<string, Record<string, unknown>> };

export function definitionDocument(def: WorkflowDefinition): DefinitionDocument {
  const doc: Record<string, unknown> = { id: def.id, name: def.name };
  if ((def.schedules && def.schedules.length > 0) || def.triggers) {
    // The schedules and triggers are what acts; other events named beside them live on in the trigger text only.
    doc.on = {
      ...(def.schedules && def.schedules.length > 0
        ? {
            schedule: def.schedules.map((s) => ({
              cron: s.cron,
              ...(s.timezone !== null ? { timezone: s.timezone } : {}),
              ...(s.catch_up !== 'latest' ? { catch_up: s.catch_up } : {}),
            })),
          }
        : {}),
      ...triggersDocument(def.triggers ?? {}),
    };
  } else if (def.trigger !== null) {
    doc.on = def.trigger;
  }
  if (def.inputs && Object.keys(def.inputs).length > 0) {
    doc.inputs = Object.fromEntries(
      Object.entries(def.inputs).map(([name, spec]) => [
        name,
        {
          ...(spec.default !== null ? { default: spec.default } : {}),
          ...(spec.required ? { required: true } : {}),
          ...(spec.description !== null ? { description: spec.description } : {}),
        },
      ]),
    );
  }
  if (def.concurrency) {
    doc.concurrency = {
      ...(def.concurrency.max_runs !== 1 ? { max_runs: def.concurrency.max_runs } : {}),
      ...(def.concurrency.when_full !== 'reject' ? { when_full: def.concurrency.when_full } : {}),
      ...(def.concurrency.group !== undefined ? { group: def.concurrency.group } : {}),
      ...(def.concurrency.cancel_in_progress ? { cancel_in_progress: true } : {}),
    };
  }
  if (def.priority !== undefined) doc.priority = def.priority;
  if (def.outputs) {
    doc.outputs = Object.fromEntries(
      Object.entries(def.outputs).map(([name, o]) => [name, o.description !== null ? { value: o.value, description: o.description } : o.value]),
    );
  }
  if (Object.keys(def.env).length > 0) doc.env = { ...def.env };
  if (def.notify && def.notify.length > 0) doc.notify = def.notify.map((t) => ({ ...t, on: [...t.on] }));
  // Key order as a file would have it: jobs last. fromEntries: a job may be named `__proto__`.
  return { ...doc, id: def.id, jobs: Object.fromEntries(def.jobs.map((job) => [job.id, jobDocument(job)])) };
}

/** `on.webhook`, `on.event`, `on.workflow_run` as a file writes them (README "Triggers and notifications"). */
function triggersDocument(t: WorkflowTriggers): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (t.webhook) {
    out.webhook = {
      secret: t.webhook.secret,
      ...(t.webhook.filters
        ? { filters: Object.fromEntries(Object.entries(t.webhook.filters).map(([path, values]) => [path, values.length === 1 ? values[0] : [...values]])) }
        : {}),
      ...(t.webhook.events ? { events: [...t.webhook.events] } : {}),
    };
  }
  if (t.events) out.event = [...t.events];
  if (t.workflow_run) {
    const { workflows, types } = t.workflow_run;
    out.workflow_run = { workflows: [...workflows], ...(types.length === 1 && types[0] === 'completed' ? {} : { types: [...types] }) };
  }
  return out;
}

function jobDocument(job: JobSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (job.name !== job.id) out.name = job.name;
  if (job.needs.length > 0) out.needs = [...job.needs];
  if (job.condition !== undefined && job.condition !== 'success') out.if = `${job.condition}()`;
  // An approval alone has no command (README "Approvals"), nor has a call (README "Workflows calling workflows").
  if (job.uses !== undefined) {
    out.uses = job.uses;
    if (job.with) out.with = { ...job.with };
  } else if (job.command !== '' || !job.approval) {
    out.run = job.command;
  }
  if (job.labels.length > 0) out.labels = [...job.labels];
  if (job.max_retries > 0) out.retries = job.max_retries;
  const backoff = backoffDocument(job.backoff);
  if (backoff !== null) out.backoff = backoff;
  if (Object.keys(job.env).length > 0) out.env = { ...job.env };
  if (job.timeout_secs !== null) out.timeout_secs = job.timeout_secs;
  if (job.for_each) out.for_each = `\${{ needs.${job.for_each.job}.outputs.${job.for_each.key} }}`;
  if (job.strategy && (!job.for_each || !job.strategy.fail_fast || job.strategy.max_parallel !== null)) {
    out.strategy = {
      ...(job.for_each ? {} : { matrix: job.strategy.matrix }),
      ...(job.strategy.fail_fast ? {} : { fail_fast: false }),
      ...(job.strategy.max_parallel !== null ? { max_parallel: job.strategy.max_parallel } : {}),
    };
  }
  if (job.artifacts !== undefined) out.artifacts = [...job.artifacts];
  if (job.download !== undefined) out.download = [...job.download];
  if (job.priority !== undefined) out.priority = job.priority;
  if (job.approval) {
    out.approval = {
      ...(job.approval.message !== null ? { message: job.approval.message } : {}),
      ...(job.approval.timeout_secs !== null ? { timeout_secs: job.approval.timeout_secs } : {}),
    };
  }
  if (job.concurrency) {
    out.concurrency = { group: job.concurrency.group, ...(job.concurrency.cancel_in_progress ? { cancel_in_progress: true } : {}) };
  }
  return out;
}

function backoffDocument(b: Backoff): unknown {
  switch (b.kind) {
    case 'none':
      return null;
    case 'fixed':
      return { fixed: { delay_secs: b.delay_secs } };
    case 'exponential':
      return { exponential: { base_secs: b.base_secs, max_secs: b.max_secs } };
  }
}
