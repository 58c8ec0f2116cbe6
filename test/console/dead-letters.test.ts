import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// Replaying every matching dead letter runs in batches with its progress shown; a disabled subscriber's are skipped.
const EVENTS = 60;
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const deadLetterCount = async () => (await admin.get('/api/admin/dead-letters?limit=1')).body.meta.total as number;

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createWorkspace(admin, 'bulk');
  for (const key of ['builder', 'archiver']) {
    await publishExtension(admin, key, '1.0.0');
    await install(admin, 'bulk', key);
  }
  subscriber = await startSubscriber(() => ({ status: 400 }));
  await subscribeExternal(admin, 'bulk', 'jobs.done', 'builder', subscriber.url);
  const archiver = await subscribeExternal(admin, 'bulk', 'jobs.done', 'archiver', subscriber.url);
  for (let n = 0; n < EVENTS; n += 1) assert.is((await admin.post('/api/workspaces/bulk/events/publish', { eventKey: 'jobs.done', payload: { n } })).status, 200);
  await waitFor('every delivery dead', async () => (await deadLetterCount()) === 2 * EVENTS);
  // The archiver's dead letters cannot be replayed while its subscription is disabled.
  assert.is((await admin.patch(`/api/workspaces/bulk/subscriptions/${archiver.id}`, { enabled: false })).status, 200);
  subscriber.answer(() => ({ status: 200 }));

  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('every match is replayed in batches with its progress, the disabled subscriber skipped', async () => {
  await visit(page, '/dead-letters?workspaceId=bulk');
  await page.getByText(`1–25 of ${2 * EVENTS}`).waitFor();
  const batches: number[] = [];
  page.on('request', (request) => {
    if (request.url().endsWith('/api/admin/dead-letters/replay')) batches.push(request.postDataJSON().limit);
  });
  await page.getByRole('button', { name: 'Replay all matching' }).click();
  const dialog = page.getByRole('dialog');
  assert.match((await dialog.textContent()) ?? '', `${2 * EVENTS} dead letters will be delivered again`);
  await assertAccessible(page, 'replay dialog');
  await dialog.getByRole('button', { name: 'Replay', exact: true }).click();

  const done = page.getByRole('status').filter({ hasText: `Replayed ${EVENTS} dead letters.` });
  await done.waitFor();
  assert.match((await done.textContent()) ?? '', `${EVENTS} dead letters skipped: the subscriber is gone or disabled.`);
  assert.equal(batches, [50, EVENTS - 50], 'two batches: 50, then the rest that could be replayed');
  await waitFor('the replayed deliveries', () => subscriber.deliveredEventIds().size === EVENTS);
  assert.is(await deadLetterCount(), EVENTS, "the archiver's stay");
  await page.getByText(`1–25 of ${EVENTS}`).waitFor();
  await assertAccessible(page, 'dead letters after a replay');
});

browserTest("a dead letter leads to its event's timeline", async () => {
  await page.getByRole('link', { name: 'jobs.done' }).first().click();
  await page.getByRole('heading', { level: 1, name: 'Dead letter', exact: true }).waitFor();
  await page.getByRole('definition').getByRole('link', { name: 'jobs.done' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event jobs.done' }).waitFor();
  await page.getByRole('article', { name: /archiver/ }).getByText('dead letter', { exact: true }).waitFor();
  assert.equal(errors, [], 'no console errors');
});

test.run();
