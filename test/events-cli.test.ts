import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli } from './helpers/cli.js';
import { FAST_DISPATCH, publishExtension } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { hasValidSignature, startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api & { token: string };
let receiver: Subscriber;

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'crm', '1.0.0');
  await publishExtension(admin, 'crm', '1.2.0');
  receiver = await startSubscriber();
});
test.after(async () => {
  await receiver.close();
  await t.destroy();
});

const cli = (args: string[], input?: string) =>
  runCli(args, { input, env: { PLATFORM_URL: t.url, PLATFORM_TOKEN: admin.token, XDG_CONFIG_HOME: '/nonexistent' } });

async function ok(args: string[], input?: string): Promise<string> {
  const result = await cli(args, input);
  assert.is(result.code, 0, `platform ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

test('workspaces create, list and membership by e-mail', async () => {
  assert.match(await ok(['workspaces', 'create', 'acme', '--name', 'Acme Inc']), 'created workspace acme (Acme Inc)');
  const list = JSON.parse(await ok(['workspaces', 'list', '--json']));
  assert.equal(list.map((w: { id: string }) => w.id), ['acme']);
  assert.match(await ok(['workspaces', 'list']), /acme\s+Acme Inc\s+0/);
  const user = await createUser(t, 'member@example.test');
  assert.match(await ok(['workspaces', 'add-member', 'acme', 'member@example.test']), 'added member@example.test to acme');
  assert.equal((await admin.get('/api/workspaces/acme')).body.data.members, [user.id]);
  await ok(['workspaces', 'remove-member', 'acme', user.id]);
  assert.equal((await admin.get('/api/workspaces/acme')).body.data.members, []);
});

test('install KEY@VERSION, then list, disable, enable, upgrade and uninstall', async () => {
  assert.match(await ok(['install', 'acme', 'crm@1.0.0']), 'installed crm@1.0.0 in acme');
  assert.match(await ok(['extensions', 'list', 'acme']), /crm\s+1\.0\.0\s+yes/);
  await ok(['extensions', 'disable', 'acme', 'crm']);
  assert.is(JSON.parse(await ok(['extensions', 'list', 'acme', '--json']))[0].enabled, false);
  await ok(['extensions', 'enable', 'acme', 'crm']);
  assert.match(await ok(['extensions', 'upgrade', 'acme', 'crm']), 'crm in acme is now at 1.2.0');
  const again = await cli(['install', 'acme', 'crm']);
  assert.is(again.code, 1);
  assert.match(again.stderr, 'already installed');
  assert.is((await cli(['install', 'acme', 'crm@'])).code, 2);
  await ok(['extensions', 'uninstall', 'acme', 'crm']);
  assert.equal(JSON.parse(await ok(['extensions', 'list', 'acme', '--json'])), []);
  await ok(['install', 'acme', 'crm']);
});

test('subscriptions add prints the secret once; list never shows it; remove deletes', async () => {
  const output = await ok(['subscriptions', 'add', 'acme', '--event', 'crm.deal.closed', '--extension', 'crm', '--service-url', receiver.url]);
  const secret = /signing secret .*: (whsec_\S+)/.exec(output)?.[1];
  assert.ok(secret, output);
  const listed = await ok(['subscriptions', 'list', 'acme']);
  assert.match(listed, /crm\.deal\.closed\s+crm\s+EXTERNAL_SERVICE/);
  assert.not.match(listed, 'whsec_');
  assert.is((await cli(['subscriptions', 'add', 'acme', '--event', 'a.b', '--extension', 'crm'])).code, 2, 'needs --service-url or --in-process');

  assert.match(await ok(['events', 'publish', 'acme', 'crm.deal.closed', '--payload', '{"deal":"D-9"}']), /published crm\.deal\.closed to acme: event \S+/);
  const [delivery] = await receiver.waitForCount(1);
  assert.equal(delivery!.json.payload, { deal: 'D-9' });
  assert.ok(hasValidSignature(delivery!, secret!));

  const [subscription] = JSON.parse(await ok(['subscriptions', 'list', 'acme', '--json']));
  await ok(['subscriptions', 'remove', 'acme', subscription.id]);
  assert.equal(JSON.parse(await ok(['subscriptions', 'list', 'acme', '--json'])), []);
});

test('events publish takes the payload from --payload, --payload-file or stdin; events list reads them', async () => {
  const file = join(await tempDir(), 'payload.json');
  writeFileSync(file, JSON.stringify({ source: 'file' }));
  await ok(['events', 'publish', 'acme', 'demo.flag', '--payload', '{"source":"flag"}', '--actor', 'ci-bot']);
  await ok(['events', 'publish', 'acme', 'demo.file', '--payload-file', file, '--schema-version', '3']);
  const { eventId } = JSON.parse(await ok(['events', 'publish', 'acme', 'demo.stdin', '--json'], '{"source":"stdin"}\n'));
  const events = JSON.parse(await ok(['events', 'list', 'acme', '--json', '--limit', '3']));
  assert.equal(
    events.map((e: { eventKey: string; payload: unknown; actor: string; schemaVersion: string | null }) => [e.eventKey, e.payload, e.actor, e.schemaVersion]),
    [
      ['demo.stdin', { source: 'stdin' }, 'admin@example.test', null],
      ['demo.file', { source: 'file' }, 'admin@example.test', '3'],
      ['demo.flag', { source: 'flag' }, 'ci-bot', null],
    ],
  );
  assert.is(events[0].id, eventId);
  assert.match(await ok(['events', 'list', 'acme', '--event', 'demo.file']), /demo\.file\s+admin@example\.test/);
  const adminId = events[2].publishedBy;
  assert.match(adminId, /^[0-9a-f-]{36}$/);
  assert.match(await ok(['events', 'list', 'acme', '--event', 'demo.flag']), new RegExp(`demo\\.flag\\s+ci-bot\\s+${adminId}`), 'who really published');

  const badJson = await cli(['events', 'publish', 'acme', 'demo.bad', '--payload', '{nope']);
  assert.is(badJson.code, 2);
  assert.match(badJson.stderr, 'not valid JSON');
  const notObject = await cli(['events', 'publish', 'acme', 'demo.bad', '--payload', '[1]']);
  assert.is(notObject.code, 1);
  assert.match(notObject.stderr, 'payload');
});

test('chat read shows a channel oldest first', async () => {
  for (const message of ['first', 'second']) {
    await ok(['events', 'publish', 'acme', 'platform.notification', '--payload', JSON.stringify({ channel: 'general', message, sender: 'ops' })]);
  }
  const output = await ok(['chat', 'read', 'acme', 'general']);
  assert.match(output, /ops: first\n.*ops: second/);
  assert.match(await ok(['chat', 'read', 'acme', 'empty-channel']), '(no messages in empty-channel)');
});

test('dlq list, show, replay (ids and --all with a summary line), discard; status', async () => {
  const failing = await startSubscriber(() => ({ status: 500 }));
  try {
    await ok(['subscriptions', 'add', 'acme', '--event', 'crm.deal.lost', '--extension', 'crm', '--service-url', failing.url]);
    for (let i = 0; i < 3; i += 1) await ok(['events', 'publish', 'acme', 'crm.deal.lost', '--payload', `{"i":${i}}`]);
    const letters = await waitFor('3 dead letters', async () => {
      const list = JSON.parse(await ok(['dlq', 'list', '--workspace', 'acme', '--json']));
      return list.length === 3 && list;
    });
    assert.match(await ok(['dlq', 'list', '--event', 'crm.deal.lost']), /acme\s+crm\.deal\.lost\s+crm\s+4\s+subscriber answered HTTP 500/);
    const shown = await ok(['dlq', 'show', letters[0].id]);
    assert.match(shown, 'last error: subscriber answered HTTP 500 (HTTP 500)');
    assert.match(shown, `attempts:   4`);
    assert.match(await ok(['status']), 'dead letters: 3');
    assert.is(JSON.parse(await ok(['status', '--json'])).deadLetters, 3);

    failing.answer(() => ({ status: 200 }));
    assert.match(await ok(['dlq', 'replay', letters[0].id]), `replaying ${letters[0].id}`);
    assert.match(await ok(['dlq', 'discard', letters[1].id]), `discarded ${letters[1].id}`);
    const summary = await ok(['dlq', 'replay', '--all', '--workspace', 'acme']);
    assert.is(summary.trim(), 'replayed 1 dead letter');
    await waitFor('the replays delivered', () => failing.deliveredEventIds().size === 2);
    assert.equal(JSON.parse(await ok(['dlq', 'list', '--json'])), []);
    assert.is((await cli(['dlq', 'replay'])).code, 2);
    const missing = await cli(['dlq', 'show', '00000000-0000-4000-8000-000000000000']);
    assert.is(missing.code, 1);
  } finally {
    await failing.close();
  }
});

test.run();
