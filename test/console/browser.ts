import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type Page } from 'playwright-core';
import { test, type Test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, type TestDaemon } from '../helpers/daemon.js';

/** Debian's chromium package; Playwright's own browser downloads are not used. */
const CHROMIUM = '/usr/bin/chromium';

/** Screenshots of the main pages, kept as test artefacts (gitignored); the PostgreSQL pass, which runs at the same time, in its own folder. */
export const ARTIFACTS = fileURLToPath(new URL(`../../test-artifacts/console/${process.env.PLATFORM_TEST_BACKEND === 'postgres' ? 'postgres/' : ''}`, import.meta.url));

const available = existsSync(CHROMIUM);
if (!available) {
  console.log(`browser tests skipped: no Chromium at ${CHROMIUM}; enable them with \`apt-get install chromium\` (Debian)`);
}

/**
 * uvu's `test` where Chromium is installed; elsewhere every test registered with
 * it is counted as skipped, and its before and after hooks (which would start a
 * browser) are never registered.
 */
export const browserTest: Test = available ? test : skippingEverything();

function skippingEverything(): Test {
  const nothing = Object.assign(() => undefined, { each: () => undefined });
  return Object.assign((name: string) => test.skip(name), { before: nothing, after: nothing, only: test.skip, skip: test.skip, run: test.run }) as unknown as Test;
}

export function launchBrowser(): Promise<Browser> {
  // As root Chromium needs --no-sandbox; the other two keep it quiet.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
}

/** A page that records every console error and uncaught exception of the console. */
export async function openPage(browser: Browser, baseURL: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  // Generous: the tests share two cores with everything else; a wait ends as soon as its condition holds.
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${page.url()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
  return { page, errors };
}

/**
 * A browser and one page of the console at `baseURL`, signed in as `account`
 * (the ADMIN unless told; null: signed out). The browser is closed if the
 * sign-in fails.
 */
export async function openConsole(
  baseURL: string,
  account: { email: string; password: string } | null = ADMIN,
): Promise<{ browser: Browser; page: Page; errors: string[] }> {
  const browser = await launchBrowser();
  try {
    const { page, errors } = await openPage(browser, baseURL);
    if (account) await signIn(page, account.email, account.password);
    return { browser, page, errors };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

/** Closes what a test file opened, in the order given; whatever its set-up did not get to is undefined and skipped. */
export async function closeAll(...opened: Array<{ close(): Promise<unknown> } | TestDaemon | undefined>): Promise<void> {
  for (const thing of opened) {
    if (thing) await ('destroy' in thing ? thing.destroy() : thing.close());
  }
}

/** Goes to a console route and waits until its heading shows (and any loading is done). */
export async function visit(page: Page, path: string): Promise<void> {
  await page.goto(path);
  await page.getByRole('heading', { level: 1 }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Loading' }).waitFor({ state: 'detached' });
}

/** One h1, and no serious or critical axe-core violation. */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  assert.is(await page.getByRole('heading', { level: 1 }).count(), 1, `${what}: one h1`);
  const { violations } = await new AxeBuilder({ page }).analyze();
  const grave = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  assert.equal(
    grave.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`),
    [],
    `${what}: axe-core violations`,
  );
}

/** Full-page screenshots at 1440 and 360 px; at 360 px nothing may stick out sideways. */
export async function screenshots(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}-1440.png`), fullPage: true });
  await page.setViewportSize({ width: 360, height: 740 });
  const overflows = await page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth');
  await page.screenshot({ path: join(ARTIFACTS, `${name}-360.png`), fullPage: true });
  await page.setViewportSize({ width: 1440, height: 900 });
  assert.is(overflows, false, `${name} is wider than 360 px`);
}

export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await visit(page, '/login');
  await page.getByRole('textbox', { name: 'Email' }).fill(email);
  await page.getByRole('textbox', { name: 'Password' }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}
