import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, FAST_DISPATCH, pluginsDirWith, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { call, type Api } from './helpers/http.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

const LIMIT = 262_144;

let t: TestDaemon;
let admin: Api;
let subscriber: Subscriber;

const webhook = (key: string, body: string, headers: Record<string, string> = {}) =>
  call(t.url, 'POST', `/api/webhooks/${key}`, { raw: body, headers: { 'content-type': 'application/json', ...headers } });
const inbound = (body: string) => webhook('inbound', body, { 'x-api-key': 'inbound-key-1' });
const eventsOf = async (workspace: string): Promise<any[]> => (await admin.get(`/api/workspaces/${workspace}/events?limit=1000`)).body.data;
/** A payload whose JSON is exactly `bytes` long. */
const payloadOf = (bytes: number) => ({ pad: 'x'.repeat(bytes - '{"pad":""}'.length) });
/** A payload of `levels` nested objects, itself included. */
const deep = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);

test.before(async () => {
  subscriber = await startSubscriber();
  t = await startTestDaemon({ pluginsDir: await pluginsDirWith('hooks.mjs'), maxBodyBytes: 2 * 1024 * 1024, dispatch: FAST_DISPATCH });
  admin = await t.admin();
  await workspaceWith(admin, 'acme', 'crm');
  await publishExtension(admin, 'inbound');
  await publishExtension(admin, 'hooks');
  await configureExtension(admin, 'inbound', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', 'inbound-key-1'],
    ['webhook.header', 'STRING', 'x-api-key'],
    ['webhook.workspaceId', 'STRING', 'acme'],
  ]);
});
test.after(async () => {
  await t.destroy();
  await subscriber.close();
});

test('a webhook payload nested beyond the publish limit is 400 VALIDATION_ERROR and records nothing, at any depth', async () => {
  const before = (await eventsOf('acme')).length;
  for (const levels of [33, 100_000]) {
    const result = await inbound(deep(levels));
    assert.is(result.status, 400, `${levels} levels: ${result.text.slice(0, 200)}`);
    assert.is(result.body.code, 'VALIDATION_ERROR');
    // 33 levels is a valid body that the payload rule refuses; 100,000 never reach JSON.parse (the body's nesting limit).
    if (levels === 33) assert.is(result.body.meta.issues[0].path, 'payload');
  }
  assert.is((await eventsOf('acme')).length, before);
  assert.not.match(t.logs.join(''), 'Maximum call stack');
  assert.is((await inbound(deep(32))).status, 200, 'the publish limit itself is accepted');
});

test('a payload over PLATFORM_MAX_PAYLOAD is 413 PAYLOAD_TOO_LARGE and records nothing, published or through a webhook', async () => {
  const before = (await eventsOf('acme')).length;
  const published = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.big.thing', payload: payloadOf(LIMIT + 1) });
  assert.is(published.status, 413, published.text.slice(0, 200));
  assert.is(published.body.code, 'PAYLOAD_TOO_LARGE');
  const declarative = await inbound(JSON.stringify(payloadOf(LIMIT + 1)));
  assert.is(declarative.status, 413, declarative.text.slice(0, 200));
  assert.is(declarative.body.code, 'PAYLOAD_TOO_LARGE');
  assert.is((await eventsOf('acme')).length, before, 'nothing recorded');

  assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.big.thing', payload: payloadOf(LIMIT) })).status, 200);
  assert.is((await inbound(JSON.stringify(payloadOf(LIMIT)))).status, 200);
  assert.is((await eventsOf('acme')).length, before + 2, 'exactly at the limit is accepted');
});

test('PLATFORM_MAX_PAYLOAD sets the limit', async () => {
  const small = await startTestDaemon({ maxPayloadBytes: 2048 });
  try {
    const smallAdmin = await small.admin();
    await workspaceWith(smallAdmin, 'acme', 'crm');
    const publish = (bytes: number) => smallAdmin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.a', payload: payloadOf(bytes) });
    assert.is((await publish(2049)).status, 413);
    assert.is((await publish(2048)).status, 200);
  } finally {
    await small.destroy();
  }
});

test('every event records publishedBy: the user, whatever actor says; listing, delivery and dead letter show it', async () => {
  const member = await createUser(t, 'mallory@example.test', { fullName: 'Mallory' });
  await admin.put(`/api/admin/workspaces/acme/members/${member.id}`);
  const sub = await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', subscriber.url);
  subscriber.answer(() => ({ status: 400 }));

  const published = await member.post('/api/workspaces/acme/events/publish', {
    eventKey: 'crm.deal.closed',
    actor: 'ceo@example.test',
    payload: { amount: 1 },
  });
  assert.is(published.status, 200);
  const eventId = published.body.meta.eventId;

  const listed = (await member.get('/api/workspaces/acme/events?eventKey=crm.deal.closed')).body.data[0];
  assert.is(listed.id, eventId);
  assert.is(listed.actor, 'ceo@example.test', 'actor stays as given');
  assert.is(listed.publishedBy, member.id);
  const shown = (await member.get(`/api/workspaces/acme/events/${eventId}`)).body.data;
  assert.equal([shown.publishedBy, shown.publisherName], [member.id, 'Mallory'], "the event's page names the publisher as they are called now");

  const [delivered] = await subscriber.waitForCount(1);
  assert.is(delivered!.json.publishedBy, member.id);
  const letter = await waitFor('the dead letter', async () => {
    const list = (await admin.get('/api/admin/dead-letters?workspaceId=acme')).body.data;
    return list.find((candidate: any) => candidate.event.id === eventId);
  });
  assert.is(letter.event.publishedBy, member.id);
  assert.is((await admin.get(`/api/admin/dead-letters/${letter.id}`)).body.data.event.publishedBy, member.id);
  assert.is((await admin.delete(`/api/workspaces/acme/subscriptions/${sub.id}`)).status, 204);
});

test('publishedBy: webhook:<key> for inbound calls, plugin:<key> for events a plugin handler publishes', async () => {
  const declarative = await inbound('{"hello":1}');
  assert.is(declarative.status, 200);
  const fromPluginWebhook = await webhook('hooks', JSON.stringify({ mode: 'publish', workspace: 'acme' }));
  assert.is(fromPluginWebhook.status, 200, fromPluginWebhook.text);
  const notification = await admin.post('/api/workspaces/acme/events/publish', {
    eventKey: 'platform.notification',
    payload: { channel: 'general', message: 'hi', sender: 'someone-else' },
  });
  assert.is(notification.status, 200);

  const events = await eventsOf('acme');
  const find = (eventKey: string) => events.find((event) => event.eventKey === eventKey);
  assert.is(find('inbound.webhook.received').publishedBy, 'webhook:inbound');
  assert.is(find('hooks.received').publishedBy, 'webhook:hooks');
  const me = (await admin.get('/api/auth/me')).body.data;
  assert.is(find('platform.notification').publishedBy, me.id);
  assert.is(find('chat.message.received').publishedBy, 'plugin:chat');
  const messages = (await admin.get('/api/workspaces/acme/chat/channels/general/messages')).body.data;
  assert.is(messages.at(-1).sender, 'someone-else');
  assert.is(messages.at(-1).publishedBy, me.id, 'the chat shows who really sent it');
});

test.run();
