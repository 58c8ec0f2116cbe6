import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import type { Api } from '../helpers/http.js';
import { createWorkspace, FAST_DISPATCH, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';
import { browserTest, closeAll, openConsole, signIn, visit } from './browser.js';

// An ADMIN's everyday work through the console, each step checked through the API.
let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;
let browser: Browser;
let page: Page;
let errors: string[];

const deadLetters = async () => (await admin.get('/api/admin/dead-letters')).body.data as Array<{ id: string; event: { eventKey: string } }>;
const installationOf = async (workspace: string, key: string) =>
  (await admin.get(`/api/workspaces/${workspace}/extensions`)).body.data.find((item: { extensionKey: string }) => item.extensionKey === key);

/** The console errors an expected refusal logs ("Failed to load resource: … 409"), taken out of the list. */
function takeRefusals(status: number): string[] {
  const refusals = errors.filter((error) => error.includes(`status of ${status}`));
  errors.splice(0, errors.length, ...errors.filter((error) => !refusals.includes(error)));
  return refusals;
}

browserTest.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await createUser(t, 'bob@example.test', { fullName: 'Bob Builder' });
  await publishExtension(admin, 'shop-kit', '1.0.0');
  await publishExtension(admin, 'shop-kit', '2.0.0');
  await publishExtension(admin, 'old-kit', '0.9.0');
  assert.is((await admin.delete('/api/admin/marketplace/extensions/old-kit/versions/0.9.0')).status, 204);

  await createWorkspace(admin, 'dlq');
  await install(admin, 'dlq', 'shop-kit');
  subscriber = await startSubscriber(() => ({ status: 400 }));
  for (const eventKey of ['orders.paid', 'orders.void']) await subscribeExternal(admin, 'dlq', eventKey, 'shop-kit', subscriber.url);
  for (const eventKey of ['orders.paid', 'orders.paid', 'orders.void']) {
    assert.is((await admin.post('/api/workspaces/dlq/events/publish', { eventKey })).status, 200);
  }
  await waitFor('three dead letters', async () => (await deadLetters()).length === 3);

  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, subscriber, t));

browserTest('a new extension is created from the marketplace, then its first version published', async () => {
  await visit(page, '/marketplace');
  const create = async (key: string) => {
    await page.getByRole('button', { name: 'New extension' }).click();
    const dialog = page.getByRole('dialog', { name: 'New extension' });
    await dialog.getByRole('textbox', { name: 'Key' }).fill(key);
    await dialog.getByRole('textbox', { name: 'Name' }).fill('Fresh Kit');
    await dialog.getByRole('combobox', { name: 'Category (optional)' }).fill('Tools');
    await dialog.getByRole('textbox', { name: 'Permissions (optional)' }).fill(`${key}.items.read, ${key}.items.write`);
    await dialog.getByRole('button', { name: 'Create extension' }).click();
    return dialog;
  };
  const refused = await create('shop-kit');
  await refused.getByRole('alert').filter({ hasText: 'shop-kit' }).waitFor();
  assert.is(takeRefusals(409).length, 1, 'a key in use is refused where it was typed');
  await page.keyboard.press('Escape');

  await create('fresh-kit');
  await page.getByRole('heading', { level: 1, name: 'Fresh Kit' }).waitFor();
  const created = (await admin.get('/api/marketplace/extensions/fresh-kit')).body.data;
  assert.equal([created.category, created.permissions, created.versions], ['tools', ['fresh-kit.items.read', 'fresh-kit.items.write'], []]);

  await page.getByRole('textbox', { name: 'Version' }).fill('0.1.0');
  await page.getByRole('textbox', { name: 'Artifact URL' }).fill('https://artifacts.example.test/fresh-kit-0.1.0.jar');
  await page.getByRole('button', { name: 'Publish version' }).click();
  await page.getByRole('row').filter({ hasText: '0.1.0' }).waitFor();
  assert.is((await admin.get('/api/marketplace/extensions/fresh-kit')).body.data.latestVersion, '0.1.0');
});

browserTest('a workspace is created, and a member added', async () => {
  await visit(page, '/workspaces');
  await page.getByRole('textbox', { name: 'ID' }).fill('shop');
  await page.getByRole('textbox', { name: 'Name' }).fill('The Shop');
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await page.getByRole('heading', { level: 1, name: 'The Shop' }).waitFor();
  await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Members' }).click();
  await page.getByRole('heading', { level: 2, name: 'Members' }).waitFor();

  await page.getByRole('combobox', { name: 'User' }).selectOption({ label: 'Bob Builder <bob@example.test>' });
  await page.getByRole('button', { name: 'Add member' }).click();
  await page.getByText('Bob Builder <bob@example.test>', { exact: true }).waitFor();
  assert.is((await admin.get('/api/workspaces/shop')).body.data.members.length, 1);
});

browserTest('installing a yanked version shows the envelope error next to Install', async () => {
  await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Extensions' }).click();
  await page.getByRole('combobox', { name: 'Extension key' }).fill('old-kit');
  await page.getByRole('button', { name: 'Install', exact: true }).click();
  const section = page.getByRole('region', { name: 'Installed extensions' });
  await section.getByRole('alert').filter({ hasText: 'yanked' }).waitFor();
  assert.is(await installationOf('shop', 'old-kit'), undefined);
  assert.is(takeRefusals(409).length, 1);
});

browserTest('an extension is installed, moved to another version, disabled, enabled and uninstalled', async () => {
  const keyBox = page.getByRole('combobox', { name: 'Extension key' });
  await keyBox.fill('shop-kit');
  await page.getByRole('combobox', { name: 'Version (optional)' }).fill('1.0.0');
  await page.getByRole('button', { name: 'Install', exact: true }).click();
  const row = page.getByRole('row').filter({ hasText: 'shop-kit' });
  await row.waitFor();
  assert.is((await installationOf('shop', 'shop-kit')).version, '1.0.0');

  await row.getByRole('button', { name: 'Change version' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('combobox', { name: 'Version' }).selectOption('2.0.0');
  await dialog.getByRole('button', { name: 'Change version' }).click();
  await row.getByText('2.0.0').waitFor();
  assert.is((await installationOf('shop', 'shop-kit')).version, '2.0.0');

  await row.getByRole('button', { name: 'Disable' }).click();
  await row.getByRole('button', { name: 'Enable' }).waitFor();
  assert.is((await installationOf('shop', 'shop-kit')).enabled, false);
  await row.getByRole('button', { name: 'Enable' }).click();
  await row.getByRole('button', { name: 'Disable' }).waitFor();
  assert.is((await installationOf('shop', 'shop-kit')).enabled, true);

  await row.getByRole('button', { name: 'Uninstall' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Uninstall' }).click();
  await row.waitFor({ state: 'detached' });
  assert.is(await installationOf('shop', 'shop-kit'), undefined);
});

browserTest('a subscription shows its signing secret once, and is deleted', async () => {
  await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Subscriptions' }).click();
  const subscriptions = page.getByRole('region', { name: 'Subscriptions' });
  await subscriptions.getByRole('combobox', { name: 'Event key' }).fill('orders.shipped');
  await subscriptions.getByRole('combobox', { name: 'Extension key' }).fill('shop-kit');
  await subscriptions.getByRole('textbox', { name: 'Service base URL' }).fill('https://hooks.example.test/shop');
  await subscriptions.getByRole('button', { name: 'Create subscription' }).click();
  const dialog = page.getByRole('dialog', { name: 'Subscription created' });
  const secret = await dialog.getByRole('textbox', { name: 'Signing secret' }).inputValue();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  await dialog.getByRole('button', { name: 'Done' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.not.ok((await page.content()).includes(secret), 'the secret is gone once the dialog is closed');

  const row = page.getByRole('row').filter({ hasText: 'orders.shipped' });
  await row.getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete subscription' }).click();
  await row.waitFor({ state: 'detached' });
  assert.equal((await admin.get('/api/workspaces/shop/subscriptions')).body.data, []);
});

browserTest('dead letters are replayed by filter to the real subscriber, and one is discarded', async () => {
  subscriber.answer(() => ({ status: 200 }));
  await visit(page, '/dead-letters');
  await page.getByRole('combobox', { name: 'Event key' }).fill('orders.paid');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.waitForURL(/eventKey=orders\.paid/);
  await page.getByText('1–2 of 2').waitFor();
  await page.getByRole('button', { name: 'Replay all matching' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Replay', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Replayed 2 dead letters.' }).waitFor();
  await waitFor('two deliveries', () => subscriber.received.filter((delivery) => delivery.status === 200).length === 2);
  assert.equal((await deadLetters()).map((letter) => letter.event.eventKey), ['orders.void']);

  await visit(page, '/dead-letters');
  await page.getByRole('link', { name: 'orders.void' }).click();
  await page.getByRole('heading', { level: 1, name: 'Dead letter', exact: true }).waitFor();
  await page.getByRole('button', { name: 'Discard', exact: true }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Discard dead letter' }).click();
  await page.getByText('No dead letter.').waitFor();
  assert.equal(await deadLetters(), []);
});

browserTest('a user is added, made ADMIN, disabled and enabled again', async () => {
  await visit(page, '/users');
  await page.getByRole('textbox', { name: 'Email' }).fill('carol@example.test');
  await page.getByRole('textbox', { name: 'Full name' }).fill('Carol Clerk');
  await page.getByRole('textbox', { name: 'Initial password' }).fill('carol-password-1');
  await page.getByRole('button', { name: 'Add user' }).click();
  const row = page.getByRole('row').filter({ hasText: 'carol@example.test' });
  await row.waitFor();
  const carol = async () =>
    (await admin.get('/api/admin/users')).body.data.find((user: { email: string }) => user.email === 'carol@example.test');
  assert.equal((await carol()).roles, ['USER']);

  await row.getByRole('button', { name: 'Change roles of carol@example.test' }).click();
  await page.getByRole('dialog').getByRole('checkbox', { name: 'ADMIN' }).check();
  await page.getByRole('dialog').getByRole('button', { name: 'Save roles' }).click();
  await row.getByText('ADMIN, USER').waitFor();
  assert.equal((await carol()).roles.sort(), ['ADMIN', 'USER']);

  await row.getByRole('button', { name: 'Disable carol@example.test' }).click();
  await row.getByText('disabled').waitFor();
  assert.is((await carol()).active, false);
  await row.getByRole('button', { name: 'Enable carol@example.test' }).click();
  await row.getByText('active').waitFor();
  assert.is((await carol()).active, true);
});

browserTest('the password is changed on the account page, and the new one signs in', async () => {
  await visit(page, '/account');
  const fill = async (current: string, next: string, repeat: string) => {
    await page.getByRole('textbox', { name: 'Current password' }).fill(current);
    await page.getByRole('textbox', { name: 'New password', exact: true }).fill(next);
    await page.getByRole('textbox', { name: 'Repeat new password' }).fill(repeat);
    await page.getByRole('button', { name: 'Change password' }).click();
  };
  await fill(ADMIN.password, 'brand-new-pass-1', 'brand-new-pass-2');
  await page.getByRole('alert').filter({ hasText: 'differ' }).waitFor();
  await fill(ADMIN.password, 'brand-new-pass-1', 'brand-new-pass-1');
  await page.getByRole('status').filter({ hasText: 'Password changed' }).waitFor();

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  await signIn(page, ADMIN.email, 'brand-new-pass-1');
  assert.equal(errors, [], 'no console errors');
});

test.run();
