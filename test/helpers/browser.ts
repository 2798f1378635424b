/**
 * Chromium for the dashboard's tests (README "Dashboard"), driven by playwright-core. The browser is
 * Debian's, at /usr/bin/chromium (CI installs it: .ci/run); without it the tests fail and say so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './server.js';

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
