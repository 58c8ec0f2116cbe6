import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { assertAccessible, browserTest, closeAll, launchBrowser, openPage, screenshots, signIn, visit } from './browser.js';

// The overview follows the live streams: what happens in the daemon shows without a reload.
const MEMBER = { email: 'mo@example.test', password: 'member-password-1' };

let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let adminPage: Page;
let memberPage: Page;
let errors: () => string[];

const publish = async (workspace: string, eventKey: string) => {
  const published = await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload: { n: 1 } });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
};

/** Marks the document, so that a test can tell that what it then sees came without a reload. */
const markDocument = (page: Page) => page.evaluate('window.unreloaded = true');
const stillTheSameDocument = (page: Page) => page.evaluate('window.unreloaded === true');

browserTest.before(async () => {
  // The second failure in a row disables a subscription: PLATFORM_DISABLE_AFTER of 1 ms.
  t = await startTestDaemon({ dispatch: FAST_DISPATCH, subscriptions: { secretOverlapMs: 86_400_000, disableAfterMs: 1 } });
  admin = await t.admin();
  const member = await createUser(t, MEMBER.email, { fullName: 'Mo Member', password: MEMBER.password });
  await publishExtension(admin, 'relay', '1.0.0');
  for (const id of ['ops', 'team']) {
    await createWorkspace(admin, id);
    await install(admin, id, 'relay');
  }
  assert.is((await admin.put(`/api/admin/workspaces/team/members/${member.id}`)).status, 200);
  // 400 is final at once: each delivery is a dead letter after one attempt.
  subscriber = await startSubscriber(() => ({ status: 400 }));
  await subscribeExternal(admin, 'ops', 'jobs.failed', 'relay', subscriber.url);
  await subscribeExternal(admin, 'team', 'notes.added', 'relay', subscriber.url);

  browser = await launchBrowser();
  const adminSession = await openPage(browser, t.url);
  const memberSession = await openPage(browser, t.url);
  adminPage = adminSession.page;
  memberPage = memberSession.page;
  errors = () => [...adminSession.errors, ...memberSession.errors];
  await signIn(adminPage, ADMIN.email, ADMIN.password);
  await signIn(memberPage, MEMBER.email, MEMBER.password);
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('an ADMIN overview shows failures, dead letters and a disabled subscription as they happen', async () => {
  const page = adminPage;
  await visit(page, '/');
  await page.getByRole('status').filter({ hasText: 'Updated live' }).waitFor();
  const deliveries = page.getByRole('region', { name: 'Deliveries' });
  const failures = page.getByRole('region', { name: 'Recent failures' });
  const disabled = page.getByRole('region', { name: 'Disabled subscriptions' });
  assert.is(await deliveries.getByRole('link').textContent(), '0', 'no dead letter yet');
  assert.ok(await disabled.getByText('Every subscription is enabled.').isVisible());
  await markDocument(page);

  const first = await publish('ops', 'jobs.failed');
  const entry = failures.getByRole('listitem').filter({ hasText: 'jobs.failed' });
  await entry.getByText('dead', { exact: true }).waitFor();
  assert.match((await entry.textContent()) ?? '', 'answered HTTP 400');
  assert.is(await entry.getByRole('link', { name: 'jobs.failed' }).getAttribute('href'), `/workspaces/ops/events/${first}`);
  await deliveries.getByRole('link', { name: '1', exact: true }).waitFor();

  // The second failure in a row disables the subscription; the daemon says so in the stream.
  await publish('ops', 'jobs.failed');
  const row = disabled.getByRole('row').filter({ hasText: 'jobs.failed' });
  await row.getByText('every delivery failed since').waitFor();
  assert.match((await row.textContent()) ?? '', 'Workspace ops');
  await deliveries.getByRole('link', { name: '2', exact: true }).waitFor();

  // Enabled again by hand: it leaves the list.
  const [subscription] = (await admin.get('/api/workspaces/ops/subscriptions')).body.data as Array<{ id: string }>;
  assert.is((await admin.patch(`/api/workspaces/ops/subscriptions/${subscription!.id}`, { enabled: true })).status, 200);
  await disabled.getByText('Every subscription is enabled.').waitFor();
  assert.ok(await stillTheSameDocument(page), 'all of it came without a reload');

  await assertAccessible(page, 'overview with failures');
  await screenshots(page, 'overview-live');
});

browserTest("a member's overview counts in their workspaces only, live from the workspace stream", async () => {
  const page = memberPage;
  await visit(page, '/');
  await page.getByRole('status').filter({ hasText: 'Updated live' }).waitFor();
  const deliveries = page.getByRole('region', { name: 'Deliveries' });
  const row = deliveries.getByRole('row').filter({ hasText: 'Workspace team' });
  assert.is(await deliveries.getByRole('row').filter({ hasText: 'Workspace ops' }).count(), 0, "another workspace's figures are not shown");
  await row.getByRole('cell', { name: '0' }).nth(1).waitFor();
  // The failures of the workspace it is not a member of did not reach it.
  assert.is(await page.getByText('jobs.failed').count(), 0);
  await markDocument(page);

  await publish('ops', 'jobs.failed');
  await publish('team', 'notes.added');
  const failures = page.getByRole('region', { name: 'Recent failures' });
  await failures.getByRole('listitem').filter({ hasText: 'notes.added' }).waitFor();
  // The subscriber's 400 is final: the delivery goes straight to the dead ones.
  await row.locator('td[data-label="Dead deliveries"]').filter({ hasText: /^1$/ }).waitFor();
  assert.is(await page.getByText('jobs.failed').count(), 0, "the other workspace's failure is not shown");

  // Disabled and enabled again by hand, as it happens.
  const disabled = page.getByRole('region', { name: 'Disabled subscriptions' });
  const [subscription] = (await admin.get('/api/workspaces/team/subscriptions')).body.data as Array<{ id: string }>;
  const toggle = (enabled: boolean) => admin.patch(`/api/workspaces/team/subscriptions/${subscription!.id}`, { enabled });
  assert.is((await toggle(false)).status, 200);
  await disabled.getByRole('row').filter({ hasText: 'notes.added' }).getByText('disabled by an administrator').waitFor();
  assert.is((await toggle(true)).status, 200);
  await disabled.getByText('Every subscription is enabled.').waitFor();
  assert.ok(await stillTheSameDocument(page));
  await assertAccessible(page, 'member overview');
  assert.equal(errors(), [], 'no console errors');
});

test.run();
