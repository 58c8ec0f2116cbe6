import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { publishExtension } from '../helpers/fixtures.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// A version's story told with people's names: who published it, who yanked it and why, as feedback and on its page.
let t: TestDaemon;
let admin: Api;
let adminName: string;
let browser: Browser;
let page: Page;
let errors: string[];

async function accessibleAtBothWidths(what: string): Promise<void> {
  await assertAccessible(page, `${what}, 1280 px`);
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, `${what}, 360 px`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

browserTest.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  adminName = (await admin.get('/api/auth/me')).body.data.fullName;
  const publisher = await createUser(t, 'pat@example.test', { roles: ['ADMIN'], fullName: 'Pat Publisher' });
  await publishExtension(publisher, 'parcel-tracker', '1.0.0');
  ({ browser, page, errors } = await openConsole(t.url));
  await page.setViewportSize({ width: 1280, height: 900 });
});
browserTest.after(() => closeAll(browser, t));

const versionRow = (version: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name: version, exact: true }) });
const statusText = () => page.getByRole('region', { name: 'Versions' }).getByRole('status').textContent();

browserTest('"Published by" names the person; a yank says what it did and why, replacing the message before', async () => {
  await visit(page, '/marketplace/parcel-tracker');
  assert.is(await versionRow('1.0.0').locator('td[data-label="Published by"]').textContent(), 'Pat Publisher');

  const form = page.getByRole('region', { name: 'Publish a version' });
  await form.getByRole('textbox', { name: 'Version' }).fill('1.2.0');
  await form.getByRole('textbox', { name: 'Artifact URL' }).fill('https://artifacts.example.test/parcel-tracker-1.2.0.jar');
  await form.getByRole('button', { name: 'Publish version' }).click();
  await page.getByRole('status').filter({ hasText: 'Published 1.2.0.' }).waitFor();
  await versionRow('1.2.0').locator('td[data-label="Published by"]').filter({ hasText: adminName }).waitFor();

  await versionRow('1.2.0').getByRole('button', { name: 'Yank' }).click();
  const dialog = page.getByRole('dialog', { name: 'Yank version 1.2.0' });
  await dialog.getByRole('textbox', { name: 'Reason' }).fill('corrupt artifact');
  await dialog.getByRole('button', { name: 'Yank version' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.getByRole('status').filter({ hasText: 'Yanked 1.2.0: corrupt artifact.' }).waitFor();
  assert.is(await page.getByText('Published 1.2.0.').count(), 0, 'the older message is gone');
  assert.is(await statusText(), 'Yanked 1.2.0: corrupt artifact.');
  const status = versionRow('1.2.0').locator('td[data-label="Status"]');
  await status.filter({ hasText: 'corrupt artifact' }).waitFor();
  assert.is((await status.textContent())?.replace(/\s+/g, ' ').trim(), 'yanked: corrupt artifact');
  await accessibleAtBothWidths('extension with a yanked version');
});

browserTest("the version's page shows its history: who published and yanked it, when, and why", async () => {
  await visit(page, '/marketplace/parcel-tracker/versions/1.2.0');
  const facts = page.locator('dl.facts');
  assert.is(await facts.locator('dt:has-text("Published by") + dd').textContent(), adminName);
  assert.is((await facts.locator('dt:has-text("Status") + dd').textContent())?.replace(/\s+/g, ' ').trim(), 'yanked: corrupt artifact');
  const history = page.getByRole('table', { name: 'History' });
  const rows = history.getByRole('row').filter({ has: page.getByRole('cell') });
  const cells = async () =>
    Promise.all(
      (await rows.all()).map(async (row) => [
        await row.locator('td[data-label="What"]').textContent(),
        await row.locator('td[data-label="By"]').textContent(),
        await row.locator('td[data-label="Reason"]').textContent(),
      ]),
    );
  assert.equal(await cells(), [
    ['Yanked', adminName, 'corrupt artifact'],
    ['Published', adminName, '—'],
  ]);
  await accessibleAtBothWidths('version page with its history');

  // The other version's page names its own publisher, and nothing of 1.2.0.
  await visit(page, '/marketplace/parcel-tracker/versions/1.0.0');
  assert.is(await page.locator('dl.facts dt:has-text("Published by") + dd').textContent(), 'Pat Publisher');
  assert.is(await page.getByRole('table', { name: 'History' }).getByRole('row').filter({ has: page.getByRole('cell') }).count(), 1);
});

browserTest('an unyank says so, and the row is available again', async () => {
  await visit(page, '/marketplace/parcel-tracker');
  await versionRow('1.2.0').getByRole('button', { name: 'Unyank' }).click();
  await page.getByRole('status').filter({ hasText: 'Unyanked 1.2.0' }).waitFor();
  await versionRow('1.2.0').locator('td[data-label="Status"]').filter({ hasText: /^\s*available\s*$/ }).waitFor();
  await visit(page, '/marketplace/parcel-tracker/versions/1.2.0');
  await page.getByRole('table', { name: 'History' }).getByRole('cell', { name: 'Unyanked' }).waitFor();
  assert.equal(errors, []);
});

test.run();
