/**
 * Runs started from outside (docs/api.md "Triggers"): a webhook delivery, a named event, and the event
 * a run keeps. These answers are written by hand; their schemas document them (GET /api/openapi.json).
 */
import { Type, type Static } from 'typebox';
import { RUN_STATES } from '../domain/model.js';
import { DELIVERY_ID, EVENT_NAME } from '../domain/triggers.js';
import { Id, stringEnum } from './schema-parts.js';

export const HookParams = Type.Object({ id: Id });
export const EventParams = Type.Object({ name: Type.String({ pattern: EVENT_NAME.source, description: 'the event name: 1 to 128 of A-Z a-z 0-9 _ . -' }) });

/** `?delivery_id=`: the same as the `X-Weft-Delivery` header. */
export const EventQuery = Type.Object(
  {
    delivery_id: Type.Optional(Type.String({ pattern: DELIVERY_ID.source, description: 'a delivery seen before for a workflow starts no second run of it (as X-Weft-Delivery)' })),
  },
  { additionalProperties: false },
);

const runStatus = stringEnum(RUN_STATES, { description: 'the run as it started: running, or queued for a slot or its concurrency group' });

/** What a delivery to POST /api/hooks/{id} did. */
export const HookAnswer = Type.Object({
  workflow_id: Type.String(),
  started: Type.Boolean({ description: 'a run started (or was queued) for this delivery' }),
  duplicate: Type.Boolean({ description: 'the delivery id was seen before: run_number is the run it started then' }),
  run_number: Type.Optional(Type.Integer({ minimum: 1 })),
  status: Type.Optional(runStatus),
  reason: Type.Optional(Type.String({ description: 'why no run started: a filter that differs, an event the hook does not take, a ping' })),
});
export type HookAnswer = Static<typeof HookAnswer>;

/** One workflow's run that a named event started (or had started before: `duplicate`). */
export const EventRun = Type.Object({
  workflow_id: Type.String(),
  run_number: Type.Integer({ minimum: 1 }),
  status: runStatus,
  duplicate: Type.Boolean({ description: 'the delivery id was seen before for this workflow: the run it started then' }),
});

/** What POST /api/events/{name} did for each listening workflow. */
export const EventAnswer = Type.Object({
  event: Type.String(),
  runs: Type.Array(EventRun, { description: 'the runs started, one per listening workflow that started one' }),
  refused: Type.Array(
    Type.Object({ workflow_id: Type.String(), error: Type.String(), message: Type.String() }),
    { description: 'listening workflows whose run could not start, each with the error its own start would answer (run_active, secret_missing, …)' },
  ),
});
export type EventAnswer = Static<typeof EventAnswer>;

/** GET …/runs/{n}/event: the payload itself, as the run keeps it. */
export const RunEventAnswer = Type.Unknown({ description: 'the JSON payload the run was started with, as it keeps it; its name in the x-weft-event-name header' });
