import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// Choosing from what exists instead of typing keys: the install form, the dead letters' filter; and the workspace's sub-pages.
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const deadLetters = async (query = '') => (await admin.get(`/api/admin/dead-letters?limit=1${query}`)).body.meta.total as number;
/** The values a field's datalist offers. */
const offered = (listId: string) => page.locator(`datalist#${listId} option`).evaluateAll((options) => options.map((option) => (option as { value: string }).value));

/** Both widths the console is checked at. */
async function accessibleAtBothWidths(what: string): Promise<void> {
  await assertAccessible(page, `${what}, 1280 px`);
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, `${what}, 360 px`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createWorkspace(admin, 'depot');
  await createWorkspace(admin, 'spare');
  const jobsDone = { eventKey: 'builder.job.done', schemaVersion: '1', description: 'A job finished.', schema: { type: 'object' } };
  await publishExtension(admin, 'builder', '1.0.0', { manifest: { manifestVersion: 1, extensionKey: 'builder', version: '1.0.0', publishes: [jobsDone] } });
  await publishExtension(admin, 'mailer', '1.0.0');
  for (const key of ['builder', 'mailer']) await install(admin, 'depot', key);
  for (const version of ['1.0.0', '1.2.0']) await publishExtension(admin, 'parcel-tracker', version);
  subscriber = await startSubscriber(() => ({ status: 503 }));
  await subscribeExternal(admin, 'depot', 'builder.job.done', 'builder', subscriber.url);
  await subscribeExternal(admin, 'depot', 'builder.job.done', 'mailer', subscriber.url);
  assert.is((await admin.post('/api/workspaces/depot/events/publish', { eventKey: 'builder.job.done', payload: { n: 1 } })).status, 200);
  await waitFor('both deliveries dead', async () => (await deadLetters()) === 2);
  ({ browser, page, errors } = await openConsole(t.url));
  await page.setViewportSize({ width: 1280, height: 900 });
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest("a workspace's sub-pages: each its own address, one h1 naming it, the current one marked in its navigation", async () => {
  await visit(page, '/workspaces/depot');
  await page.getByRole('heading', { level: 1, name: 'Workspace depot' }).waitFor();
  const local = page.getByRole('navigation', { name: 'Workspace' });
  const current = () => local.locator('[aria-current="page"]').textContent().then((text) => text?.trim());
  assert.is(await current(), 'Summary');
  await page.getByRole('link', { name: '2 installed extensions' }).waitFor();
  await waitFor('the title names the workspace', async () => (await page.title()) === 'Workspace depot · Workspaces · platform');
  await accessibleAtBothWidths('workspace summary');

  const sections: Array<[string, string, string]> = [
    ['Members', '/workspaces/depot/members', 'Members'],
    ['Extensions', '/workspaces/depot/extensions', 'Installed extensions'],
    ['Subscriptions', '/workspaces/depot/subscriptions', 'Subscriptions'],
    ['Events', '/workspaces/depot/events', 'Events'],
  ];
  for (const [label, path, heading] of sections) {
    await local.getByRole('link', { name: label }).click();
    await page.waitForURL((url) => url.pathname === path);
    await page.getByRole('heading', { level: 2, name: heading }).waitFor();
    assert.is(await current(), label);
    await page.getByRole('heading', { level: 1, name: 'Workspace depot' }).waitFor();
    await waitFor(`the ${label} title names the workspace`, async () => (await page.title()) === `${label} · Workspace depot · platform`);
    await accessibleAtBothWidths(`workspace ${label.toLowerCase()}`);
  }
  // The events list links on to an event's page, which keeps its address.
  await page.getByRole('region', { name: 'Events' }).getByRole('link', { name: 'builder.job.done' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event builder.job.done' }).waitFor();
  assert.match(new URL(page.url()).pathname, /^\/workspaces\/depot\/events\/[0-9a-f-]{36}$/);
});

browserTest('an extension is installed by picking it from the catalog search and one of its versions', async () => {
  await visit(page, '/workspaces/spare/extensions');
  const form = page.getByRole('form', { name: 'Install an extension' });
  const key = form.getByRole('combobox', { name: 'Extension key' });
  await key.fill('parcel');
  await waitFor('the search suggests the extension', async () => (await offered('install-suggestions')).includes('parcel-tracker'));
  await key.fill('parcel-tracker');
  await waitFor('its versions offered', async () => (await offered('install-versions')).join(' ') === '1.2.0 1.0.0');
  await form.getByRole('combobox', { name: 'Version (optional)' }).fill('1.0.0');
  await form.getByText('Installs PARCEL-TRACKER 1.0.0').waitFor();
  await accessibleAtBothWidths('install form with its pickers');
  await form.getByRole('button', { name: 'Install', exact: true }).click();
  await form.getByRole('status').filter({ hasText: 'Installed parcel-tracker 1.0.0.' }).waitFor();
  const installed = (await admin.get('/api/workspaces/spare/extensions')).body.data as Array<{ extensionKey: string; version: string }>;
  assert.equal(installed.map(({ extensionKey, version }) => [extensionKey, version]), [['parcel-tracker', '1.0.0']]);
});

browserTest("dead letters are filtered by picking the workspace, the event type and the extension", async () => {
  await visit(page, '/dead-letters');
  const workspace = page.getByRole('combobox', { name: 'Workspace' });
  const choices = await workspace.locator('option').allTextContents();
  assert.equal(choices.map((text) => text.trim()), ['Any workspace', 'Workspace depot (depot)', 'Workspace spare (spare)']);
  await workspace.selectOption('depot');
  assert.ok((await offered('f-event-types')).includes('builder.job.done'), 'the declared event type is offered');
  await page.getByRole('combobox', { name: 'Event key' }).fill('builder.job.done');
  const extension = page.getByRole('combobox', { name: 'Extension key' });
  await extension.fill('mail');
  await waitFor('the search suggests the mailer', async () => (await offered('f-extensions')).includes('mailer'));
  await extension.fill('mailer');
  await accessibleAtBothWidths('dead letters filter with its pickers');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.waitForURL((url) => url.searchParams.get('workspaceId') === 'depot' && url.searchParams.get('extensionKey') === 'mailer' && url.searchParams.get('eventKey') === 'builder.job.done');
  const rows = page.locator('tbody tr');
  await page.getByText('1–1 of 1').waitFor();
  assert.is(await rows.count(), 1);
  assert.ok(await rows.first().getByRole('cell', { name: 'mailer', exact: true }).isVisible());
  // The address keeps the filter: a reload shows the same choices.
  await page.reload();
  await page.getByText('1–1 of 1').waitFor();
  assert.is(await workspace.inputValue(), 'depot');
  assert.is(await extension.inputValue(), 'mailer');
  assert.equal(errors, []);
});

test.run();
