import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli } from './helpers/cli.js';
import { createWorkspace, install, publishExtension } from './helpers/fixtures.js';
import { call } from './helpers/http.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

/** The plugin example of docs/plugins.md, exactly as documented. */
function documentedExample(): string {
  const doc = readFileSync(fileURLToPath(new URL('../docs/plugins.md', import.meta.url)), 'utf8');
  const block = /```js\n(\/\/ plugins\/deal-desk\.mjs\n[\s\S]*?)```/.exec(doc)?.[1];
  assert.ok(block, 'docs/plugins.md has the deal-desk example');
  return block!;
}

async function pluginsWith(files: Record<string, string>): Promise<string> {
  const dir = join(await tempDir(), 'plugins');
  mkdirSync(dir);
  for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), source);
  return dir;
}

async function startFailure(files: Record<string, string>): Promise<string> {
  const pluginsDir = await pluginsWith(files);
  try {
    const daemon: TestDaemon = await startTestDaemon({ pluginsDir });
    await daemon.destroy();
  } catch (error) {
    return (error as Error).message;
  }
  assert.unreachable('the daemon started with a broken plugin');
  return '';
}

test('the documented example plugin works as the documentation says', async () => {
  const t = await startTestDaemon({ pluginsDir: await pluginsWith({ 'deal-desk.mjs': documentedExample() }) });
  try {
    const admin = await t.admin();
    await publishExtension(admin, 'deal-desk');
    await createWorkspace(admin, 'acme');
    await install(admin, 'acme', 'deal-desk');
    const subscription = await admin.post('/api/workspaces/acme/subscriptions', {
      eventKey: 'crm.deal.closed',
      extensionKey: 'deal-desk',
      kind: 'IN_PROCESS',
    });
    assert.is(subscription.status, 201);

    const unconfigured = await call(t.url, 'POST', '/api/webhooks/deal-desk', { json: { dealId: 'D-0' } });
    assert.is(unconfigured.status, 500, 'not configured yet');
    assert.is(unconfigured.body.code, 'WEBHOOK_FAILED');

    await admin.put('/api/admin/marketplace/extensions/deal-desk/config', {
      fields: [
        { name: 'apiKey', type: 'SECRET', value: 'sales-tool-key' },
        { name: 'workspaceId', type: 'STRING', value: 'acme' },
      ],
    });
    const wrongKey = await call(t.url, 'POST', '/api/webhooks/deal-desk', { json: { dealId: 'D-0' }, headers: { 'x-api-key': 'guess' } });
    assert.is(wrongKey.status, 401);
    assert.is(wrongKey.body.message, 'invalid API key');

    const accepted = await call(t.url, 'POST', '/api/webhooks/deal-desk', {
      json: { dealId: 'D-17', amount: 1200 },
      headers: { 'x-api-key': 'sales-tool-key' },
    });
    assert.is(accepted.status, 200, accepted.text);
    const messages = await waitFor('the chat message', async () => {
      const list = (await admin.get('/api/workspaces/acme/chat/channels/deals/messages')).body.data;
      return list.length > 0 && list;
    });
    assert.equal([messages[0].message, messages[0].sender], ['Deal D-17 closed: 1200', 'deal-desk']);
    // The chat plugin announces the message right after posting it.
    const events = await waitFor('chat.message.received', async () => {
      const keys = (await admin.get('/api/workspaces/acme/events')).body.data.map((e: { eventKey: string }) => e.eventKey);
      return keys.length === 3 && keys;
    });
    assert.equal(events, ['chat.message.received', 'platform.notification', 'crm.deal.closed']);
    assert.is(accepted.body.data.eventId, (await admin.get('/api/workspaces/acme/events?eventKey=crm.deal.closed')).body.data[0].id);
  } finally {
    await t.destroy();
  }
});

test('a plugin file that fails to load stops the start, naming the file', async () => {
  const syntax = await startFailure({ 'broken.mjs': 'export default {' });
  assert.match(syntax, /plugin \S+broken\.mjs failed to load/);
  const throwing = await startFailure({ 'throws.js': "throw new Error('boom at import');" });
  assert.match(throwing, /plugin \S+throws\.js failed to load: boom at import/);
});

test('a default export that is not a plugin stops the start with the reason', async () => {
  const cases: Array<[string, string]> = [
    ['export default 42;', 'the default export must be an object'],
    ["export default { extensionKey: 'Bad Key' };", 'extensionKey must be a lowercase extension key'],
    ["export default { extensionKey: 'ok-key', events: { 'a.b': {} } };", 'events["a.b"].handle must be a function'],
    ["export default { extensionKey: 'ok-key', events: { 'a.b': { async: 'yes', handle() {} } } };", 'events["a.b"].async must be a boolean'],
    ["export default { extensionKey: 'ok-key', webhook: 'nope' };", 'webhook must be a function'],
  ];
  for (const [source, reason] of cases) {
    const message = await startFailure({ 'shape.mjs': source });
    assert.match(message, /plugin \S+shape\.mjs is not a valid plugin/);
    assert.match(message, reason);
  }
});

test('two plugins for one extension, or one for the built-in chat, stop the start', async () => {
  const plugin = "export default { extensionKey: 'twin' };";
  assert.match(await startFailure({ 'a.mjs': plugin, 'b.mjs': plugin }), 'extension twin already has a plugin');
  assert.match(await startFailure({ 'chat.mjs': "export default { extensionKey: 'chat' };" }), 'extension chat already has a plugin');
});

test('platform serve exits 1 naming a broken plugin', async () => {
  const dir = await tempDir();
  const plugins = await pluginsWith({ 'bad.mjs': 'export default {' });
  const result = await runCli(['serve', '--port', '0', '--data-dir', dir, '--plugins-dir', plugins]);
  assert.is(result.code, 1);
  assert.match(result.stderr, `plugin ${join(plugins, 'bad.mjs')} failed to load`);
});

test.run();
