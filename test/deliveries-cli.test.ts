import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli } from './helpers/cli.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { hasValidSignature, startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api & { token: string };
let receiver: Subscriber;

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  receiver = await startSubscriber((_, index) => ({ status: index === 0 ? 500 : 200 }));
});
test.after(async () => {
  await receiver.close();
  await t.destroy();
});

const cli = (args: string[]) => runCli(args, { env: { PLATFORM_URL: t.url, PLATFORM_TOKEN: admin.token, XDG_CONFIG_HOME: '/nonexistent' } });

async function ok(args: string[]): Promise<string> {
  const result = await cli(args);
  assert.is(result.code, 0, `platform ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

test('events show prints the event and a timeline of attempts; deliveries list filters and follows cursors with --all', async () => {
  await workspaceWith(admin, 'acme', 'crm');
  const { id } = await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', receiver.url);
  const eventIds: string[] = [];
  for (let n = 0; n < 3; n += 1) {
    eventIds.push((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed', payload: { n } })).body.meta.eventId);
  }
  await waitFor('every delivery done', async () => {
    const pending = (await admin.get('/api/workspaces/acme/deliveries?status=PENDING')).body.data;
    return pending.length === 0;
  });
  const shown = await ok(['events', 'show', 'acme', eventIds[0]!]);
  assert.match(shown, `event ${eventIds[0]}: crm.deal.closed`);
  assert.match(shown, /attempt 1 RETRY HTTP 500 in \d+ ms: subscriber answered HTTP 500/);
  assert.match(shown, /attempt 2 SUCCESS HTTP 200/);
  assert.match(shown, ': SUCCEEDED');
  assert.not.match(shown, 'webhook-signature', 'headers only with --verbose');

  // --verbose: each attempt's request headers as the subscriber received them, and the answer.
  const verbose = await ok(['events', 'show', 'acme', eventIds[0]!, '--verbose']);
  const requests = receiver.received.filter((request) => request.json.id === eventIds[0]);
  assert.is(requests.length, 2);
  assert.match(verbose, `request: POST ${receiver.url}/events`);
  for (const request of requests) {
    for (const name of ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      assert.match(verbose, `\n        ${name}: ${request.headers[name]}\n`);
    }
  }
  assert.match(verbose, /attempt 1 RETRY HTTP 500 [^\n]*\n(?:.*\n)*?      answer: HTTP 500\n/);
  assert.match(verbose, /      answer: HTTP 200\n        [a-z-]+: /);
  assert.match(verbose, '      answer body (first 2 KiB):\n        {}\n');

  const firstPage = await ok(['deliveries', 'list', 'acme', '--limit', '2']);
  assert.match(firstPage, '(more: --all to list every page)');
  const all = JSON.parse(await ok(['deliveries', 'list', 'acme', '--limit', '2', '--all', '--json']));
  assert.equal(all.map((d: any) => d.eventId), [...eventIds].reverse());
  const filtered = JSON.parse(await ok(['deliveries', 'list', 'acme', '--subscription', id, '--status', 'SUCCEEDED', '--json']));
  assert.is(filtered.length, 3);
  const refused = await cli(['deliveries', 'list', 'acme', '--status', 'LOST']);
  assert.is.not(refused.code, 0);
  assert.match(refused.stderr, 'status');
});

test('subscriptions disable, enable, rotate-secret and test', async () => {
  const { id, signingSecret: old } = await subscribeExternal(admin, 'acme', 'crm.deal.lost', 'crm', receiver.url);
  assert.match(await ok(['subscriptions', 'disable', 'acme', id]), `disabled subscription ${id}`);
  assert.is(((await admin.get('/api/workspaces/acme/subscriptions')).body.data as any[]).find((s) => s.id === id).enabled, false);
  assert.match(await ok(['subscriptions', 'enable', 'acme', id]), `enabled subscription ${id}`);
  const { signingSecret } = JSON.parse(await ok(['subscriptions', 'rotate-secret', 'acme', id, '--json']));
  assert.match(signingSecret, /^whsec_/);
  const before = receiver.received.length;
  const { deliveryId } = JSON.parse(await ok(['subscriptions', 'test', 'acme', id, '--payload', '{"ping":1}', '--json']));
  const received = await waitFor('the test delivery', () => receiver.received.find((d) => d.headers['webhook-id'] === deliveryId));
  assert.ok(receiver.received.length > before);
  assert.equal(received.json.payload, { ping: 1 });
  assert.ok(hasValidSignature(received, signingSecret) && hasValidSignature(received, old));
});

test('deliveries redeliver prints the new delivery id; --wait follows its attempts and exits non-zero when it is dead', async () => {
  const flaky = await startSubscriber();
  try {
    await workspaceWith(admin, 'again', 'crm');
    await subscribeExternal(admin, 'again', 'crm.deal.closed', 'crm', flaky.url);
    const eventId = (await admin.post('/api/workspaces/again/events/publish', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
    const [original] = await waitFor('the first delivery', async () => {
      const deliveries = (await admin.get(`/api/workspaces/again/events/${eventId}`)).body.data.deliveries;
      return deliveries[0]?.status === 'SUCCEEDED' && deliveries;
    });

    const queued = (await ok(['deliveries', 'redeliver', 'again', original.id])).trim();
    assert.match(queued, /^msg_[0-9a-f]{32}$/);
    await waitFor('the redelivery received', () => flaky.received.some((request) => request.headers['webhook-id'] === queued));

    flaky.answer((_request, index) => ({ status: index === 2 ? 503 : 200 }));
    const followed = await ok(['deliveries', 'redeliver', 'again', original.id, '--wait']);
    const [id, ...rest] = followed.trim().split('\n');
    assert.match(id!, /^msg_[0-9a-f]{32}$/);
    assert.match(rest.join('\n'), /attempt 1 RETRY HTTP 503[^]*attempt 2 SUCCESS HTTP 200/);
    assert.is(rest.at(-1), `succeeded (redelivery of ${original.id})`);
    assert.match(await ok(['events', 'show', 'again', eventId]), `redelivery of ${original.id}`);

    flaky.answer(() => ({ status: 410 }));
    const dead = await cli(['deliveries', 'redeliver', 'again', original.id, '--wait']);
    assert.is.not(dead.code, 0);
    assert.match(dead.stdout, /attempt 1 FAILED HTTP 410/);
    assert.match(dead.stderr, 'dead letter');

    const unknown = await cli(['deliveries', 'redeliver', 'again', 'msg_00000000000000000000000000000000']);
    assert.is.not(unknown.code, 0);
    assert.match(unknown.stderr, 'not found');
  } finally {
    await flaky.close();
  }
});

test.run();
