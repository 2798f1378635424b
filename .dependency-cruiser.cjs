/**
 * The import rules of src/ (docs/architecture.md): no import circle, and no import running back up
 * the layers domain → definitions → store → engine → http / worker / client / cli. Checked by
 * `npm run check:imports`, which `npm test` runs first.
 */
const layer = (name, mayImport) => ({
  name: `${name}-imports-only-below`,
  comment: `src/${name} may import only ${mayImport.join(', ') || 'itself'} (docs/architecture.md)`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: { path: '^src/', pathNot: [`^src/${name}/`, ...mayImport.map((m) => `^src/${m}(/|\\.ts$)`)] },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import circle ties modules together so that none can be read, tested or changed alone.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    layer('util', []),
    layer('domain', []),
    layer('protocol', ['domain']),
    layer('definitions', ['domain']),
    layer('store', ['domain', 'definitions', 'protocol', 'version']),
    layer('engine', ['domain', 'definitions', 'protocol', 'store', 'util']),
    layer('http', ['domain', 'definitions', 'protocol', 'store', 'engine', 'util', 'version']),
    layer('client', ['domain', 'protocol', 'util']),
    // The worker shares the process helpers (environment parsing, the logger) of src/runtime.
    {
      ...layer('worker', ['domain', 'protocol', 'client', 'util', 'version']),
      to: { path: '^src/', pathNot: ['^src/(worker|domain|protocol|client|util)/', '^src/version\\.ts$', '^src/runtime/(env|logger)\\.ts$'] },
    },
    {
      name: 'worker-parts-see-seams-only',
      comment:
        "The worker's parts get what they use of the Worker through src/worker/seams.ts, never the Worker itself " +
        '(docs/architecture.md "The worker"); only its entry, index.ts, imports worker.ts.',
      severity: 'error',
      from: { path: '^src/worker/', pathNot: '^src/worker/(index|worker)\\.ts$' },
      to: { path: '^src/worker/worker\\.ts$' },
    },
    {
      name: 'wire-without-server',
      comment:
        'The wire schemas (src/protocol) and the client, worker and dashboard that use them stay free of the server ' +
        "framework: only src/http and src/runtime import fastify and its plugins (docs/architecture.md \"Routes and the wire\").",
      severity: 'error',
      from: { path: '^src/(domain|protocol|client|worker|dashboard|definitions)/' },
      to: { path: 'node_modules/(fastify|@fastify)/' },
    },
    {
      name: 'dashboard-wire-types-only',
      comment: 'The dashboard reads the wire types only: a value import would bring the schemas and TypeBox into its bundle.',
      severity: 'error',
      from: { path: '^src/dashboard/' },
      to: { path: '^src/protocol/(wire|schema-parts|[a-z-]+-wire)\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    layer('runtime', ['domain', 'definitions', 'protocol', 'store', 'engine', 'http', 'util', 'version']),
    layer('dashboard', ['protocol', 'domain']),
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/.*\\.css$' },
  },
};
