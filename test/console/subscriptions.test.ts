import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { hasValidSignature, startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { assertAccessible, browserTest, closeAll, openConsole, visit } from './browser.js';

// Subscription controls on the workspace page, each checked against the API and a real subscriber.
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];
let firstSecret: string;

const subscription = async () => (await admin.get('/api/workspaces/hub/subscriptions')).body.data[0];
const publish = async () => {
  const published = await admin.post('/api/workspaces/hub/events/publish', { eventKey: 'builds.finished', payload: { build: 7 } });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
};
const deliveryOf = (eventId: string) =>
  waitFor(`the delivery of ${eventId}`, () => subscriber.received.find((delivery) => delivery.json?.id === eventId && delivery.status === 200));
const row = () => page.getByRole('region', { name: 'Subscriptions' }).getByRole('row').filter({ hasText: 'builds.finished' });

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'notifier', '1.0.0');
  await createWorkspace(admin, 'hub');
  await install(admin, 'hub', 'notifier');
  subscriber = await startSubscriber();
  firstSecret = (await subscribeExternal(admin, 'hub', 'builds.finished', 'notifier', subscriber.url)).signingSecret;
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('a disabled subscription shows why and gets no delivery; enabled again, it does', async () => {
  await visit(page, '/workspaces/hub/subscriptions');
  await row().getByRole('button', { name: 'Disable' }).click();
  await row().getByText('disabled by an administrator').waitFor();
  assert.equal(await subscription().then(({ enabled, disabledReason }) => ({ enabled, disabledReason })), {
    enabled: false,
    disabledReason: 'disabled by an administrator',
  });
  const ignored = await publish();
  assert.equal((await admin.get(`/api/workspaces/hub/events/${ignored}`)).body.data.deliveries, [], 'no delivery while disabled');

  await row().getByRole('button', { name: 'Enable' }).click();
  await row().getByText('enabled', { exact: true }).waitFor();
  assert.is((await subscription()).disabledReason, null);
  const delivered = await publish();
  assert.ok(await deliveryOf(delivered));
});

browserTest('a test is sent to the subscription, and its delivery followed on the event page', async () => {
  await row().getByRole('button', { name: 'Send test' }).click();
  await row().getByRole('status').filter({ hasText: 'Test sent' }).getByRole('link', { name: 'see its delivery' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event platform.test' }).waitFor();
  await page.getByRole('article', { name: /notifier/ }).getByText('delivered', { exact: true }).waitFor();
  const test = subscriber.received.find((delivery) => delivery.json?.eventKey === 'platform.test');
  assert.ok(test, 'the real subscriber received the test event');
  assert.ok(hasValidSignature(test!, firstSecret), 'signed with the subscription secret');
});

browserTest('a rotated secret is shown once; the page never holds it afterwards; deliveries carry both signatures', async () => {
  await visit(page, '/workspaces/hub/subscriptions');
  await row().getByRole('button', { name: 'Rotate secret' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('overlap period').waitFor();
  await assertAccessible(page, 'rotate dialog');
  await dialog.getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = await dialog.getByRole('textbox', { name: 'New signing secret' }).inputValue();
  assert.match(rotated, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.is.not(rotated, firstSecret);
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  // The dialog hides at once; its close event, which makes the page forget the secret, comes a task later.
  await waitFor('the secret gone from the page and from every input', async () => {
    const inputs = await page.locator('input').evaluateAll((all) => all.map((input) => (input as { value: string }).value));
    return !(await page.content()).includes(rotated) && !inputs.includes(rotated);
  });
  // Opening the dialog again asks again; it does not show the secret.
  await row().getByRole('button', { name: 'Rotate secret' }).click();
  assert.not.ok((await page.content()).includes(rotated));
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  const eventId = await publish();
  const delivery = await deliveryOf(eventId);
  assert.ok(hasValidSignature(delivery, rotated), 'signed with the new secret');
  assert.ok(hasValidSignature(delivery, firstSecret), 'and with the old one during the overlap');
  assert.is(String(delivery.headers['webhook-signature']).split(' ').length, 2);
  assert.equal(errors, [], 'no console errors');
});

test.run();
