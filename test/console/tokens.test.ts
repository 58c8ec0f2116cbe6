import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createWorkspace } from '../helpers/fixtures.js';
import { api, type Api } from '../helpers/http.js';
import { assertAccessible, browserTest, closeAll, launchBrowser, openPage, screenshots, signIn, visit } from './browser.js';

// Personal API tokens in the console: a member makes one on the account page, uses it, revokes it; an ADMIN revokes anyone's.
const MEMBER = { email: 'member@example.test', password: 'member-password-1' };

let t: TestDaemon;
let admin: Api;
let member: Api & { id: string };
let browser: Browser;
let page: Page;
let adminPage: Page;
let errors: string[];
let adminErrors: string[];
/** Everything the member's page wrote to the browser's console, of any level. */
const consoleText: string[] = [];
let token: string;

browserTest.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  for (const id of ['acme', 'other']) await createWorkspace(admin, id);
  member = await createUser(t, MEMBER.email, { fullName: 'Mia Member', password: MEMBER.password });
  for (const id of ['acme', 'other']) {
    const joined = await admin.put(`/api/admin/workspaces/${id}/members/${member.id}`);
    assert.is(joined.status, 200, joined.text);
  }
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser, t.url));
  page.on('console', (message) => consoleText.push(message.text()));
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
  await signIn(page, MEMBER.email, MEMBER.password);
  ({ page: adminPage, errors: adminErrors } = await openPage(browser, t.url));
  await signIn(adminPage, 'admin@example.test', 'admin-password-1');
});
browserTest.after(() => closeAll(browser, t));

const tokenRow = (on: Page, name: string) => on.getByRole('row').filter({ has: on.getByRole('cell', { name, exact: true }) });
const bearer = (secret: string) => api(t.url, secret);

browserTest('a token is created through the form, shown once in a read-only field, and copied', async () => {
  await visit(page, '/account');
  const form = page.getByRole('form', { name: 'Create a token' });
  await form.getByRole('textbox', { name: 'Name' }).fill('deploy');
  const scopes = form.getByRole('group', { name: 'Scopes (at least one)' });
  assert.is(await scopes.getByRole('checkbox').count(), 8, 'the eight scopes');
  assert.match(
    (await scopes.getByRole('checkbox', { name: 'events:publish' }).getAttribute('aria-describedby')) ?? '',
    'scope-events-publish-help',
    'each scope is explained',
  );

  // No scope: the console says so before asking the daemon.
  await form.getByRole('button', { name: 'Create token' }).click();
  await form.getByRole('alert').filter({ hasText: 'Choose at least one scope' }).waitFor();

  await scopes.getByRole('checkbox', { name: 'events:publish' }).check();
  await scopes.getByRole('checkbox', { name: 'events:read' }).check();
  const workspaces = form.getByRole('group', { name: 'Workspaces' });
  assert.is(await workspaces.getByRole('checkbox').count(), 2, 'the workspaces the member may use');
  await workspaces.getByRole('checkbox', { name: /acme/ }).check();
  const days = form.getByRole('spinbutton', { name: /Expires in/ });
  assert.is(await days.inputValue(), '90', 'ninety days unless told');
  await days.fill('30');
  await form.getByRole('button', { name: 'Create token' }).click();

  const field = page.getByRole('textbox', { name: 'Token “deploy”' });
  await field.waitFor();
  token = await field.inputValue();
  assert.match(token, /^plt_[A-Za-z0-9_-]{43}$/);
  assert.ok(await field.evaluate((input) => (input as { readOnly: boolean }).readOnly), 'read-only');
  assert.ok(await field.evaluate((input) => input === input.ownerDocument.activeElement), 'focus is on the token');
  assert.ok(await page.getByText('it is shown only this once').isVisible());
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
  assert.is(await page.evaluate('navigator.clipboard.readText()'), token, 'the clipboard holds the token');
  assert.is(await form.getByRole('textbox', { name: 'Name' }).inputValue(), '', 'the form is cleared for the next one');

  const row = tokenRow(page, 'deploy');
  await row.waitFor();
  assert.is(await row.getByRole('cell', { name: 'events:publish, events:read' }).count(), 1, 'its scopes');
  assert.is(await row.getByRole('cell', { name: 'acme', exact: true }).count(), 1, 'its workspace');
  assert.is(await row.getByRole('cell', { name: 'never', exact: true }).count(), 1, 'never used yet');
  await assertAccessible(page, 'account page with a new token');
});

browserTest('the token works within its scopes and workspace', async () => {
  const script = bearer(token);
  const published = await script.post('/api/workspaces/acme/events/publish', { eventKey: 'deploy.finished', payload: { release: '1.4.0' } });
  assert.is(published.status, 200, published.text);
  const events = await admin.get('/api/workspaces/acme/events');
  assert.is(events.body.data[0].publishedBy, member.id, 'published as the member');

  const outsideScopes = await script.get('/api/auth/tokens');
  assert.is(outsideScopes.status, 403, outsideScopes.text);
  assert.is(outsideScopes.body.meta.requiredScope, 'tokens:write');
  assert.is((await script.post('/api/workspaces/other/events/publish', { eventKey: 'deploy.finished' })).status, 403, 'another workspace');
});

browserTest('after a reload the token is nowhere: not in the page, the address or storage; never logged', async () => {
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
  const row = tokenRow(page, 'deploy');
  await row.waitFor();
  assert.is(await row.getByRole('cell', { name: 'never', exact: true }).count(), 0, 'its last use is shown');
  assert.is(await page.getByRole('textbox', { name: /^Token/ }).count(), 0, 'no token field');

  const html = await page.content();
  const inputs = await page.locator('input').evaluateAll((all) => all.map((input) => (input as { value: string }).value));
  const storage = await page.evaluate('JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])');
  for (const [where, text] of [['page', html], ['inputs', inputs.join('\n')], ['address', page.url()], ['storage', String(storage)]]) {
    assert.not.ok(text!.includes(token), `not in the ${where}`);
  }
  assert.not.ok(consoleText.join('\n').includes(token), "not in the browser's console");
  assert.not.ok(t.logs.join('').includes(token), "not in the daemon's log");
});

browserTest('revoking asks for confirmation, removes the token from the list, and the API refuses it', async () => {
  const row = tokenRow(page, 'deploy');
  await row.getByRole('button', { name: 'Revoke the token deploy' }).click();
  const dialog = page.getByRole('dialog', { name: 'Revoke the token “deploy”?' });
  await dialog.waitFor();
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.is((await bearer(token).get('/api/auth/me')).status, 200, 'Cancel keeps it');

  await row.getByRole('button', { name: 'Revoke the token deploy' }).click();
  await assertAccessible(page, 'revoke dialog');
  await dialog.getByRole('button', { name: 'Revoke token' }).click();
  await page.getByRole('status').filter({ hasText: 'Token “deploy” revoked' }).waitFor();
  await row.waitFor({ state: 'detached' });
  assert.ok(await page.getByText('No tokens yet.').isVisible());
  const refused = await bearer(token).get('/api/auth/me');
  assert.is(refused.status, 401, refused.text);
  assert.equal(errors, [], 'no console errors');
});

browserTest("an ADMIN sees another user's token on the users page, by e-mail, and revokes it", async () => {
  const made = await member.post('/api/auth/tokens', { name: 'nightly', scopes: ['events:read'], expiresInDays: 7 });
  assert.is(made.status, 201, made.text);
  const own = await admin.post('/api/auth/tokens', { name: 'backup', scopes: ['deliveries:read'] });
  assert.is(own.status, 201, own.text);

  await visit(adminPage, '/users');
  const section = adminPage.getByRole('region', { name: 'API tokens of every user' });
  const row = tokenRow(adminPage, 'nightly');
  assert.is(await row.getByRole('cell', { name: MEMBER.email, exact: true }).count(), 1, 'whose, by e-mail');
  assert.is(await row.getByRole('cell', { name: 'events:read' }).count(), 1);
  assert.is(await row.getByRole('cell', { name: 'all', exact: true }).count(), 1, 'every workspace');
  assert.is(await tokenRow(adminPage, 'backup').getByRole('cell', { name: 'admin@example.test', exact: true }).count(), 1, "the ADMIN's own");
  assert.is(await section.getByText(member.id).count(), 0, 'no user ids');

  await row.getByRole('button', { name: `Revoke the token nightly of ${MEMBER.email}` }).click();
  const dialog = adminPage.getByRole('dialog', { name: `Revoke the token “nightly” of ${MEMBER.email}?` });
  await dialog.getByRole('button', { name: 'Revoke token' }).click();
  await row.waitFor({ state: 'detached' });
  await section.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
  assert.is((await bearer(made.body.data.token).get('/api/auth/me')).status, 401);
  assert.is((await bearer(own.body.data.token).get('/api/auth/me')).status, 200, 'the others stay');
});

browserTest('the account and users pages are accessible at 360 and 1280 px, light and dark, without console errors', async () => {
  // A token shown once is part of the account page to check.
  await visit(page, '/account');
  const form = page.getByRole('form', { name: 'Create a token' });
  await form.getByRole('textbox', { name: 'Name' }).fill('a rather long name for a token used by the nightly export to the warehouse');
  await form.getByRole('checkbox', { name: 'tokens:write' }).check();
  await form.getByRole('button', { name: 'Create token' }).click();
  await page.getByRole('textbox', { name: /^Token/ }).waitFor();
  for (const [on, path] of [[page, '/account'], [adminPage, '/users']] as const) {
    for (const scheme of ['light', 'dark'] as const) {
      await on.emulateMedia({ colorScheme: scheme });
      for (const width of [360, 1280]) {
        await on.setViewportSize({ width, height: 800 });
        await assertAccessible(on, `${path} at ${width} px, ${scheme}`);
        const overflows = await on.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth');
        assert.is(overflows, false, `${path} at ${width} px is no wider than the screen`);
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await adminPage.emulateMedia({ colorScheme: 'light' });
  await screenshots(page, 'account-tokens');
  await screenshots(adminPage, 'users-tokens');
  assert.equal(errors, [], 'no console errors (member)');
  assert.equal(adminErrors, [], 'no console errors (ADMIN)');
});

test.run();
