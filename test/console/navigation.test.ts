import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// Below 600 px the navigation hides behind a Menu button; above, it is shown as before, with no button.
let t: TestDaemon;
let browser: Browser;
let page: Page;
let errors: string[];

browserTest.before(async () => {
  t = await startTestDaemon();
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, t));

const menu = () => page.getByRole('button', { name: 'Menu' });
const link = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name });

browserTest('at 1280 px the navigation shows, without a Menu button', async () => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await visit(page, '/');
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  assert.ok(await link('Dead letters').isVisible());
  assert.not.ok(await menu().isVisible());
  await assertAccessible(page, 'navigation at 1280 px');
});

browserTest('at 360 px it is collapsed and opens with its button, closing after a navigation', async () => {
  await page.setViewportSize({ width: 360, height: 740 });
  await menu().waitFor();
  assert.is(await menu().getAttribute('aria-expanded'), 'false');
  assert.not.ok(await link('Dead letters').isVisible());
  const height = await page.locator('header.top').evaluate((header) => header.getBoundingClientRect().height);
  assert.ok(height < 80, `the collapsed header is ${height} px high`);
  await assertAccessible(page, 'navigation collapsed at 360 px');

  await menu().click();
  assert.is(await menu().getAttribute('aria-expanded'), 'true');
  const controlled = await menu().getAttribute('aria-controls');
  assert.ok(await page.locator(`#${controlled}`).isVisible());
  await link('Dead letters').waitFor();
  await assertAccessible(page, 'navigation open at 360 px');
  await link('Dead letters').click();
  await page.getByRole('heading', { level: 1, name: 'Dead letters' }).waitFor();
  assert.is(await menu().getAttribute('aria-expanded'), 'false');
  assert.not.ok(await link('Dead letters').isVisible());
});

browserTest('the keyboard opens it, and Escape closes it back onto its button', async () => {
  await menu().focus();
  await page.keyboard.press('Enter');
  await link('Account').waitFor();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Escape');
  assert.is(await menu().getAttribute('aria-expanded'), 'false');
  assert.is(await page.evaluate("document.activeElement?.textContent?.trim()"), 'Menu', 'focus is back on Menu');
  assert.equal(errors, [], 'no console errors');
});

test.run();
