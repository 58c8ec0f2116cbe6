import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveConfig } from '../src/daemon/config.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, pluginsDirWith, createWorkspace, install, publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { hasValidSignature, subscriberPool } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

type Call = { handler: string; eventId: string; payload?: unknown };
const calls = ((globalThis as { __recorderCalls?: Call[] }).__recorderCalls ??= []);
const callsFor = (eventId: string) => calls.filter((call) => call.eventId === eventId);

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();
const subscriber = subscribers.start;

const publish = (workspace: string, body: Record<string, unknown>, client: Api = admin) =>
  client.post(`/api/workspaces/${workspace}/events/publish`, body);

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH, pluginsDir: await pluginsDirWith('recorder.mjs') });
  admin = await t.admin();
  await publishExtension(admin, 'crm');
  await publishExtension(admin, 'recorder');
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

test('publish answers 200 with meta.eventId and records the PlatformEvent', async () => {
  await createWorkspace(admin, 'records');
  const result = await publish('records', { eventKey: 'crm.deal.closed', payload: { amount: 5 }, schemaVersion: '2' });
  assert.is(result.status, 200);
  assert.is(result.body.code, 'SUCCESS');
  assert.is(result.body.data, null);
  const eventId = result.body.meta.eventId;
  assert.match(eventId, /^[0-9a-f-]{36}$/);
  const [event] = (await admin.get('/api/workspaces/records/events')).body.data;
  assert.equal(Object.keys(event).sort(), ['actor', 'deliverySummary', 'eventKey', 'id', 'occurredAt', 'payload', 'publishedBy', 'schemaVersion', 'tenantId']);
  assert.equal(event, { ...event, id: eventId, eventKey: 'crm.deal.closed', tenantId: 'records', actor: 'admin@example.test', payload: { amount: 5 }, schemaVersion: '2' });
  assert.match(event.occurredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

test('events list: newest first, filtered by key, limited', async () => {
  await createWorkspace(admin, 'listing');
  for (const key of ['a.one', 'b.two', 'a.one', 'c.three']) await publish('listing', { eventKey: key, actor: 'script' });
  const all = (await admin.get('/api/workspaces/listing/events')).body.data;
  assert.equal(all.map((e: { eventKey: string }) => e.eventKey), ['c.three', 'a.one', 'b.two', 'a.one']);
  const only = (await admin.get('/api/workspaces/listing/events?eventKey=a.one&limit=1')).body.data;
  assert.is(only.length, 1);
  assert.is(only[0].id, all[1].id);
  assert.is(only[0].actor, 'script');
  assert.is((await admin.get('/api/workspaces/listing/events?limit=0')).status, 400);
  assert.is((await admin.get('/api/workspaces/listing/events?limit=1001')).status, 400);
});

test('invalid publishes are 400 and record nothing', async () => {
  await createWorkspace(admin, 'strict');
  const deep: Record<string, unknown> = {};
  let cursor = deep;
  for (let i = 0; i < 40; i += 1) cursor = (cursor.next = {}) as Record<string, unknown>;
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ eventKey: 'nodots' }, 'eventKey'],
    [{ eventKey: 'a..b' }, 'eventKey'],
    [{ eventKey: `a.${'b'.repeat(254)}` }, 'eventKey'],
    [{ eventKey: 'a.b', payload: [1, 2] }, 'payload'],
    [{ eventKey: 'a.b', payload: 'text' }, 'payload'],
    [{ eventKey: 'a.b', payload: deep }, 'payload'],
    [{ eventKey: 'a.b', schemaVersion: '' }, 'schemaVersion'],
    [{ eventKey: 'a.b', tenantId: 'other' }, 'tenantId'],
    [{ eventKey: 'platform.notification', payload: { message: 'no channel' } }, '/payload/channel'],
    [{ eventKey: 'platform.notification', payload: { channel: 'general', message: '   ' } }, '/payload/message'],
    [{ eventKey: 'platform.notification', payload: { channel: 'general', message: 'x', sender: 5 } }, '/payload/sender'],
  ];
  for (const [body, path] of cases) {
    const result = await publish('strict', body);
    assert.is(result.status, 400, JSON.stringify(body).slice(0, 80));
    assert.is(result.body.code, 'VALIDATION_ERROR');
    assert.ok(
      result.body.meta.issues.some((issue: { path: string }) => issue.path === path),
      `${path} in ${JSON.stringify(result.body.meta.issues)}`,
    );
  }
  assert.equal((await admin.get('/api/workspaces/strict/events')).body.data, []);
  assert.equal((await admin.get('/api/workspaces/strict/chat/channels')).body.data, []);
});

test('publish needs ADMIN or membership; unknown workspaces are 404 (for an ADMIN)', async () => {
  await createWorkspace(admin, 'members');
  const member = await createUser(t, 'publisher@example.test');
  const outsider = await createUser(t, 'stranger@example.test');
  await admin.put(`/api/admin/workspaces/members/members/${member.id}`);
  const byMember = await publish('members', { eventKey: 'a.b' }, member);
  assert.is(byMember.status, 200);
  const [event] = (await member.get('/api/workspaces/members/events')).body.data;
  assert.is(event.actor, 'publisher@example.test', 'actor defaults to the caller');
  assert.is((await publish('members', { eventKey: 'a.b' }, outsider)).status, 403);
  assert.is((await outsider.get('/api/workspaces/members/events')).status, 403);
  assert.is((await publish('ghost', { eventKey: 'a.b' })).status, 404);
  assert.is((await t.anon.post('/api/workspaces/members/events/publish', { eventKey: 'a.b' })).status, 401);
});

test('an external subscriber gets the event signed with its secret (Standard Webhooks)', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'signed', 'crm');
  const { signingSecret } = await subscribeExternal(admin, 'signed', 'crm.deal.closed', 'crm', `${receiver.url}/hooks/`);
  const { eventId } = (await publish('signed', { eventKey: 'crm.deal.closed', payload: { dealId: 'D-1', amount: 1200 } })).body.meta;
  const [delivery] = await receiver.waitForCount(1);
  assert.is(delivery!.path, '/hooks/events');
  assert.is(delivery!.headers['content-type'], 'application/json');
  assert.match(String(delivery!.headers['webhook-id']), /^msg_[0-9a-f]{32}$/);
  assert.ok(Math.abs(Number(delivery!.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
  assert.ok(hasValidSignature(delivery!, signingSecret), 'signature verifies with the subscription secret');
  assert.not.ok(hasValidSignature(delivery!, `whsec_${Buffer.alloc(32, 1).toString('base64')}`), 'and not with another');
  assert.equal(delivery!.json, {
    id: eventId,
    eventKey: 'crm.deal.closed',
    tenantId: 'signed',
    actor: 'admin@example.test',
    publishedBy: delivery!.json.publishedBy,
    payload: { dealId: 'D-1', amount: 1200 },
    schemaVersion: null,
    occurredAt: delivery!.json.occurredAt,
    workspaceId: 'signed',
  });
});

test('only subscribers of that workspace and event key get it', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'north', 'crm');
  await createWorkspace(admin, 'south');
  await install(admin, 'south', 'crm');
  await subscribeExternal(admin, 'north', 'crm.deal.closed', 'crm', `${receiver.url}/north-closed`);
  await subscribeExternal(admin, 'north', 'crm.deal.won', 'crm', `${receiver.url}/north-won`);
  await subscribeExternal(admin, 'south', 'crm.deal.closed', 'crm', `${receiver.url}/south-closed`);
  await publish('north', { eventKey: 'crm.deal.closed' });
  await publish('south', { eventKey: 'crm.product.created' });
  const last = (await publish('north', { eventKey: 'crm.deal.won' })).body.meta.eventId;
  await waitFor('the crm.deal.won delivery', () => receiver.received.some((d) => d.json?.id === last));
  assert.equal(receiver.received.map((d) => d.path).sort(), ['/north-closed/events', '/north-won/events']);
});

test('disabled or uninstalled extensions get no deliveries; enabled again, they do', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'toggle', 'crm');
  await subscribeExternal(admin, 'toggle', 'crm.deal.closed', 'crm', receiver.url);
  await admin.patch('/api/workspaces/toggle/extensions/crm', { enabled: false });
  const skipped = (await publish('toggle', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
  assert.equal((await admin.get(`/api/workspaces/toggle/events/${skipped}`)).body.data.deliveries, [], 'no delivery was created');
  await admin.patch('/api/workspaces/toggle/extensions/crm', { enabled: true });
  const delivered = (await publish('toggle', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
  await receiver.waitForCount(1);
  await admin.delete('/api/workspaces/toggle/extensions/crm');
  await publish('toggle', { eventKey: 'crm.deal.closed' });
  const control = await subscriber();
  await install(admin, 'toggle', 'recorder');
  await subscribeExternal(admin, 'toggle', 'crm.deal.closed', 'recorder', control.url);
  const after = (await publish('toggle', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
  await control.waitForCount(1);
  assert.equal(receiver.received.map((d) => d.json.id), [delivered]);
  assert.not.ok(receiver.received.some((d) => d.json.id === skipped || d.json.id === after));
});

test('in-process: a synchronous handler runs before the answer, an asynchronous one after it', async () => {
  await workspaceWith(admin, 'inproc', 'recorder');
  for (const eventKey of ['crm.deal.closed', 'crm.deal.lost']) {
    const sub = await admin.post('/api/workspaces/inproc/subscriptions', { eventKey, extensionKey: 'recorder', kind: 'IN_PROCESS' });
    assert.is(sub.status, 201);
    assert.is(sub.body.data.serviceBaseUrl, null);
  }
  const lost = (await publish('inproc', { eventKey: 'crm.deal.lost' })).body.meta.eventId;
  assert.equal(callsFor(lost), [{ handler: 'sync', eventId: lost }], 'done when publish answered');
  const closed = (await publish('inproc', { eventKey: 'crm.deal.closed', payload: { deal: 7 } })).body.meta.eventId;
  const [call] = await waitFor('the async handler', () => callsFor(closed).length > 0 && callsFor(closed));
  assert.equal(call, { handler: 'async', eventId: closed, payload: { deal: 7 } });
});

test('chat: platform.notification posts to the channel and announces chat.message.received', async () => {
  const receiver = await subscriber();
  await workspaceWith(admin, 'chatty', 'crm');
  await subscribeExternal(admin, 'chatty', 'chat.message.received', 'crm', receiver.url);
  const first = await publish('chatty', { eventKey: 'platform.notification', payload: { channel: 'deals', message: 'Deal D-1 closed', sender: 'crm' } });
  assert.is(first.status, 200);
  await publish('chatty', { eventKey: 'platform.notification', payload: { channel: 'deals', message: 'Deal D-2 closed' } });
  await publish('chatty', { eventKey: 'platform.notification', payload: { channel: 'conv-42', message: 'hi' } });

  const messages = (await admin.get('/api/workspaces/chatty/chat/channels/deals/messages')).body.data;
  assert.equal(messages.map((m: { message: string; sender: string }) => [m.message, m.sender]), [
    ['Deal D-1 closed', 'crm'],
    ['Deal D-2 closed', 'admin@example.test'],
  ]);
  assert.is(messages[0].eventId, first.body.meta.eventId);
  const channels = (await admin.get('/api/workspaces/chatty/chat/channels')).body.data;
  assert.equal(channels.map((c: { channel: string; messageCount: number }) => [c.channel, c.messageCount]), [
    ['conv-42', 1],
    ['deals', 2],
  ]);
  assert.equal((await admin.get('/api/workspaces/chatty/chat/channels/general/messages')).body.data, []);

  const announced = await receiver.waitForCount(3);
  const first3 = announced.map((d) => d.json).find((e) => e.payload.message === 'Deal D-1 closed');
  assert.is(first3.eventKey, 'chat.message.received');
  assert.is(first3.actor, 'chat');
  assert.equal(first3.payload, { ...first3.payload, channel: 'deals', sender: 'crm', messageId: messages[0].id });

  const outsider = await createUser(t, 'no-chat@example.test');
  assert.is((await outsider.get('/api/workspaces/chatty/chat/channels')).status, 403);
  assert.is((await admin.get('/api/workspaces/nowhere/chat/channels')).status, 404);
});

test('chat: a workspace keeps PLATFORM_CHAT_CHANNELS channels (another new one is 409, recording nothing) and each channel its latest messages', async () => {
  const chat = { ...resolveConfig({}, { PLATFORM_CHAT_CHANNELS: '3' }).chat, messagesPerChannel: 20 };
  assert.is(resolveConfig({}, {}).chat.messagesPerChannel, 10_000, 'the default');
  let limited = await startTestDaemon({ chat });
  try {
    let owner = await limited.admin();
    const notify = (channel: string, message: string, client = owner) =>
      client.post('/api/workspaces/small/events/publish', { eventKey: 'platform.notification', payload: { channel, message } });
    await createWorkspace(owner, 'small');
    await createWorkspace(owner, 'other');
    for (let batch = 0; batch < 5; batch += 1) {
      await Promise.all(Array.from({ length: 5 }, (_, i) => notify('general', `m${batch * 5 + i}`)));
    }
    const page = (await owner.get('/api/workspaces/small/chat/channels/general/messages?limit=1000')).body.data;
    const numbers = page.map((m: { message: string }) => Number(m.message.slice(1))).sort((a: number, b: number) => a - b);
    assert.equal(numbers, Array.from({ length: 20 }, (_, n) => n + 5), 'the oldest 5 of 25 are gone');
    assert.is((await owner.get('/api/workspaces/small/chat/channels/general/messages?limit=1001')).status, 400);

    for (const channel of ['deals', 'support']) assert.is((await notify(channel, 'hi')).status, 200);
    const eventsBefore = (await owner.get('/api/workspaces/small/events?limit=1000')).body.data.length;
    const refused = await notify('one-too-many', 'hi');
    assert.is(refused.status, 409);
    assert.is(refused.body.code, 'CONFLICT');
    assert.match(refused.body.message ?? '', 'already has 3 chat channels');
    assert.is((await owner.get('/api/workspaces/small/events?limit=1000')).body.data.length, eventsBefore, 'nothing recorded');
    assert.is((await notify('deals', 'existing channels still take messages')).status, 200);
    assert.is((await owner.post('/api/workspaces/other/events/publish', { eventKey: 'platform.notification', payload: { channel: 'x', message: 'hi' } })).status, 200);

    limited = await limited.restart();
    owner = await limited.admin();
    assert.is((await notify('one-too-many', 'hi')).status, 409, 'the limit holds after a restart');
    const channels = (await owner.get('/api/workspaces/small/chat/channels')).body.data;
    assert.equal(channels.map((c: { channel: string; messageCount: number }) => [c.channel, c.messageCount]), [['deals', 2], ['general', 20], ['support', 1]]);
  } finally {
    await limited.destroy();
  }
});

test('pending deliveries resume after a restart', async () => {
  const receiver = await subscriber(() => ({ hang: true }));
  await workspaceWith(admin, 'resume', 'crm');
  await subscribeExternal(admin, 'resume', 'crm.deal.closed', 'crm', receiver.url);
  const eventId = (await publish('resume', { eventKey: 'crm.deal.closed' })).body.meta.eventId;
  await receiver.waitForCount(1);
  assert.is((await admin.get('/api/admin/status')).body.data.inFlightDeliveries, 1);
  receiver.answer(() => ({ status: 204 }));
  t = await t.restart();
  admin = await t.admin();
  await waitFor('the redelivery', () => receiver.received.filter((d) => d.json.id === eventId).length >= 2);
  await waitFor('an empty outbox', async () => (await admin.get('/api/admin/status')).body.data.pendingDeliveries === 0);
  const ids = new Set(receiver.received.filter((d) => d.json.id === eventId).map((d) => d.headers['webhook-id']));
  assert.is(ids.size, 1, 'the same webhook-id, so the receiver can deduplicate');
});

test.run();
