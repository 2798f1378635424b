/** The service's own answers: health, readiness and the API reference. */
import { Type } from 'typebox';

export const HealthAnswer = Type.Object({
  ok: Type.Boolean(),
  event_loop_delay_ms: Type.Object(
    { p50: Type.Number(), p99: Type.Number(), max: Type.Number() },
    { description: 'how long callbacks waited for the event loop over the last one to two seconds' },
  ),
});

export const ReadyAnswer = Type.Object({ ok: Type.Boolean() });

export const OpenApiDocumentAnswer = Type.Object({ openapi: Type.String(), info: Type.Object({}), paths: Type.Object({}) });
