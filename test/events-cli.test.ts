import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli, runCliOnTty } from './helpers/cli.js';
import { FAST_DISPATCH, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { hasValidSignature, startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api & { token: string };
let receiver: Subscriber;
let redirected: string;

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await publishExtension(admin, 'crm', '1.0.0');
  await publishExtension(admin, 'crm', '1.2.0');
  receiver = await startSubscriber();
  redirected = join(await tempDir(), 'stdout.txt');
});
test.after(async () => {
  await receiver.close();
  await t.destroy();
});

const cliEnv = () => ({ PLATFORM_URL: t.url, PLATFORM_TOKEN: admin.token, XDG_CONFIG_HOME: '/nonexistent' });
const cli = (args: string[], input?: string) => runCli(args, { input, env: cliEnv() });

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
  const unconfirmed = await cli(['extensions', 'uninstall', 'acme', 'crm']);
  assert.is(unconfirmed.code, 2);
  assert.match(unconfirmed.stderr, 'Uninstall crm from acme: without a terminal to ask on, pass --yes to confirm');
  assert.is(JSON.parse(await ok(['extensions', 'list', 'acme', '--json'])).length, 1, 'nothing was uninstalled');
  const declined = await runCliOnTty(['extensions', 'uninstall', 'acme', 'crm'], { env: cliEnv(), answers: 'n\r', shellSuffix: `> ${redirected}` });
  assert.is(declined.code, 1, 'declining exits 1');
  assert.match(declined.stdout, 'Uninstall crm from acme?', 'with stdout redirected, the question still shows on the terminal');
  assert.match(declined.stdout, 'cancelled; nothing was changed');
  assert.is(readFileSync(redirected, 'utf8'), '', 'and not in the redirected output');
  assert.is(JSON.parse(await ok(['extensions', 'list', 'acme', '--json'])).length, 1, 'nothing was uninstalled');
  await ok(['extensions', 'uninstall', 'acme', 'crm', '--yes']);
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
  const unconfirmed = await cli(['subscriptions', 'remove', 'acme', subscription.id]);
  assert.is(unconfirmed.code, 2);
  assert.match(unconfirmed.stderr, 'pass --yes to confirm');
  assert.is(JSON.parse(await ok(['subscriptions', 'list', 'acme', '--json'])).length, 1, 'nothing was removed');
  await ok(['subscriptions', 'remove', 'acme', subscription.id, '--yes']);
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
  assert.is(notObject.code, 2);
  assert.match(notObject.stderr, 'must be a JSON object');
  const arrayOnStdin = await cli(['events', 'publish', 'acme', 'demo.bad'], '[1]');
  assert.is(arrayOnStdin.code, 2);
  assert.match(arrayOnStdin.stderr, 'the payload from stdin must be a JSON object');

  const noPayload = await cli(['events', 'publish', 'acme', 'demo.empty']);
  assert.is(noPayload.code, 2, 'no payload and no terminal: nothing is published');
  assert.match(noPayload.stderr, "--payload '{}'");
  await ok(['events', 'publish', 'acme', 'demo.empty', '--payload', '{}']);
  const asked = await runCliOnTty(['events', 'publish', 'acme', 'demo.asked'], { env: cliEnv(), answers: '{"asked":true}\r', waitFor: 'Payload' });
  assert.is(asked.code, 0, asked.stdout);
  const latest = JSON.parse(await ok(['events', 'list', 'acme', '--json', '--limit', '2']));
  assert.equal(
    latest.map((e: { eventKey: string; payload: unknown }) => [e.eventKey, e.payload]),
    [
      ['demo.asked', { asked: true }],
      ['demo.empty', {}],
    ],
  );
  const keys = (events: Array<{ eventKey: string }>) => events.map((e) => e.eventKey);
  const everyOne = keys(JSON.parse(await ok(['events', 'list', 'acme', '--json', '--limit', '1000'])));
  const pageByPage = keys(JSON.parse(await ok(['events', 'list', 'acme', '--json', '--all', '--limit', '1'])));
  assert.ok(everyOne.length > 2);
  assert.equal(pageByPage, everyOne, '--all follows the cursors, one event a page');
  const typo = await cli(['events', 'list', 'nosuch']);
  assert.is(typo.code, 1);
  assert.match(typo.stderr, 'workspace nosuch not found');
});

test('events publish --idempotency-key K twice publishes once: the second run answers the first event and says so', async () => {
  const args = ['events', 'publish', 'acme', 'demo.keyed', '--payload', '{"n":1}', '--idempotency-key', 'nightly-2024-06-01'];
  const first = /published demo\.keyed to acme: event (\S+)/.exec(await ok(args))?.[1];
  assert.ok(first);
  assert.is(await ok(args), `already published demo.keyed to acme with this idempotency key: event ${first} (not published again)\n`);
  assert.equal(JSON.parse(await ok([...args, '--json'])), { eventId: first, idempotentReplay: true });
  assert.equal(JSON.parse(await ok(['events', 'list', 'acme', '--event', 'demo.keyed', '--json'])).map((e: { id: string }) => e.id), [first]);

  const otherPayload = await cli(['events', 'publish', 'acme', 'demo.keyed', '--payload', '{"n":2}', '--idempotency-key', 'nightly-2024-06-01']);
  assert.is(otherPayload.code, 1);
  assert.match(otherPayload.stderr, 'Idempotency-Key was used');
  const malformed = await cli(['events', 'publish', 'acme', 'demo.keyed', '--payload', '{}', '--idempotency-key', 'two words']);
  assert.is(malformed.code, 2);
  assert.match(malformed.stderr, "option '--idempotency-key <key>' argument 'two words' is invalid");
});

test('events publish sends a new random Idempotency-Key each run; when no answer comes, it says how to retry with it', async () => {
  const received: Array<string | undefined> = [];
  const stub = createServer((req, res) => {
    received.push(req.headers['idempotency-key'] as string | undefined);
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ code: 'SUCCESS', message: null, data: null, meta: { eventId: 'e-1' }, timestamp: new Date().toISOString() }));
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  try {
    const env = { PLATFORM_URL: `http://127.0.0.1:${(stub.address() as AddressInfo).port}`, PLATFORM_TOKEN: 'token', XDG_CONFIG_HOME: '/nonexistent' };
    for (let run = 0; run < 2; run += 1) {
      const result = await runCli(['events', 'publish', 'acme', 'demo.stub', '--payload', '{}'], { env });
      assert.is(result.code, 0, result.stderr);
    }
  } finally {
    await new Promise((resolve) => stub.close(resolve));
  }
  assert.is(received.length, 2);
  for (const key of received) assert.match(key ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.is.not(received[0], received[1]);

  const unreachable = await runCli(['events', 'publish', 'acme', 'demo.lost', '--payload', '{}'], { env: { PLATFORM_URL: 'http://127.0.0.1:1', PLATFORM_TOKEN: 'token', XDG_CONFIG_HOME: '/nonexistent' } });
  assert.is(unreachable.code, 3);
  assert.match(unreachable.stderr, /to try again without publishing it twice, add --idempotency-key [0-9a-f-]{36}\n$/);
  const chosen = await runCli(['events', 'publish', 'acme', 'demo.lost', '--payload', '{}', '--idempotency-key', "it's-mine"], {
    env: { PLATFORM_URL: 'http://127.0.0.1:1', PLATFORM_TOKEN: 'token', XDG_CONFIG_HOME: '/nonexistent' },
  });
  assert.match(chosen.stderr, "add --idempotency-key 'it'\\''s-mine'\n");
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
    assert.match(shown, 'last error: subscriber answered HTTP 500\n', 'no repeated status');
    assert.match(shown, `attempts:   4`);
    assert.match(await ok(['status']), 'dead letters: 3');
    assert.is(JSON.parse(await ok(['status', '--json'])).deadLetters, 3);

    const failedAgain = await cli(['dlq', 'replay', letters[0].id, '--wait']);
    assert.is(failedAgain.code, 1, failedAgain.stderr);
    assert.match(failedAgain.stdout, `queued ${letters[0].id} for replay\n${letters[0].id}: failed again after 4 attempts: subscriber answered HTTP 500\n`);
    assert.match(failedAgain.stderr, 'waiting for 1 replay');
    const again = JSON.parse(await ok(['dlq', 'show', letters[0].id, '--json']));
    assert.is(again.replayCount, 1, 'the dead letter came back under its id');

    failing.answer(() => ({ status: 200 }));
    const delivered = await cli(['dlq', 'replay', letters[0].id, '--wait']);
    assert.is(delivered.code, 0, delivered.stderr);
    assert.match(delivered.stdout, `${letters[0].id}: delivered`);
    const unconfirmed = await cli(['dlq', 'discard', letters[1].id]);
    assert.is(unconfirmed.code, 2);
    assert.match(unconfirmed.stderr, 'pass --yes to confirm');
    assert.match(await ok(['dlq', 'discard', letters[1].id, '--yes']), `discarded ${letters[1].id}`);
    const summary = await ok(['dlq', 'replay', '--all', '--workspace', 'acme']);
    assert.is(summary.trim(), 'queued 1 dead letter for replay');
    await waitFor('the replays delivered', () => failing.deliveredEventIds().size === 2);
    assert.equal(JSON.parse(await ok(['dlq', 'list', '--json'])), []);
    assert.is((await cli(['dlq', 'replay'])).code, 2);
    const missing = await cli(['dlq', 'show', '00000000-0000-4000-8000-000000000000']);
    assert.is(missing.code, 1);
    assert.match(missing.stderr, 'not found');
  } finally {
    await failing.close();
  }
});

test('typos never pass silently: an unknown workspace, extension, dead letter or membership is "not found" (1)', async () => {
  for (const args of [
    ['dlq', 'list', '--workspace', 'nosuch'],
    ['dlq', 'list', '--extension', 'nosuch'],
    ['dlq', 'replay', '--all', '--workspace', 'nosuch'],
    ['dlq', 'discard', '--all', '--workspace', 'nosuch', '--yes'],
    ['dlq', 'replay', '00000000-0000-4000-8000-000000000000'],
    ['dlq', 'discard', '00000000-0000-4000-8000-000000000000', '--yes'],
    ['extensions', 'list', 'nosuch'],
    ['subscriptions', 'list', 'nosuch'],
    ['events', 'publish', 'nosuch', 'a.b', '--payload', '{}'],
    ['chat', 'read', 'nosuch', 'general'],
    ['ext', 'show', 'nosuch'],
    ['ext', 'config', 'get', 'nosuch'],
    ['install', 'nosuch', 'crm'],
    ['install', 'acme', 'nosuch'],
    ['extensions', 'disable', 'acme', 'nosuch'],
    ['workspaces', 'add-member', 'nosuch', 'admin@example.test'],
    ['ext', 'yank', 'nosuch', '1.0.0', '--yes'],
    ['dlq', 'discard', '--all', '--extension', 'nosuch', '--yes'],
    ['workspaces', 'remove-member', 'acme', 'admin@example.test'],
    ['workspaces', 'remove-member', 'acme', 'nobody@example.test'],
    ['workspaces', 'remove-member', 'nosuch', 'admin@example.test'],
  ]) {
    const result = await cli(args);
    assert.is(result.code, 1, `platform ${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, 'not found', `platform ${args.join(' ')}`);
  }
});

test('dlq discard --all takes the filters of replay, asks first, and says how many went', async () => {
  const failing = await startSubscriber(() => ({ status: 500 }));
  try {
    await ok(['subscriptions', 'add', 'acme', '--event', 'crm.deal.spam', '--extension', 'crm', '--service-url', failing.url]);
    for (let i = 0; i < 2; i += 1) await ok(['events', 'publish', 'acme', 'crm.deal.spam', '--payload', `{"i":${i}}`]);
    await ok(['events', 'publish', 'acme', 'crm.deal.lost', '--payload', '{"kept":true}']);
    await waitFor('3 dead letters', async () => JSON.parse(await ok(['dlq', 'list', '--workspace', 'acme', '--json'])).length === 3);
    const unconfirmed = await cli(['dlq', 'discard', '--all', '--workspace', 'acme', '--event', 'crm.deal.spam']);
    assert.is(unconfirmed.code, 2);
    assert.match(unconfirmed.stderr, 'Discard 2 dead letters for good: without a terminal to ask on, pass --yes to confirm');
    assert.is((await cli(['dlq', 'discard', '--all', '--event', 'crm.deal.spam', 'some-id'])).code, 2, 'ids or --all');
    assert.is((await ok(['dlq', 'discard', '--all', '--workspace', 'acme', '--event', 'crm.deal.spam', '--yes'])).trim(), 'discarded 2 dead letters');
    const left = JSON.parse(await ok(['dlq', 'list', '--all', '--json']));
    assert.equal(left.map((letter: { event: { eventKey: string } }) => letter.event.eventKey), ['crm.deal.lost']);
    assert.match(await ok(['dlq', 'list', '--limit', '1']), /crm\.deal\.lost/);
  } finally {
    await failing.close();
  }
});

test('events list shows how each event\'s deliveries stand, and --deliveries lists only the events whose deliveries stand so', async () => {
  const failing = await startSubscriber(() => ({ status: 500 }));
  try {
    await workspaceWith(admin, 'summed', 'crm');
    await subscribeExternal(admin, 'summed', 'crm.deal.lost', 'crm', failing.url);
    const lost = JSON.parse(await ok(['events', 'publish', 'summed', 'crm.deal.lost', '--payload', '{}', '--json'])).eventId;
    const unheard = JSON.parse(await ok(['events', 'publish', 'summed', 'crm.note.added', '--payload', '{}', '--json'])).eventId;
    const table = await waitFor('the delivery dead', async () => {
      const text = await ok(['events', 'list', 'summed']);
      return /crm\.deal\.lost.*\s1 dead\s/.test(text) && text;
    });
    assert.match(table, /DELIVERIES/);
    assert.match(table, new RegExp(`crm\\.note\\.added.*\\sno deliveries\\s+${unheard}`));
    const failed = JSON.parse(await ok(['events', 'list', 'summed', '--deliveries', 'failed', '--json']));
    assert.equal(failed.map((event: { id: string }) => event.id), [lost]);
    assert.equal(failed[0].deliverySummary, { delivered: 0, pending: 0, dead: 1, discarded: 0 });
    assert.equal(JSON.parse(await ok(['events', 'list', 'summed', '--deliveries', 'none', '--json'])).map((event: { id: string }) => event.id), [unheard]);
    const typo = await cli(['events', 'list', 'summed', '--deliveries', 'dead']);
    assert.is(typo.code, 2, typo.stderr);
    assert.match(typo.stderr, 'failed');
  } finally {
    await failing.close();
  }
});

test.run();
