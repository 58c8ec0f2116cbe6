import type { Browser, Page } from 'playwright-core';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, openPage, signIn, visit } from './browser.js';

// An event's page sends one of its deliveries again, and follows the new delivery live.
const MEMBER = { email: 'member@example.test', password: 'member-password-1' };
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];
let eventId: string;
let original: string;

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await workspaceWith(admin, 'ops', 'builder');
  subscriber = await startSubscriber();
  await subscribeExternal(admin, 'ops', 'jobs.done', 'builder', subscriber.url);
  eventId = (await admin.post('/api/workspaces/ops/events/publish', { eventKey: 'jobs.done', payload: { n: 1 } })).body.meta.eventId;
  original = await waitFor('the first delivery', async () => {
    const [delivery] = (await admin.get(`/api/workspaces/ops/events/${eventId}`)).body.data.deliveries;
    return delivery?.status === 'SUCCEEDED' && (delivery.id as string);
  });
  const member = await createUser(t, MEMBER.email, { password: MEMBER.password });
  assert.is((await admin.put(`/api/admin/workspaces/ops/members/${member.id}`)).status, 200);
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

const articleOf = (deliveryId: string) => page.getByRole('article').filter({ has: page.locator(`[id="delivery-${deliveryId}"]`) });

browserTest('Redeliver sends a delivery again: the new one shows on the page, names the original, and is followed until delivered', async () => {
  await visit(page, `/workspaces/ops/events/${eventId}`);
  await page.getByRole('status').filter({ hasText: 'Updated live' }).waitFor();
  await page.getByRole('button', { name: 'Redeliver' }).click();
  const note = page.getByRole('status').filter({ hasText: `Redelivery of ${original} to builder` });
  await note.filter({ hasText: 'delivered.' }).waitFor();
  const redelivery = (await note.textContent())!.match(/delivery (msg_[0-9a-f]{32})/)![1]!;
  await waitFor('the redelivery received', () => subscriber.received.some((request) => request.headers['webhook-id'] === redelivery));

  const article = articleOf(redelivery);
  await article.getByText(`Redelivery of ${original}`).waitFor();
  assert.is(await article.getByRole('link', { name: original }).getAttribute('href'), `/workspaces/ops/events/${eventId}#delivery-${original}`);
  await article.getByText('Attempt 1').waitFor();
  assert.is(await page.getByRole('article').count(), 2);
  await assertAccessible(page, 'an event with a redelivery, 1280 px');
  await page.setViewportSize({ width: 360, height: 800 });
  await assertAccessible(page, 'an event with a redelivery, 360 px');
  await page.setViewportSize({ width: 1280, height: 900 });
});

browserTest('a redelivery that fails every attempt is followed live until it is dead', async () => {
  subscriber.answer(() => ({ status: 503 }));
  await page.getByRole('button', { name: `Redeliver to builder (delivery ${original})` }).click();
  const note = page.getByRole('status').filter({ hasText: `Redelivery of ${original} to builder` });
  await note.filter({ hasText: /dead/i }).waitFor();
  const redelivery = (await note.textContent())!.match(/delivery (msg_[0-9a-f]{32})/)![1]!;
  await articleOf(redelivery).getByText('Attempt 4').waitFor();
  assert.is(await page.getByRole('article').count(), 3);
  subscriber.answer(() => ({ status: 200 }));
  assert.equal(errors, [], 'no console errors');
});

browserTest('a member who is not an ADMIN sees no Redeliver button', async () => {
  const { page: memberPage, errors: memberErrors } = await openPage(browser, t.url);
  await signIn(memberPage, MEMBER.email, MEMBER.password);
  await visit(memberPage, `/workspaces/ops/events/${eventId}`);
  await memberPage.getByRole('article').first().waitFor();
  assert.is(await memberPage.getByRole('button', { name: 'Redeliver' }).count(), 0);
  assert.equal(memberErrors, []);
  await memberPage.context().close();
});

browserTest.run();
