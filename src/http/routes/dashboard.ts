/**
 * The dashboard (README "Dashboard"): the page built into dist/dashboard by `npm run build`, served at
 * `/` with its assets under `/assets/`. Both are public (src/domain/access.ts): they hold no data and
 * no secret; the page asks for a token itself when the API wants one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import fastifyStatic from '@fastify/static';
import type { ErrorBody } from '../../protocol/errors.js';

/**
 * This file sits three levels below the package root both as src/http/routes/dashboard.ts (under tsx)
 * and as dist/http/routes/dashboard.js, so the built page is found the same way from either.
 */
export const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'dist', 'dashboard');

export async function dashboardRoutes(app: FastifyInstance, dir = DASHBOARD_DIR): Promise<void> {
  const index = path.join(dir, 'index.html');
  if (!fs.existsSync(index)) {
    app.get('/', { schema: { hide: true } }, async (_req, reply) =>
      reply.code(404).send({
        error: 'not_found',
        message: `the dashboard is not built (no ${index}): run \`npm run build\``,
      } satisfies ErrorBody),
    );
    return;
  }
  // Asset names carry their content hash (scripts/build-dashboard.mjs), so a browser may keep them.
  await app.register(fastifyStatic, {
    root: path.join(dir, 'assets'),
    prefix: '/assets/',
    index: false,
    immutable: true,
    maxAge: '365d',
  });
  // The page itself is always revalidated, so a rebuilt dashboard is picked up at the next load.
  // Hidden from the API document (docs/api.md): a page, not an API route.
  app.get('/', { schema: { hide: true } }, async (_req, reply) =>
    reply.header('cache-control', 'no-cache').sendFile('index.html', dir, { cacheControl: false }),
  );
}
