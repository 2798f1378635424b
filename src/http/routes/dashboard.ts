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

/**
 * What the page may load and who may frame it. Scripts, styles and images come from this server only
 * (the bundle has everything; the favicon is a `data:` URL). `style-src-attr 'unsafe-inline'`: log
 * lines in 24-bit colour get `style="color:rgb(…)"` from ansi_up, with nothing but numbers in it.
 * `connect-src` also allows any http(s) server: the page may talk to another weft server the person
 * confirmed in the page (README "Dashboard"), which no header fixed here can know; which server gets
 * requests and a token is decided by that confirmation, not by this list.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "style-src-attr 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self' http: https:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

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
  // A scope of its own, so that these headers go with the page and its assets only.
  await app.register(async (page) => {
    page.addHook('onSend', async (_req, reply) => {
      reply.header('content-security-policy', DASHBOARD_CSP);
      // For browsers older than frame-ancestors: no other site can show the page in a frame (clickjacking).
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
    });
    // Asset names carry their content hash (scripts/build-dashboard.mjs), so a browser may keep them.
    await page.register(fastifyStatic, {
      root: path.join(dir, 'assets'),
      prefix: '/assets/',
      index: false,
      immutable: true,
      maxAge: '365d',
    });
    // The page itself is always revalidated, so a rebuilt dashboard is picked up at the next load.
    // Hidden from the API document (docs/api.md): a page, not an API route.
    page.get('/', { schema: { hide: true } }, async (_req, reply) =>
      reply.header('cache-control', 'no-cache').sendFile('index.html', dir, { cacheControl: false }),
    );
  });
}
