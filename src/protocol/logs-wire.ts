/** Job logs (docs/api.md "Logs"), stored and live. What a worker pushes is in src/protocol/jobs-wire.ts. */
import { Type, type Static } from 'typebox';
import type { JobState } from '../domain/model.js';
import { stringEnum } from './schema-parts.js';

/** A stored chunk (docs/api.md "Logs") with the run and attempt it belongs to. */
export const LogChunkView = Type.Object({
  workflow_id: Type.String(),
  job_id: Type.String(),
  run_number: Type.Integer(),
  attempt: Type.Integer(),
  sequence: Type.Integer(),
  stream: Type.Unsafe<string>(stringEnum(['stdout', 'stderr'] as const)),
  data: Type.String(),
  timestamp_ms: Type.Integer(),
});
export type LogChunkView = Static<typeof LogChunkView>;

export const LogChunkList = Type.Array(LogChunkView);

/** Most chunks one page of `GET …/logs?limit=` holds. */
export const MAX_LOG_PAGE = 1000;

export const LogsQuery = Type.Object(
  {
    run: Type.Optional(Type.Integer({ minimum: 1 })),
    attempt: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Paging (docs/api.md "Logs"): only chunks with a sequence above this one. Opt-in, so a client that sends neither gets every chunk. */
    after: Type.Optional(Type.Integer({ minimum: -1 })),
    /** Paging: at most this many chunks (1..1000); the `x-weft-next-after` header names the next page. */
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LOG_PAGE })),
    /** `json` (default): the chunks; `text`: the log itself as a plain-text download. */
    format: Type.Optional(stringEnum(['json', 'text'] as const, { description: '`json` (default): the chunks; `text`: their text, as a file to download' })),
  },
  { additionalProperties: false },
);
export type LogsQuery = Static<typeof LogsQuery>;

/** Data of the `end` event of a log stream. */
export interface LogEndEvent {
  status: JobState;
  run_number: number | null;
}
