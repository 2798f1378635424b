const root = process.argv[2]!;
const { startInProcess } = await import(`${root}/test/helpers/server.ts`);
const s = await startInProcess({});
const r = await fetch(`${s.url}/api/openapi.json`);
const fs = await import('node:fs');
fs.writeFileSync(process.argv[3]!, JSON.stringify(await r.json(), null, 1));
await s.close();
process.exit(0);
