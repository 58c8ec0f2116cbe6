import type { Browser, Page } from 'playwright-core';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Answer, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, visit } from './browser.js';

// An event's page shows each attempt's request (headers, and the event as its body) beside the subscriber's response.
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];
let eventId: string;

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'ledger', '1.0.0');
  await createWorkspace(admin, 'shop');
  await install(admin, 'shop', 'ledger');
  subscriber = await startSubscriber((_request, index): Answer =>
    index === 0 ? { status: 503, headers: { 'retry-after': '0' }, body: 'busy' } : { status: 202, headers: { 'x-receipt': 'r-42' }, body: '{"queued":true}' },
  );
  const { host } = new URL(subscriber.url);
  await subscribeExternal(admin, 'shop', 'orders.created', 'ledger', `http://clerk:hunter2-secret@${host}/`);
  const published = await admin.post('/api/workspaces/shop/events/publish', { eventKey: 'orders.created', payload: { order: 7 } });
  eventId = published.body.meta.eventId;
  await waitFor('the delivered event', async () => (await admin.get(`/api/workspaces/shop/events/${eventId}`)).body.data.deliveries[0]?.status === 'SUCCEEDED');
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest("each attempt shows the request's headers and body beside the response's status, headers and body", async () => {
  await visit(page, `/workspaces/shop/events/${eventId}`);
  const attempts = page.getByRole('list', { name: 'Attempts of the delivery to ledger' }).getByRole('listitem');
  await attempts.nth(1).waitFor();
  const { host } = new URL(subscriber.url);

  for (const [index, received] of subscriber.received.slice(0, 2).entries()) {
    const attempt = attempts.nth(index);
    const request = attempt.getByRole('region', { name: `Request of attempt ${index + 1}` });
    assert.match((await request.textContent()) ?? '', `POST http://****@${host}/events`);
    const headers = request.getByRole('definition');
    const names = await request.getByRole('term').allTextContents();
    const values = await headers.allTextContents();
    const shown = Object.fromEntries(names.map((name, n) => [name, values[n]]));
    assert.equal(shown, { ...received.headers, authorization: 'Basic ****' }, `attempt ${index + 1}: the headers as the subscriber received them`);
    assert.not.ok((await page.content()).includes('hunter2-secret'), 'the password is nowhere on the page');

    await request.getByText('Request body (the event as JSON)').click();
    const body = request.getByRole('region', { name: `Request body of attempt ${index + 1}` });
    assert.equal(JSON.parse((await body.textContent()) ?? ''), received.json, 'the body is the event as it was sent');
  }

  const first = attempts.nth(0).getByRole('region', { name: 'Response of attempt 1' });
  assert.match((await first.textContent()) ?? '', 'HTTP 503');
  assert.match((await first.getByRole('definition').allTextContents()).join(' '), '0');
  assert.ok((await first.getByRole('term').allTextContents()).includes('retry-after'));
  const second = attempts.nth(1).getByRole('region', { name: 'Response of attempt 2' });
  assert.match((await second.textContent()) ?? '', 'HTTP 202');
  assert.ok((await second.getByRole('definition').allTextContents()).includes('r-42'));
  await second.getByText('Response (first 2 KiB)').click();
  assert.is(await second.getByRole('region', { name: 'Response body of attempt 2' }).textContent(), '{"queued":true}');

  await assertAccessible(page, 'event page with requests and responses, 1280 px');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'event page with requests and responses, 360 px');
  await page.setViewportSize({ width: 1280, height: 900 });
  await screenshots(page, 'event-requests');
  assert.equal(errors, [], 'no console errors');
});

browserTest.run();
