import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { call, type Api } from '../helpers/http.js';
import { configureExtension, createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, signIn, visit } from './browser.js';

// The console as an ADMIN, in a real Chromium against the real daemon: one browser, one page.
const OLD_SECRET = 'old-webhook-key-1';
const NEW_SECRET = 'new-webhook-key-2';

let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];
let eventId: string;

async function deadLetterIds(): Promise<string[]> {
  return (await admin.get('/api/admin/dead-letters')).body.data.map((letter: { id: string }) => letter.id);
}

async function publishFailingEvent(): Promise<string> {
  const before = (await deadLetterIds()).length;
  const published = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'orders.created', payload: { order: 42 } });
  assert.is(published.status, 200, published.text);
  await waitFor('a dead letter', async () => (await deadLetterIds()).length > before);
  return published.body.meta.eventId;
}

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'acme-tools', '1.0.0');
  await publishExtension(admin, 'acme-tools', '1.1.0');
  await createWorkspace(admin, 'acme');
  await install(admin, 'acme', 'acme-tools', '1.0.0');
  // 400 is permanent: every delivery dead-letters at once, until the subscriber is told otherwise.
  subscriber = await startSubscriber(() => ({ status: 400 }));
  await subscribeExternal(admin, 'acme', 'orders.created', 'acme-tools', subscriber.url);
  eventId = await publishFailingEvent();
  await configureExtension(admin, 'acme-tools', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.header', 'STRING', 'x-api-key'],
    ['webhook.workspaceId', 'STRING', 'acme'],
    ['webhook.secret', 'SECRET', OLD_SECRET],
  ]);
  ({ browser, page, errors } = await openConsole(t.url, null));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('signing in with the cookie shows the overview and every admin link', async () => {
  await visit(page, '/workspaces');
  assert.is(new URL(page.url()).pathname, '/login', 'a signed-out visitor is sent to sign in');
  await signIn(page, ADMIN.email, ADMIN.password);
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Overview', 'Marketplace', 'Workspaces', 'Dead letters', 'Users']) {
    assert.ok(await nav.getByRole('link', { name, exact: true }).isVisible(), `link ${name}`);
  }
  assert.ok(await page.getByRole('button', { name: 'Sign out' }).isVisible());
  // A client route survives a reload: the daemon answers the page, the cookie the session.
  await visit(page, '/workspaces/acme');
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Workspace acme' }).waitFor();
});

browserTest('a version is yanked with a reason through the dialog; Escape closes it and focus returns', async () => {
  await visit(page, '/marketplace/acme-tools');
  const row = page.getByRole('row').filter({ hasText: '1.1.0' });
  const yank = row.getByRole('button', { name: 'Yank' });
  const dialog = page.getByRole('dialog');

  await yank.focus();
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  assert.ok(await dialog.getByRole('textbox', { name: 'Reason' }).evaluate((input) => input === input.ownerDocument.activeElement));
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  assert.ok(await yank.evaluate((button) => button === button.ownerDocument.activeElement), 'focus is back on Yank');

  await yank.click();
  await dialog.getByRole('textbox', { name: 'Reason' }).fill('leaks memory under load');
  await dialog.getByRole('button', { name: 'Yank version' }).click();
  await row.getByRole('button', { name: 'Unyank' }).waitFor();

  const detail = await admin.get('/api/marketplace/extensions/acme-tools');
  assert.equal(detail.body.data.versions.find((entry: { version: string }) => entry.version === '1.1.0').yanked, true);
  const audit = await admin.get('/api/admin/audit?extensionKey=acme-tools');
  assert.is(audit.body.data.find((record: { action: string }) => record.action === 'yank').reason, 'leaks memory under load');
  await screenshots(page, 'extension');
});

browserTest('a dead letter is replayed from its page and delivered to the real subscriber', async () => {
  subscriber.answer(() => ({ status: 200 }));
  await visit(page, '/dead-letters');
  await page.getByRole('link', { name: 'orders.created' }).first().click();
  await page.getByRole('heading', { level: 1, name: 'Dead letter', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Replay', exact: true }).click();
  const outcome = page.getByRole('status').filter({ hasText: 'Delivered' }).or(page.getByRole('alert'));
  await outcome.waitFor();
  assert.match((await outcome.textContent()) ?? '', 'Delivered');
  await waitFor('the replayed delivery', () => subscriber.deliveredEventIds().has(eventId));
  assert.equal(await deadLetterIds(), []);
});

browserTest('a secret is replaced without its value ever reaching the page', async () => {
  await visit(page, '/extensions/acme-tools/config');
  const row = page.getByRole('row').filter({ hasText: 'webhook.secret' });
  assert.ok(await row.getByText('********').isVisible());
  await row.getByRole('button', { name: 'Replace secret' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByLabel('New secret').fill(NEW_SECRET);
  await dialog.getByRole('button', { name: 'Replace secret' }).click();
  await dialog.waitFor({ state: 'hidden' });

  const html = await page.content();
  const inputs = await page.locator('input').evaluateAll((all) => all.map((input) => (input as { value: string }).value));
  for (const secret of [OLD_SECRET, NEW_SECRET]) {
    assert.not.ok(html.includes(secret), 'the secret is not in the page');
    assert.not.ok(inputs.includes(secret), 'the secret is not left in an input');
  }
  // The new key is the one the webhook endpoint checks now.
  assert.is((await webhookCall(OLD_SECRET)).status, 401);
  assert.is((await webhookCall(NEW_SECRET)).status, 200);
});

browserTest('every route has one h1 and no serious or critical axe-core violation', async () => {
  const letter = await publishFailingEventWhileFailing();
  const routes: Array<[string, string | null]> = [
    ['/', 'overview'],
    ['/marketplace', 'marketplace'],
    ['/marketplace/acme-tools', null],
    ['/workspaces', null],
    ['/workspaces/acme', 'workspace'],
    ['/workspaces/acme/members', null],
    ['/workspaces/acme/extensions', 'workspace-extensions'],
    ['/workspaces/acme/subscriptions', null],
    ['/workspaces/acme/events', null],
    [`/workspaces/acme/events/${eventId}`, null],
    ['/dead-letters', 'dead-letters'],
    [`/dead-letters/${letter}`, 'dead-letter'],
    ['/extensions/acme-tools/config', 'config'],
    ['/extensions/acme-tools/webhooks', null],
    ['/users', 'users'],
    ['/account', null],
    ['/no/such/page', null],
  ];
  for (const [path, screenshot] of routes) {
    await visit(page, path);
    await assertAccessible(page, path);
    if (screenshot) await screenshots(page, screenshot);
  }
  // The dark colour scheme keeps its contrast too.
  await page.emulateMedia({ colorScheme: 'dark' });
  await visit(page, '/workspaces/acme/extensions');
  await assertAccessible(page, 'workspace in the dark scheme');
  await page.emulateMedia({ colorScheme: 'light' });
  // The dialogs too.
  await visit(page, '/marketplace/acme-tools');
  await page.getByRole('button', { name: 'Yank' }).first().click();
  await assertAccessible(page, 'yank dialog');
  await page.keyboard.press('Escape');
  await visit(page, '/marketplace');
  await page.getByRole('button', { name: 'New extension' }).click();
  await assertAccessible(page, 'new extension dialog');
  await page.keyboard.press('Escape');
});

browserTest('signing out ends the session; the sign-in page is accessible too', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  await assertAccessible(page, '/login');
  await screenshots(page, 'login');
  await visit(page, '/users');
  assert.is(new URL(page.url()).pathname, '/login');
  assert.equal(errors, [], 'no console errors');
});

async function publishFailingEventWhileFailing(): Promise<string> {
  subscriber.answer(() => ({ status: 400 }));
  await publishFailingEvent();
  return (await deadLetterIds())[0]!;
}

function webhookCall(key: string) {
  return call(t.url, 'POST', '/api/webhooks/acme-tools', { json: { hello: 'world' }, headers: { 'x-api-key': key } });
}

test.run();
