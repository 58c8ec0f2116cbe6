import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// The list's own actions: per-row replay and discard, the selected ones in bulk, and discarding every match.
const EVENTS = 4;
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const count = async (query = '') => (await admin.get(`/api/admin/dead-letters?limit=1${query}`)).body.meta.total as number;
const rows = () => page.locator('tbody tr');

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createWorkspace(admin, 'ops');
  for (const key of ['builder', 'mailer']) {
    await publishExtension(admin, key, '1.0.0');
    await install(admin, 'ops', key);
  }
  subscriber = await startSubscriber(() => ({ status: 503 }));
  await subscribeExternal(admin, 'ops', 'jobs.done', 'builder', subscriber.url);
  // Nothing listens on port 1: the mailer's deliveries fail without an HTTP status.
  await subscribeExternal(admin, 'ops', 'jobs.done', 'mailer', 'http://127.0.0.1:1');
  for (let n = 0; n < EVENTS; n += 1) assert.is((await admin.post('/api/workspaces/ops/events/publish', { eventKey: 'jobs.done', payload: { n } })).status, 200);
  await waitFor('every delivery dead', async () => (await count()) === 2 * EVENTS);
  subscriber.answer(() => ({ status: 200 }));
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('the list shows attempts and the last status: the HTTP status, or the message without one', async () => {
  await visit(page, '/dead-letters?workspaceId=ops');
  await page.getByText(`1–${2 * EVENTS} of ${2 * EVENTS}`).waitFor();
  const letters = (await admin.get('/api/admin/dead-letters?workspaceId=ops')).body.data as { id: string; attempts: number; lastError: { status: number | null; message: string } }[];
  const builder = rows().filter({ has: page.getByRole('cell', { name: 'builder', exact: true }) }).first();
  assert.is(await builder.locator('td[data-label="Last status"]').textContent(), '503');
  assert.is(await builder.locator('td[data-label="Attempts"]').textContent(), String(letters[0]!.attempts));
  assert.ok(letters[0]!.attempts > 1, 'retried before it died');
  const mailer = rows().filter({ has: page.getByRole('cell', { name: 'mailer', exact: true }) }).first();
  const message = letters.find((letter) => letter.lastError.status === null)!.lastError.message;
  assert.is(await mailer.locator('td[data-label="Last status"]').textContent(), message);
  await assertAccessible(page, 'dead letters with their actions, 1280 px');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'dead letters with their actions, 360 px');
  await page.setViewportSize({ width: 1280, height: 900 });
});

browserTest("a row's replay shows its outcome in the row: delivered, or failed again", async () => {
  const builders = rows().filter({ has: page.getByRole('cell', { name: 'builder', exact: true }) });
  const first = builders.nth(0);
  await first.getByRole('button', { name: /^Replay jobs\.done to builder/ }).click();
  await page.getByRole('status').filter({ hasText: 'Replayed jobs.done to builder: delivered.' }).waitFor();
  assert.is(await first.locator('td[data-label="Last status"]').textContent(), 'delivered');
  assert.is(await first.getByRole('button').count(), 0, 'a delivered row has nothing left to do');
  await waitFor('the replayed delivery', () => subscriber.deliveredEventIds().size === 1);

  subscriber.answer(() => ({ status: 503 }));
  await builders.nth(1).getByRole('button', { name: /^Replay jobs\.done to builder/ }).click();
  await page.getByRole('status').filter({ hasText: 'Replayed jobs.done to builder: failed again.' }).waitFor();
  // The list reloads: the delivered row is gone, the one that failed again is back with one more replay.
  await page.getByText(`1–${2 * EVENTS - 1} of ${2 * EVENTS - 1}`).waitFor();
  const again = rows().filter({ hasText: 'failed again: 503' });
  assert.is(await again.count(), 1);
  assert.is(await again.locator('td[data-label="Replays"]').textContent(), '1');
  subscriber.answer(() => ({ status: 200 }));
});

browserTest('a row is discarded after confirming', async () => {
  await rows().filter({ has: page.getByRole('cell', { name: 'mailer', exact: true }) }).first().getByRole('button', { name: /^Discard jobs\.done to mailer/ }).click();
  const dialog = page.getByRole('dialog', { name: 'Discard this dead letter?' });
  await dialog.waitFor();
  await assertAccessible(page, 'discard one dialog');
  await dialog.getByRole('button', { name: 'Discard dead letter' }).click();
  await page.getByRole('status').filter({ hasText: 'Discarded jobs.done to mailer.' }).waitFor();
  await page.getByText(`1–${2 * EVENTS - 2} of ${2 * EVENTS - 2}`).waitFor();
  assert.is(await count('&extensionKey=mailer'), EVENTS - 1);
});

browserTest('the selected rows are replayed, then others discarded, with the outcome counts', async () => {
  const builders = rows().filter({ has: page.getByRole('cell', { name: 'builder', exact: true }) });
  assert.is(await builders.count(), EVENTS - 1);
  for (let n = 0; n < EVENTS - 1; n += 1) await builders.nth(n).getByRole('checkbox').check();
  await page.getByText(`${EVENTS - 1} selected`).waitFor();
  await page.getByRole('button', { name: 'Replay selected' }).click();
  await page.getByRole('status').filter({ hasText: `Replayed ${EVENTS - 1} dead letters.` }).waitFor();
  await page.getByText(`1–${EVENTS - 1} of ${EVENTS - 1}`).waitFor();
  await waitFor('the replayed deliveries', () => subscriber.deliveredEventIds().size === EVENTS);

  const mailers = rows().filter({ has: page.getByRole('cell', { name: 'mailer', exact: true }) });
  await mailers.nth(0).getByRole('checkbox').check();
  await mailers.nth(1).getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Discard selected' }).click();
  const dialog = page.getByRole('dialog', { name: 'Discard the selected dead letters?' });
  await dialog.getByRole('button', { name: 'Discard 2 dead letters' }).click();
  await page.getByRole('status').filter({ hasText: 'Discarded 2 dead letters.' }).waitFor();
  await page.getByText('1–1 of 1').waitFor();
  await page.getByText('0 selected').waitFor();
});

browserTest('discarding every match says first how many match', async () => {
  await page.getByRole('button', { name: 'Discard all matching' }).click();
  const dialog = page.getByRole('dialog', { name: 'Discard every matching dead letter?' });
  assert.match((await dialog.textContent()) ?? '', '1 dead letter matches and will never be delivered.');
  await assertAccessible(page, 'discard all dialog');
  await dialog.getByRole('button', { name: 'Discard 1 dead letter' }).click();
  await page.getByRole('status').filter({ hasText: 'Discarded 1 dead letter.' }).waitFor();
  await page.getByText('No dead letter matches this filter.').waitFor();
  assert.is(await count(), 0);
});

browserTest("a dead letter's replay shows its outcome without a reload: failed again, then delivered", async () => {
  subscriber.answer(() => ({ status: 503 }));
  assert.is((await admin.post('/api/workspaces/ops/events/publish', { eventKey: 'jobs.done', payload: { n: 'late' } })).status, 200);
  await waitFor('the new dead letters', async () => (await count()) === 2);
  const [letter] = (await admin.get('/api/admin/dead-letters?extensionKey=builder')).body.data as { id: string; event: { id: string } }[];
  await visit(page, `/dead-letters/${letter!.id}`);
  await page.getByRole('heading', { level: 1, name: 'Dead letter', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Replay', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Failed again' }).waitFor();
  await page.getByRole('definition').filter({ hasText: /^1$/ }).waitFor();

  subscriber.answer(() => ({ status: 200 }));
  await page.getByRole('button', { name: 'Replay', exact: true }).click();
  const delivered = page.getByRole('status').filter({ hasText: 'Delivered' });
  await delivered.waitFor();
  await assertAccessible(page, 'a delivered replay');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'a delivered replay, 360 px');
  await page.setViewportSize({ width: 1280, height: 900 });
  await delivered.getByRole('link').click();
  await page.getByRole('heading', { level: 1, name: 'Event jobs.done' }).waitFor();
  assert.match(page.url(), letter!.event.id);

  // Back on the dead letter's address, it is no error that it is gone.
  await visit(page, `/dead-letters/${letter!.id}`);
  await page.getByRole('status').filter({ hasText: 'This dead letter was replayed and delivered; see its event.' }).waitFor();
  assert.is(await page.locator('.error').count(), 0);
  await page.getByRole('link', { name: 'its event' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event jobs.done' }).waitFor();
  assert.equal(errors, [], 'no console errors');
});

test.run();
