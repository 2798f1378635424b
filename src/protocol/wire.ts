/**
 * The wire: what every endpoint takes and answers (docs/api.md), one module per endpoint family. Each
 * shape is a TypeBox schema and the TypeScript type of the same name read from it, so the server's
 * validation, its serializers, the API reference and the types the client, the worker and the engine
 * use are one definition. The worker protocol's shapes and the shapes workflow-graph clients read are
 * fixed (docs/protocol.md); fields beyond those are weft's additions, added to but never renamed or re-typed.
 */
export * from './schema-parts.js';
export * from './jobs-wire.js';
export * from './batches-wire.js';
export * from './workflows-wire.js';
export * from './runs-wire.js';
export * from './workers-wire.js';
export * from './logs-wire.js';
export * from './service-wire.js';
export * from './artifacts-wire.js';
export * from './secrets-wire.js';
export * from './triggers-wire.js';
export * from './notifications-wire.js';
