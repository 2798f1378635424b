/**
 * Chromium for the dashboard's tests (README "Dashboard"), driven by playwright-core. The browser is
 * Debian's, at /usr/bin/chromium (CI installs it: .ci/run); without it the tests fail and say so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { client } from './http.js';
import { makeSandbox, ROOT, spawnWeft, type Sandbox, type SpawnedProcess } from './server.js';

export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = path.join(ROOT, 'test-results', 'screenshots');

/** `extraArgs`: e.g. `--host-resolver-rules=MAP evil.test 127.0.0.1`, a name of another site served from here. */
export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`the dashboard tests need Chromium at ${CHROMIUM}: install it (apt-get install -y chromium)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    // The test machine has no network: Chromium's own background connections would only be refused.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...extraArgs,
    ],
  });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Collects the page's uncaught errors and console errors, so a test can assert there were none. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    // A refused request (the 401 that makes the page ask for a token) is logged by the browser itself.
    if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) errors.push(m.text());
  });
  return errors;
}

/**
 * Chromium and a `weft server` in a sandbox of their own, started before the file's tests and
 * stopped after them, for tests that play the workers themselves over HTTP (`api`). Read the fields
 * inside tests or hooks, once `before` has run.
 */
export function dashboardStack(prefix: string, env: Record<string, string | undefined> = {}) {
  let browser: Browser | undefined;
  let sb: Sandbox | undefined;
  let server: (SpawnedProcess & { url: string }) | undefined;
  let api: ReturnType<typeof client> | undefined;
  before(async () => {
    browser = await launchChromium();
    sb = makeSandbox(prefix);
    const p = spawnWeft(['server'], { PORT: '0', ...sb.env, ...env }, sb.dir);
    const m = await p.waitFor(/listening on (http:\/\/[^:\s"]+:(\d+))/);
    server = Object.assign(p, { url: m[1]! });
    api = client(server.url);
  });
  after(async () => {
    await browser?.close();
    server?.kill('SIGKILL');
    await server?.exited;
    if (sb) fs.rmSync(sb.dir, { recursive: true, force: true });
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('dashboardStack: read inside a test or hook, after its `before` ran');
    return v;
  };
  return {
    /** The server's base URL. */
    get url(): string {
      return started(server).url;
    },
    /** An HTTP client of the server. */
    get api(): ReturnType<typeof client> {
      return started(api);
    },
    /** A page in a fresh browser context of that size, with its errors collected. */
    async newPage(width = 1440, height = 900): Promise<{ page: Page; errors: string[] }> {
      const context = await started(browser).newContext({ viewport: { width, height }, acceptDownloads: true });
      const page = await context.newPage();
      return { page, errors: pageErrors(page) };
    },
  };
}
