import type { Browser, Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { call } from '../helpers/http.js';
import { configureExtension, createWorkspace, publishExtension } from '../helpers/fixtures.js';
import { assertAccessible, browserTest, closeAll, openConsole, screenshots, visit } from './browser.js';

// The inbound webhook request log of an extension, paged by the API's cursor, with its keys masked.
const KEY = 'inbound-key-never-shown';
const ACCEPTED_CALLS = 51;
let t: TestDaemon;
let browser: Browser;
let page: Page;
let errors: string[];
let lastEventId: string;

const callWebhook = (key: string, body: Record<string, unknown>) =>
  call(t.url, 'POST', '/api/webhooks/hooks', { json: body, headers: { 'x-api-key': key } });

browserTest.before(async () => {
  t = await startTestDaemon();
  const admin = await t.admin();
  await publishExtension(admin, 'hooks', '1.0.0');
  await createWorkspace(admin, 'inbox');
  await configureExtension(admin, 'hooks', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.header', 'STRING', 'x-api-key'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
    ['webhook.secret', 'SECRET', KEY],
  ]);
  // The oldest call is refused; 51 accepted ones follow, one more than a page.
  assert.is((await callWebhook('wrong-key', { attempt: 0 })).status, 401);
  for (let n = 1; n <= ACCEPTED_CALLS; n += 1) {
    const accepted = await callWebhook(KEY, { attempt: n });
    assert.is(accepted.status, 200, accepted.text);
    lastEventId = accepted.body.meta.eventId;
  }
  ({ browser, page, errors } = await openConsole(t.url));
});
browserTest.after(() => closeAll(browser, t));

browserTest('the latest calls come first, with their outcome, event and masked headers', async () => {
  await visit(page, '/extensions/hooks/webhooks');
  assert.ok(await page.getByText(`POST ${t.url}/api/webhooks/hooks`).isVisible(), 'the address to give providers');
  const rows = page.getByRole('row').filter({ has: page.getByRole('group') });
  assert.is(await rows.count(), 50);
  const newest = rows.first();
  assert.ok(await newest.getByText('accepted').isVisible());
  assert.ok(await newest.getByText(lastEventId).isVisible());
  await newest.getByText('Headers and body').click();
  assert.match((await newest.getByRole('region', { name: 'Headers' }).textContent()) ?? '', 'x-api-key: ****');
  assert.is(await newest.getByRole('region', { name: 'Body' }).textContent(), `{"attempt":${ACCEPTED_CALLS}}`);
  await assertAccessible(page, 'webhook log');
  await screenshots(page, 'webhooks');
});

browserTest("older calls page through the API's cursor, and the key never reaches the page", async () => {
  const rows = page.getByRole('row').filter({ has: page.getByRole('group') });
  await page.getByRole('button', { name: 'Older calls' }).click();
  await page.waitForURL(/cursor=/);
  await rows.nth(2).waitFor({ state: 'detached' });
  assert.is(await rows.count(), 2);
  const oldest = rows.last();
  assert.ok(await oldest.getByText('rejected').isVisible());
  assert.match((await oldest.textContent()) ?? '', 'header x-api-key does not hold the expected key');
  assert.ok(await page.getByRole('button', { name: 'Older calls' }).isDisabled());
  assert.not.ok((await page.content()).includes(KEY));

  await page.getByRole('button', { name: 'Newer calls' }).click();
  await rows.nth(49).waitFor();
  assert.not.match(page.url(), 'cursor=');
  assert.equal(errors, [], 'no console errors');
});

test.run();
