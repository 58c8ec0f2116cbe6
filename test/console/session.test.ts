import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { browserTest, closeAll, launchBrowser, openPage, visit } from './browser.js';
import type { Browser } from 'playwright-core';

/** What signs the console in: the session cookie alone, whoever set it; and nothing logged when there is none. */

let t: TestDaemon;
let browser: Browser;

test.before(async () => {
  t = await startTestDaemon();
});
browserTest.before(async () => {
  browser = await launchBrowser();
});
test.after(async () => {
  await closeAll(browser, t);
});

browserTest('a session cookie set outside the console signs it in; without one, the sign-in page shows and nothing is logged', async () => {
  const { page, errors } = await openPage(browser, t.url);
  await visit(page, '/');
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();

  const admin = await t.admin();
  await page.context().addCookies([{ name: 'platform_token', value: admin.token, url: t.url, httpOnly: true, sameSite: 'Lax' }]);
  // The page preloads the session while its scripts load; the console then reads that answer, asking no second time.
  const asked: string[] = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/auth/session') asked.push(request.resourceType());
  });
  await visit(page, '/');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  assert.ok(await page.getByText(ADMIN.email).first().isVisible(), 'signed in as the cookie’s user');
  assert.equal(asked, ['other'], 'one request for the session: the preload');

  await page.context().clearCookies();
  await visit(page, '/');
  await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
  assert.equal(errors, [], 'no 401 or other error logged on the way');
});

test('GET /api/auth/session answers the cookie’s user, or null, never a 401', async () => {
  const none = await t.anon.get('/api/auth/session');
  assert.equal([none.status, none.body.data], [200, null]);
  const admin = await t.admin();
  const signed = await admin.get('/api/auth/session');
  assert.is(signed.body.data.email, ADMIN.email);
  const bogus = await t.anon.get('/api/auth/session', { headers: { cookie: 'platform_token=not-a-token' } });
  assert.equal([bogus.status, bogus.body.data], [200, null]);
});

test.run();
