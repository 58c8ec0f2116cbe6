import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, visit } from './browser.js';

// A workspace's events, filtered and paged, and an event's deliveries as timelines of their attempts.
let t: TestDaemon;
let admin: Api;
let flaky: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];
let retriedEvent: string;
const PUBLISHED = { 'orders.created': 20, 'orders.paid': 10 };

const publish = async (eventKey: string, payload: Record<string, unknown> = {}) => {
  const published = await admin.post('/api/workspaces/shop/events/publish', { eventKey, payload });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
};
const recordOf = async (eventId: string) => (await admin.get(`/api/workspaces/shop/events/${eventId}`)).body.data.deliveries[0];
/** `YYYY-MM-DDTHH:mm` in local time, as a datetime-local input takes it (the browser runs in this zone too). */
const localMinute = (time: number) => new Date(time - new Date(time).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'ledger', '1.0.0');
  await createWorkspace(admin, 'shop');
  await install(admin, 'shop', 'ledger');
  // Every first request is answered 503 (retried), every later one 200 with a body.
  flaky = await startSubscriber((_request, index) => (index === 0 ? { status: 503 } : { status: 200 }));
  await subscribeExternal(admin, 'shop', 'orders.created', 'ledger', flaky.url);
  retriedEvent = await publish('orders.created', { order: 1 });
  await waitFor('the retried delivery', async () => (await recordOf(retriedEvent))?.status === 'SUCCEEDED');
  for (const [eventKey, count] of Object.entries(PUBLISHED)) {
    for (let n = eventKey === 'orders.created' ? 1 : 0; n < count; n += 1) await publish(eventKey, { n });
  }
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, flaky, t));

browserTest("a workspace's events page through the API's cursor, newest first", async () => {
  await visit(page, '/workspaces/shop/events');
  const events = page.getByRole('region', { name: 'Events' });
  const rows = events.getByRole('row').filter({ has: page.getByRole('link') });
  await rows.first().waitFor();
  assert.is(await rows.count(), 25);
  assert.is(await rows.first().getByRole('link').textContent(), 'orders.paid', 'the newest first');
  assert.ok(await events.getByRole('button', { name: 'Newer events' }).isDisabled());

  await events.getByRole('button', { name: 'Older events' }).click();
  await page.waitForURL(/cursor=/);
  await rows.nth(5).waitFor({ state: 'detached' });
  assert.is(await rows.count(), 5, 'the 30 events end on the second page');
  assert.is(await rows.last().getByRole('link').getAttribute('href'), `/workspaces/shop/events/${retriedEvent}`, 'the oldest last');
  assert.ok(await events.getByRole('button', { name: 'Older events' }).isDisabled());

  await events.getByRole('button', { name: 'Newer events' }).click();
  await rows.nth(24).waitFor();
  assert.not.match(page.url(), 'cursor=');
});

browserTest('events are filtered by event key and by time, and a bad key is refused before any request', async () => {
  const events = page.getByRole('region', { name: 'Events' });
  const rows = events.getByRole('row').filter({ has: page.getByRole('link') });
  await events.getByRole('textbox', { name: 'Event key' }).fill('orders.paid');
  await events.getByRole('button', { name: 'Filter events' }).click();
  await page.waitForURL(/eventKey=orders\.paid/);
  await rows.nth(10).waitFor({ state: 'detached' });
  assert.is(await rows.count(), PUBLISHED['orders.paid']);
  assert.is(await rows.filter({ hasText: 'orders.created' }).count(), 0);

  // Since a minute from now: nothing yet. Until the minute before the first event: nothing either.
  await events.getByLabel('Since').fill(localMinute(Date.now() + 60_000));
  await events.getByRole('button', { name: 'Filter events' }).click();
  await events.getByText('No event matches this filter.').waitFor();
  await events.getByLabel('Since').fill('');
  await events.getByLabel('Until').fill(localMinute(Date.now() - 3_600_000));
  await events.getByRole('button', { name: 'Filter events' }).click();
  await page.waitForURL(/until=/);
  await events.getByText('No event matches this filter.').waitFor();
  // Until this minute includes the whole minute, so every event of the key is listed again.
  await events.getByLabel('Until').fill(localMinute(Date.now()));
  await events.getByRole('button', { name: 'Filter events' }).click();
  await rows.nth(PUBLISHED['orders.paid'] - 1).waitFor();

  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  await events.getByRole('textbox', { name: 'Event key' }).fill('nodots');
  await events.getByRole('button', { name: 'Filter events' }).click();
  await events.getByRole('alert').filter({ hasText: 'Event key must be two or more dot-separated segments' }).waitFor();
  assert.equal(requests, [], 'nothing was sent');
  await assertAccessible(page, 'workspace with events');
});

browserTest("an event's page shows each delivery's attempts as a timeline", async () => {
  await visit(page, `/workspaces/shop/events/${retriedEvent}`);
  await page.getByRole('heading', { level: 1, name: 'Event orders.created' }).waitFor();
  assert.is(await page.locator('dt:text-is("Published by") + dd').textContent(), 'Administrator', 'the publisher by name, not by id');
  const delivery = page.getByRole('article', { name: /ledger/ });
  assert.match((await delivery.getByRole('heading').textContent()) ?? '', 'delivered');
  const attempts = delivery.getByRole('list', { name: 'Attempts of the delivery to ledger' }).getByRole('listitem');
  assert.is(await attempts.count(), 2);
  assert.match((await attempts.nth(0).textContent()) ?? '', /Attempt 1 · .* · failed, retried · HTTP 503 after \d+ ms/);
  assert.match((await attempts.nth(1).textContent()) ?? '', /Attempt 2 · .* · succeeded · HTTP 200 after \d+ ms/);
  // Retries a few milliseconds apart must not look simultaneous: the timeline shows milliseconds.
  const times: string[] = [];
  for (const n of [0, 1]) {
    const time = attempts.nth(n).locator('time');
    const millis = String(new Date((await time.getAttribute('datetime'))!).getMilliseconds()).padStart(3, '0');
    const shown = (await time.textContent()) ?? '';
    assert.match(shown, new RegExp(`\\d{2}:\\d{2}[.,]${millis}\\b`), `attempt ${n + 1}'s time to the millisecond`);
    times.push(shown);
  }
  assert.is.not(times[0], times[1]);
  await attempts.nth(1).getByText('Response (first 2 KiB)').click();
  assert.is(await attempts.nth(1).locator('pre').textContent(), '{}');
  await assertAccessible(page, 'event page');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'event page, 360 px');
  await page.setViewportSize({ width: 1440, height: 900 });
  await screenshots(page, 'event');
});

browserTest("the timeline grows live while the event's delivery is attempted", async () => {
  // A subscriber that holds the first request until it is closed; then nothing listens there any more.
  const holding = await startSubscriber(() => ({ hang: true }));
  await subscribeExternal(admin, 'shop', 'invoices.sent', 'ledger', holding.url);
  const eventId = await publish('invoices.sent');
  await holding.waitForCount(1);
  await visit(page, `/workspaces/shop/events/${eventId}`);
  await page.getByRole('status').filter({ hasText: 'Updated live' }).waitFor();
  const delivery = page.getByRole('article', { name: /ledger/ });
  assert.match((await delivery.getByRole('heading').textContent()) ?? '', 'pending');
  await page.evaluate('window.unreloaded = true');

  await holding.close();
  await delivery.getByRole('heading').filter({ hasText: 'dead letter' }).waitFor();
  const attempts = delivery.getByRole('list', { name: 'Attempts of the delivery to ledger' }).getByRole('listitem');
  assert.is(await attempts.count(), FAST_DISPATCH.retrySchedule.length + 1);
  assert.match((await attempts.last().textContent()) ?? '', /failed · no answer/);
  assert.ok(await page.evaluate('window.unreloaded === true'), 'it came without a reload');
  assert.equal(errors, [], 'no console errors');
});

test.run();
