import type { Browser, Locator, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { configureExtension, createWorkspace, FAST_DISPATCH } from '../helpers/fixtures.js';
import type { Api } from '../helpers/http.js';
import { hasValidSignature, startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, visit } from './browser.js';

// Manifests in the console: the install form's consent and preview, the upgrade asking for consent again, the event types and a version's page.
let t: TestDaemon;
let admin: Api;
let service: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const ORDER_V1 = { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string', minLength: 1 } } };
const ORDER_V2 = { ...ORDER_V1, required: ['orderId', 'currency'], properties: { ...ORDER_V1.properties, currency: { type: 'string', pattern: '^[A-Z]{3}$' } } };
const V1 = {
  manifestVersion: 1,
  extensionKey: 'shop',
  version: '1.0.0',
  permissions: ['shop.orders.write', 'shop.orders.read'],
  publishes: [{ eventKey: 'shop.order.paid', schemaVersion: '1', description: 'An order was paid.', schema: ORDER_V1 }],
  subscribes: [
    { eventKey: 'shop.order.paid', kind: 'EXTERNAL_SERVICE', path: '/hooks/orders' },
    { eventKey: 'platform.notification', kind: 'EXTERNAL_SERVICE' },
  ],
  configuration: [
    { name: 'apiKey', type: 'SECRET', required: true, description: 'The key of the shop’s API.' },
    { name: 'region', type: 'STRING', required: true },
    { name: 'verbose', type: 'BOOLEAN' },
  ],
};
// 2.0.0 asks for one permission more, moves a subscription to another path, drops one and adds one.
const V2 = {
  ...V1,
  version: '2.0.0',
  permissions: [...V1.permissions, 'shop.refunds.write'],
  publishes: [...V1.publishes, { eventKey: 'shop.order.paid', schemaVersion: '2', description: 'An order was paid, in a currency.', schema: ORDER_V2 }],
  subscribes: [
    { eventKey: 'shop.order.paid', kind: 'EXTERNAL_SERVICE', path: '/v2/orders' },
    { eventKey: 'shop.order.refunded', kind: 'EXTERNAL_SERVICE' },
  ],
};

async function publish(manifest: typeof V1): Promise<void> {
  const published = await admin.post('/api/admin/marketplace/extensions/shop/versions', {
    version: manifest.version,
    artifactUrl: `https://artifacts.example.test/shop-${manifest.version}.jar`,
    manifestUrl: `https://artifacts.example.test/shop-${manifest.version}.json`,
    changelog: `Version ${manifest.version}.`,
    manifest,
  });
  assert.is(published.status, 201, published.text);
}

const installationOf = async (workspace: string) => (await admin.get(`/api/workspaces/${workspace}/extensions`)).body.data[0];
const subscriptionsOf = async (workspace: string) => (await admin.get(`/api/workspaces/${workspace}/subscriptions`)).body.data as Array<{ id: string; eventKey: string; deliveryUrl: string }>;

/** The console errors an expected refusal logs ("Failed to load resource: … 409"), taken out of the list. */
function takeRefusals(status: number): number {
  const refusals = errors.filter((error) => error.includes(`status of ${status}`));
  errors.splice(0, errors.length, ...errors.filter((error) => !refusals.includes(error)));
  return refusals.length;
}

/** axe at 1280 and at 360 px, and the screenshots (at 360 px nothing may stick out sideways); the page is left at 1280 px. */
async function accessibleAtBothWidths(what: string, screenshot: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 900 });
  await assertAccessible(page, `${what} at 1280 px`);
  await screenshots(page, screenshot);
  await page.setViewportSize({ width: 360, height: 740 });
  await assertAccessible(page, `${what} at 360 px`);
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** What a locator shows, its white space collapsed. */
const textOf = async (locator: Locator) => (await locator.innerText()).replace(/\s+/g, ' ').trim();

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  service = await startSubscriber();
  assert.is((await admin.post('/api/admin/marketplace/extensions', { extensionKey: 'shop', name: 'Shop' })).status, 201);
  await publish(V1);
  await configureExtension(admin, 'shop', [['region', 'STRING', 'eu']]);
  for (const id of ['store', 'depot']) await createWorkspace(admin, id);
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, service, t));

browserTest('the install form shows the permissions to consent to, the subscriptions, the service URL and the missing configuration', async () => {
  await visit(page, '/workspaces/store/extensions');
  const form = page.getByRole('form', { name: 'Install an extension' });
  await form.getByRole('combobox', { name: 'Extension key' }).fill('shop');
  // Empty version: the newest this daemon runs, as the daemon resolves it.
  await form.getByText('Installs Shop 1.0.0, the newest version this daemon runs.').waitFor();

  const permissions = form.getByRole('group', { name: 'Permissions' });
  assert.equal((await permissions.getByRole('listitem').allTextContents()).map((text) => text.trim()), ['shop.orders.read', 'shop.orders.write']);
  const installButton = form.getByRole('button', { name: 'Install', exact: true });
  assert.ok(await installButton.isDisabled(), 'Install waits for the consent');

  const planned = form.getByRole('table', { name: 'Subscriptions it will create' });
  const row = (eventKey: string) => planned.getByRole('row').filter({ hasText: eventKey });
  assert.match(await textOf(row('shop.order.paid')), /External service the service URL \+ \/hooks\/orders/);
  await form.getByRole('textbox', { name: 'Service URL' }).fill(`${service.url}/base/`);
  await row('shop.order.paid').getByText(`${service.url}/base/hooks/orders`).waitFor();
  await row('platform.notification').getByText(`${service.url}/base/events`).waitFor();

  assert.match(await textOf(form), /Required configuration not set yet: apiKey\./);
  assert.is(await form.getByRole('link', { name: 'Set it on the configuration page' }).getAttribute('href'), '/extensions/shop/config');
  await accessibleAtBothWidths('the install form with its preview', 'install-preview');
  await page.emulateMedia({ colorScheme: 'dark' });
  await assertAccessible(page, 'the install form in the dark scheme');
  await page.emulateMedia({ colorScheme: 'light' });

  await permissions.getByRole('checkbox', { name: 'I grant these permissions' }).check();
  assert.ok(await installButton.isEnabled());
  await installButton.click();

  // The secrets, shown once; the one shown signs the deliveries.
  const dialog = page.getByRole('dialog', { name: 'shop 1.0.0 installed' });
  const secret = await dialog.getByRole('textbox', { name: 'Signing secret of shop.order.paid' }).inputValue();
  assert.match(await dialog.getByRole('textbox', { name: 'Signing secret of platform.notification' }).inputValue(), /^whsec_/);
  assert.match(await textOf(dialog), /Required configuration not set yet: apiKey\./);
  await assertAccessible(page, 'the installed dialog');
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.not.ok((await page.content()).includes(secret), 'the secret is gone once the dialog is closed');

  const installed = await installationOf('store');
  assert.equal([installed.version, installed.grantedPermissions, installed.missingConfiguration], ['1.0.0', ['shop.orders.read', 'shop.orders.write'], ['apiKey']]);
  assert.equal(
    (await subscriptionsOf('store')).map((subscription) => [subscription.eventKey, subscription.deliveryUrl]),
    [
      ['shop.order.paid', `${service.url}/base/hooks/orders`],
      ['platform.notification', `${service.url}/base/events`],
    ],
  );
  assert.is((await admin.post('/api/workspaces/store/events/publish', { eventKey: 'shop.order.paid', payload: { orderId: 'O-1' } })).status, 200);
  const [delivery] = await service.waitForCount(1);
  assert.ok(hasValidSignature(delivery!, secret), 'the secret shown signs the deliveries');

  // The installation is listed with its granted permissions and what is missing.
  const listed = page.getByRole('region', { name: 'Installed extensions' }).getByRole('row').filter({ hasText: 'shop' });
  await listed.getByText('shop.orders.read').waitFor();
  await listed.getByText('shop.orders.write').waitFor();
  await listed.getByText('missing configuration').waitFor();
  await listed.getByText('apiKey').waitFor();
});

browserTest('a range is resolved by the daemon: its 409 asks for consent, its 400 for the service URL, then it installs', async () => {
  await visit(page, '/workspaces/depot/extensions');
  const form = page.getByRole('form', { name: 'Install an extension' });
  await form.getByRole('combobox', { name: 'Extension key' }).fill('shop');
  await form.getByRole('combobox', { name: 'Version (optional)' }).fill('^1.0');
  await form.getByText('A range is resolved by the daemon when installing').waitFor();
  const installButton = form.getByRole('button', { name: 'Install', exact: true });
  await installButton.click();

  const permissions = form.getByRole('group', { name: 'Permissions' });
  await permissions.waitFor();
  assert.is(takeRefusals(409), 1, 'the daemon asked for consent');
  assert.ok(await installButton.isDisabled());
  await permissions.getByRole('checkbox', { name: 'I grant these permissions' }).check();
  await installButton.click();
  await form.getByRole('alert').filter({ hasText: 'serviceBaseUrl' }).waitFor();
  assert.is(takeRefusals(400), 1, 'the daemon asked for the service URL');
  await form.getByRole('textbox', { name: 'Service URL' }).fill(service.url);
  await installButton.click();
  const dialog = page.getByRole('dialog', { name: 'shop 1.0.0 installed' });
  await dialog.getByRole('textbox', { name: 'Signing secret of shop.order.paid' }).waitFor();
  await dialog.getByRole('button', { name: 'Done' }).click();
  assert.equal((await installationOf('depot')).grantedPermissions, ['shop.orders.read', 'shop.orders.write']);
});

browserTest('changing to a version that asks for a new permission needs consent again', async () => {
  await publish(V2);
  const before = await subscriptionsOf('store');
  await visit(page, '/workspaces/store/extensions');
  await page.getByRole('region', { name: 'Installed extensions' }).getByRole('row').filter({ hasText: 'shop' }).getByRole('button', { name: 'Change version' }).click();
  const dialog = page.getByRole('dialog', { name: 'Change the version of shop' });
  assert.is(await dialog.getByRole('combobox', { name: 'Version' }).inputValue(), '2.0.0');

  const permissions = dialog.getByRole('group', { name: 'Permissions' });
  await permissions.waitFor();
  const listed = permissions.getByRole('listitem');
  assert.equal(await Promise.all((await listed.all()).map(textOf)), ['shop.orders.read', 'shop.orders.write', 'shop.refunds.write new']);
  const change = dialog.getByRole('button', { name: 'Change version' });
  assert.ok(await change.isDisabled(), 'Change version waits for the consent');
  const planned = dialog.getByRole('table', { name: 'Subscriptions it will create' });
  await planned.getByRole('row').filter({ hasText: 'shop.order.paid' }).getByText('exists already').waitFor();
  await planned.getByRole('row').filter({ hasText: 'shop.order.paid' }).getByText(`${service.url}/base/v2/orders`).waitFor();
  await planned.getByRole('row').filter({ hasText: 'shop.order.refunded' }).getByText(`${service.url}/base/events`).waitFor();
  assert.ok(await dialog.getByRole('textbox', { name: 'Service URL (optional)' }).isVisible(), 'the existing service is reused unless told');
  await accessibleAtBothWidths('the change of version with its preview', 'upgrade-preview');

  await permissions.getByRole('checkbox', { name: 'I grant these permissions' }).check();
  await change.click();
  const done = page.getByRole('dialog', { name: 'shop moved to 2.0.0' });
  assert.match(await done.getByRole('textbox', { name: 'Signing secret of shop.order.refunded' }).inputValue(), /^whsec_/);
  await done.getByRole('button', { name: 'Done' }).click();
  await done.waitFor({ state: 'hidden' });

  const installed = await installationOf('store');
  assert.equal([installed.version, installed.grantedPermissions], ['2.0.0', ['shop.orders.read', 'shop.orders.write', 'shop.refunds.write']]);
  const after = await subscriptionsOf('store');
  assert.equal(after.map((subscription) => subscription.eventKey).sort(), ['shop.order.paid', 'shop.order.refunded']);
  const paid = (subscriptions: typeof before) => subscriptions.find((subscription) => subscription.eventKey === 'shop.order.paid')!.id;
  assert.is(paid(after), paid(before), 'kept, with its id and secret');
});

browserTest('an upgrade refused with 409 CONSENT_REQUIRED shows the permissions, and goes through once they are granted', async () => {
  // The version's record is answered without its permissions: the console sees nothing to consent to, the daemon does.
  await page.route('**/api/marketplace/extensions/shop/versions/2.0.0', async (route) => {
    const answer = await route.fetch();
    const body = await answer.json();
    delete body.data.manifest.permissions;
    await route.fulfill({ response: answer, json: body });
  });
  await visit(page, '/workspaces/depot/extensions');
  await page.getByRole('region', { name: 'Installed extensions' }).getByRole('row').filter({ hasText: 'shop' }).getByRole('button', { name: 'Change version' }).click();
  const dialog = page.getByRole('dialog', { name: 'Change the version of shop' });
  const change = dialog.getByRole('button', { name: 'Change version' });
  await dialog.getByRole('table', { name: 'Subscriptions it will create' }).waitFor();
  assert.is(await dialog.getByRole('group', { name: 'Permissions' }).count(), 0);
  await change.click();

  const permissions = dialog.getByRole('group', { name: 'Permissions' });
  await permissions.waitFor();
  assert.is(takeRefusals(409), 1);
  assert.equal((await permissions.getByRole('listitem').allTextContents()).map((text) => text.trim()), ['shop.orders.read', 'shop.orders.write', 'shop.refunds.write']);
  assert.ok(await change.isDisabled());
  await permissions.getByRole('checkbox', { name: 'I grant these permissions' }).check();
  await change.click();
  await page.getByRole('dialog', { name: 'shop moved to 2.0.0' }).getByRole('button', { name: 'Done' }).click();
  await page.unroute('**/api/marketplace/extensions/shop/versions/2.0.0');
  const installed = await installationOf('depot');
  assert.equal([installed.version, installed.grantedPermissions], ['2.0.0', ['shop.orders.read', 'shop.orders.write', 'shop.refunds.write']]);
});

browserTest('the event types: the list, then one type with its schema per version, newest first', async () => {
  await visit(page, '/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Event types' }).click();
  await page.getByRole('heading', { level: 1, name: 'Event types' }).waitFor();
  const row = page.getByRole('row').filter({ hasText: 'shop.order.paid' });
  await row.waitFor();
  assert.match(await textOf(row), /^shop\.order\.paid shop An order was paid.* 1, 2$/);
  await page.getByRole('row').filter({ hasText: 'platform.notification' }).getByText('platform (built in)').waitFor();
  await accessibleAtBothWidths('the event types', 'event-types');

  await row.getByRole('link', { name: 'shop.order.paid' }).click();
  await page.getByRole('heading', { level: 1, name: 'shop.order.paid' }).waitFor();
  assert.is(await page.title(), 'shop.order.paid · Event types · platform');
  assert.equal(await page.getByRole('heading', { level: 2 }).allTextContents(), ['Schema version 2', 'Schema version 1']);
  const schema = async (version: string) => JSON.parse((await page.getByRole('region', { name: `JSON Schema of schema version ${version}` }).textContent()) ?? '');
  assert.equal(await schema('2'), ORDER_V2);
  assert.equal(await schema('1'), ORDER_V1);
  await accessibleAtBothWidths('an event type', 'event-type');
});

browserTest("a version's page shows its record and its manifest, linked from the extension's page", async () => {
  await visit(page, '/marketplace/shop');
  await page.getByRole('row').filter({ hasText: '2.0.0' }).getByRole('link', { name: '2.0.0' }).click();
  await page.getByRole('heading', { level: 1, name: 'shop 2.0.0' }).waitFor();
  assert.is(await page.title(), 'shop 2.0.0 · Marketplace · platform');
  const text = await textOf(page.locator('main'));
  for (const expected of ['https://artifacts.example.test/shop-2.0.0.jar', 'https://artifacts.example.test/shop-2.0.0.json', 'Version 2.0.0.', 'shop.refunds.write']) {
    assert.ok(text.includes(expected), expected);
  }
  const published = page.getByRole('table', { name: 'Events it publishes' });
  assert.is(await published.getByRole('row').filter({ hasText: 'An order was paid, in a currency.' }).getByRole('link', { name: 'shop.order.paid' }).getAttribute('href'), '/event-types/shop.order.paid');
  const subscribed = page.getByRole('table', { name: 'Events it subscribes to' });
  assert.is(await textOf(subscribed.getByRole('row').filter({ hasText: 'shop.order.refunded' })), 'shop.order.refunded External service /events');
  assert.is(await textOf(subscribed.getByRole('row').filter({ hasText: 'shop.order.paid' })), 'shop.order.paid External service /v2/orders');
  const configuration = page.getByRole('table', { name: 'Configuration it reads' });
  assert.is(await textOf(configuration.getByRole('row').filter({ hasText: 'apiKey' })), 'apiKey SECRET required The key of the shop’s API.');
  assert.is(await textOf(configuration.getByRole('row').filter({ hasText: 'verbose' })), 'verbose BOOLEAN optional —');
  await accessibleAtBothWidths('a version', 'version');

  await page.getByRole('link', { name: 'shop.order.paid' }).first().click();
  await page.getByRole('heading', { level: 1, name: 'shop.order.paid' }).waitFor();
  assert.equal(errors, [], 'no console errors');
});

test.run();
