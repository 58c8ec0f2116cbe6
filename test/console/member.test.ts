import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createWorkspace, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, visit } from './browser.js';

// A signed-in member who is not ADMIN: their own workspaces, and no admin control anywhere.
let t: TestDaemon;
let browser: Browser;
let page: Page;
let errors: string[];
const MEMBER = { email: 'member@example.test', password: 'member-password-1' };

browserTest.before(async () => {
  t = await startTestDaemon();
  const admin = await t.admin();
  const member = await createUser(t, MEMBER.email, { fullName: 'Mia Member', password: MEMBER.password });
  await publishExtension(admin, 'team-chat', '1.0.0');
  await publishExtension(admin, 'team-chat', '2.0.0');
  for (const id of ['team', 'other']) await createWorkspace(admin, id);
  await install(admin, 'team', 'team-chat');
  await subscribeExternal(admin, 'team', 'chat.message.sent', 'team-chat', 'https://hooks.example.test/chat');
  const neighbour = await createUser(t, 'noa@example.test', { fullName: 'Noa Neighbour' });
  for (const user of [member, neighbour]) {
    const joined = await admin.put(`/api/admin/workspaces/team/members/${user.id}`);
    assert.is(joined.status, 200, joined.text);
  }
  ({ browser, page, errors } = await openConsole(t.url, MEMBER));
});
browserTest.after(() => closeAll(browser, t));

browserTest('the navigation has no admin links', async () => {
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Overview', 'Marketplace', 'Workspaces']) assert.ok(await nav.getByRole('link', { name }).isVisible(), name);
  for (const name of ['Dead letters', 'Users']) assert.is(await nav.getByRole('link', { name }).count(), 0, name);
});

browserTest('the member sees only their own workspaces, without admin controls', async () => {
  await visit(page, '/workspaces');
  assert.is(await page.getByRole('link', { name: 'Workspace team' }).count(), 1);
  assert.is(await page.getByRole('link', { name: 'Workspace other' }).count(), 0);
  assert.is(await page.getByRole('button', { name: 'Create workspace' }).count(), 0);

  // Only what a member may do: read each sub-page, and filter and page the events.
  const buttonsOn = async (path: string) => {
    await visit(page, path);
    return (await page.getByRole('button').allTextContents()).map((text) => text.trim()).sort();
  };
  assert.equal(await buttonsOn('/workspaces/team/members'), ['Sign out'], 'no admin control');
  assert.ok(await page.getByText('Mia Member (you)').isVisible());
  // The other member by name, though a member may not list users.
  await page.getByText('Noa Neighbour <noa@example.test>').waitFor();
  assert.equal(await buttonsOn('/workspaces/team/extensions'), ['Sign out'], 'no admin control');
  assert.ok(await page.getByRole('link', { name: 'team-chat' }).isVisible());
  assert.equal(await buttonsOn('/workspaces/team/subscriptions'), ['Sign out'], 'no admin control');
  assert.ok(await page.getByText('chat.message.sent').isVisible());
  assert.equal(await buttonsOn('/workspaces/team/events'), ['Filter events', 'Sign out'], 'no admin control');
  await assertAccessible(page, 'member workspace');
  await screenshots(page, 'member-workspace');
});

browserTest("the member reads an event of their workspace and its deliveries, but not another workspace's", async () => {
  const admin = await t.admin();
  const published = await admin.post('/api/workspaces/team/events/publish', { eventKey: 'chat.message.sent', payload: { text: 'hi' } });
  assert.is(published.status, 200, published.text);
  await visit(page, '/workspaces/team/events');
  await page.getByRole('region', { name: 'Events' }).getByRole('link', { name: 'chat.message.sent' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event chat.message.sent' }).waitFor();
  await page.getByRole('article', { name: /team-chat/ }).waitFor();
  assert.is(await page.getByRole('button').filter({ hasNotText: 'Sign out' }).count(), 0);
  await assertAccessible(page, 'member event');

  const other = await admin.post('/api/workspaces/other/events/publish', { eventKey: 'chat.message.sent' });
  await visit(page, `/workspaces/other/events/${other.body.meta.eventId}`);
  await page.getByRole('alert').filter({ hasText: 'member' }).waitFor();
  // The refusal is the API's 403, which the browser logs.
  assert.is(errors.filter((error) => error.includes('status of 403')).length, 1);
  errors.length = 0;
});

browserTest('the marketplace and the extension page offer no create, yank, unyank or publish', async () => {
  await visit(page, '/marketplace');
  assert.is(await page.getByRole('button', { name: 'New extension' }).count(), 0);
  await visit(page, '/marketplace/team-chat');
  await page.getByRole('row').filter({ hasText: '2.0.0' }).waitFor();
  assert.is(await page.getByRole('button').filter({ hasNotText: 'Sign out' }).count(), 0);
  assert.is(await page.getByRole('link', { name: 'Configuration' }).count(), 0);
  await assertAccessible(page, 'member extension');
});

browserTest('admin routes send a member back to the overview', async () => {
  for (const path of ['/users', '/dead-letters', '/extensions/team-chat/config', '/extensions/team-chat/webhooks']) {
    await visit(page, path);
    assert.is(new URL(page.url()).pathname, '/', path);
  }
  await assertAccessible(page, 'member overview');
  assert.ok(await page.getByRole('link', { name: 'Workspace team' }).isVisible());
  assert.equal(errors, [], 'no console errors');
});

test.run();
