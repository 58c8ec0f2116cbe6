import type { Browser, Page } from 'playwright-core';
import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// The workspace's events list: how each event's deliveries stand, and the Deliveries filter.
let t: TestDaemon;
let admin: Api;
let answering: Subscriber;
let failing: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const events = () => page.getByRole('region', { name: 'Events' });
const rows = () => events().locator('tbody tr');
const deliveriesOf = (eventKey: string) => rows().filter({ has: page.getByRole('link', { name: eventKey, exact: true }) }).locator('td[data-label="Deliveries"]');

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createWorkspace(admin, 'ops');
  await publishExtension(admin, 'builder', '1.0.0');
  await install(admin, 'ops', 'builder');
  answering = await startSubscriber(() => ({ status: 200 }));
  failing = await startSubscriber(() => ({ status: 500 }));
  await subscribeExternal(admin, 'ops', 'jobs.done', 'builder', answering.url);
  await subscribeExternal(admin, 'ops', 'jobs.failed', 'builder', answering.url);
  await subscribeExternal(admin, 'ops', 'jobs.failed', 'builder', failing.url);
  for (const eventKey of ['jobs.done', 'jobs.failed', 'jobs.noted']) {
    assert.is((await admin.post('/api/workspaces/ops/events/publish', { eventKey, payload: {} })).status, 200);
  }
  await waitFor('every delivery settled', async () => {
    const listed = (await admin.get('/api/workspaces/ops/events')).body.data as Array<{ deliverySummary: { pending: number; dead: number } }>;
    return listed.every((event) => event.deliverySummary.pending === 0) && listed.some((event) => event.deliverySummary.dead === 1);
  });
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, answering, failing, t));

browserTest('each event shows how its deliveries stand, in words', async () => {
  await visit(page, '/workspaces/ops/events');
  await rows().first().waitFor();
  assert.is(await rows().count(), 3);
  assert.is((await deliveriesOf('jobs.done').textContent())?.trim(), '1 delivered');
  assert.is((await deliveriesOf('jobs.failed').textContent())?.trim(), '1 delivered · 1 dead');
  assert.is((await deliveriesOf('jobs.noted').textContent())?.trim(), 'no deliveries');
  await assertAccessible(page, 'events with their deliveries, 1280 px');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'events with their deliveries, 360 px');
  await page.setViewportSize({ width: 1280, height: 900 });
});

browserTest('the Deliveries filter lists only the matching events and keeps its choice in the address', async () => {
  const filter = events().getByLabel('Deliveries');
  assert.equal(await filter.locator('option').allTextContents(), ['All', 'Failed', 'Pending', 'Delivered', 'None']);
  await filter.selectOption({ label: 'Failed' });
  await page.waitForURL(/deliveries=failed/);
  await waitFor('only the failed event listed', async () => (await rows().count()) === 1 && (await deliveriesOf('jobs.failed').count()) === 1);

  await page.reload();
  await rows().first().waitFor();
  assert.is(await events().getByLabel('Deliveries').inputValue(), 'failed', 'the choice is read back from the address');
  assert.is(await rows().count(), 1);

  await events().getByLabel('Deliveries').selectOption({ label: 'None' });
  await page.waitForURL(/deliveries=none/);
  await waitFor('only the event without deliveries listed', async () => (await rows().count()) === 1 && (await deliveriesOf('jobs.noted').count()) === 1);

  await events().getByLabel('Deliveries').selectOption({ label: 'All' });
  await waitFor('every event listed again', async () => (await rows().count()) === 3);
  assert.not.match(page.url(), 'deliveries=');
  assert.equal(errors, [], 'no console errors');
});

test.run();
