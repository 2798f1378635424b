/**
 * Artifacts (README "Artifacts", docs/api.md "Artifacts"): files a job's successful attempt uploaded,
 * listed per run and downloaded by job and name. The upload and download bodies are raw bytes, not JSON.
 */
import { Type, type Static } from 'typebox';
import { Id } from './schema-parts.js';

/** SHA-256 as 64 lowercase hex digits. */
export const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });

/** One stored artifact as listed. */
export const ArtifactView = Type.Object({
  job_id: Type.String(),
  name: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  sha256: Sha256,
  created_at_ms: Type.Integer(),
});
export type ArtifactView = Static<typeof ArtifactView>;

export const ArtifactList = Type.Object({
  workflow_id: Type.String(),
  run_number: Type.Integer(),
  artifacts: Type.Array(ArtifactView),
});
export type ArtifactList = Static<typeof ArtifactList>;

/**
 * One artifact a claimed job's `download:` puts into its working directory (the claim answer's
 * `downloads`, src/protocol/jobs-wire.ts).
 */
export const ArtifactDownload = Type.Object({
  job_id: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  sha256: Type.String(),
  /** Where to GET it: `/api/workflows/{id}/runs/{n}/artifacts/{job_id}/{name}`, each segment URL-encoded. */
  path: Type.String(),
});
export type ArtifactDownload = Static<typeof ArtifactDownload>;

export const ArtifactRunParams = Type.Object({ wf_id: Id, run: Type.Integer({ minimum: 1 }) });
/** Job ids are taken as they come (matrix instances carry `~`); the store answers whether such a job has artifacts. */
export const ArtifactParams = Type.Object({ wf_id: Id, run: Type.Integer({ minimum: 1 }), job_id: Id, name: Type.String() });
export const ArtifactUploadParams = Type.Object({ lease_id: Id, name: Type.String() });
export const ArtifactListQuery = Type.Object(
  { job: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: "keep one job's artifacts" })) },
  { additionalProperties: false },
);
