import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { closedPort } from './helpers/ports.js';
import { onDatabaseOf, TEST_BACKEND } from './helpers/postgres.js';
import { subscriberPool, type ReceivedDelivery } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api;
const subscribers = subscriberPool();

const PASSWORD = 'sw0rdf1sh-in-the-url';
const BASIC_TOKEN = Buffer.from(`hookuser:${PASSWORD}`).toString('base64');

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
});
test.after(async () => {
  await subscribers.closeAll();
  await t.destroy();
});

async function publish(workspace: string): Promise<string> {
  const published = await admin.post(`/api/workspaces/${workspace}/events/publish`, { eventKey: 'crm.deal.closed', payload: { n: 1 } });
  assert.is(published.status, 200, published.text);
  return published.body.meta.eventId as string;
}

/** The event's first delivery once it is no longer PENDING, as the event's page and the listing show it (the same). */
async function finishedDelivery(workspace: string, eventId: string): Promise<any> {
  const delivery = await waitFor('the finished delivery', async () => {
    const record = (await admin.get(`/api/workspaces/${workspace}/events/${eventId}`)).body.data.deliveries[0];
    return record && record.status !== 'PENDING' && record;
  });
  const listed = (await admin.get(`/api/workspaces/${workspace}/deliveries?limit=100`)).body.data.find((record: any) => record.id === delivery.id);
  assert.equal(listed, delivery);
  return delivery;
}

/** The headers as the subscriber received them: node lowercases their names. */
const headersOf = (received: ReceivedDelivery) => ({ ...received.headers }) as Record<string, string>;

/** Everything stored: every file of the data directory, or the deliveries' tables. */
async function storedText(): Promise<string> {
  if (TEST_BACKEND === 'postgres') {
    return onDatabaseOf(t.dataDir, async (client) => {
      const texts: string[] = [];
      for (const table of ['deliveries', 'delivery_attempts', 'subscriptions']) {
        texts.push((await client.query(`SELECT coalesce(json_agg(x)::text, '') AS text FROM platform.${table} x`)).rows[0].text);
      }
      return texts.join('\n');
    });
  }
  return readdirSync(t.dataDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'latin1'))
    .join('\n');
}

test('each attempt records the request it sent: exactly the headers the subscriber received, and the answer headers', async () => {
  const receiver = await subscribers.start((_, index) => ({ status: index === 0 ? 503 : 202, headers: { 'x-receipt': `r-${index}` } }));
  await workspaceWith(admin, 'sent', 'crm');
  const subscription = await subscribeExternal(admin, 'sent', 'crm.deal.closed', 'crm', receiver.url);
  const eventId = await publish('sent');
  const delivery = await finishedDelivery('sent', eventId);
  assert.is(delivery.status, 'SUCCEEDED');
  assert.is(delivery.attempts.length, 2);
  const received = receiver.received.slice(0, 2);
  delivery.attempts.forEach((attempt: any, index: number) => {
    const sent = headersOf(received[index]!);
    assert.equal(attempt.request, { url: (subscription as any).deliveryUrl, headers: sent }, `attempt ${index + 1}`);
    assert.equal(attempt.response.headers['x-receipt'], `r-${index}`);
    assert.type(attempt.response.headers.date, 'string');
  });
  const [first] = delivery.attempts;
  for (const name of ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-length', 'host']) {
    assert.type(first.request.headers[name], 'string', name);
  }
  assert.is(first.request.headers['content-type'], 'application/json');
  assert.match(first.request.headers['user-agent'], /^platform\/\d+\.\d+\.\d+/);
  assert.is(first.request.headers['webhook-id'], delivery.id);
  assert.match(first.request.headers['webhook-signature'], /^v1,[A-Za-z0-9+/=]+$/);
  // The body is the event itself: the same bytes every attempt.
  assert.is(received[0]!.body, received[1]!.body);
  assert.is(received[0]!.json.id, eventId);
});

test('credentials in the URL are masked in the recorded request and stored nowhere in clear, echoed or not', async () => {
  const receiver = await subscribers.start((request) => ({ headers: { 'x-echo': String(request.headers.authorization) } }));
  await workspaceWith(admin, 'secret', 'crm');
  const { host } = new URL(receiver.url);
  await subscribeExternal(admin, 'secret', 'crm.deal.closed', 'crm', `http://hookuser:${PASSWORD}@${host}/`);
  const eventId = await publish('secret');
  const delivery = await finishedDelivery('secret', eventId);
  assert.is(receiver.received[0]!.headers.authorization, `Basic ${BASIC_TOKEN}`, 'the subscriber got the credentials');
  const [attempt] = delivery.attempts;
  assert.is(attempt.request.url, `http://****@${host}/events`);
  assert.is(attempt.request.headers.authorization, 'Basic ****');
  assert.equal(attempt.request.headers, { ...headersOf(receiver.received[0]!), authorization: 'Basic ****' });
  assert.is(attempt.response.headers['x-echo'], 'Basic ****');
  // Records reach the disk a moment after the delivery ends.
  const stored = await waitFor('the stored attempt', async () => {
    const text = await storedText();
    return text.includes('Basic ****') && text;
  });
  for (const secret of [PASSWORD, BASIC_TOKEN]) assert.not.ok(stored.includes(secret), `${secret} stored in clear`);
});

test('answer headers are kept bounded: each value cut at 512 characters, 2 KiB in all', async () => {
  const many = Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`x-header-${String(index).padStart(2, '0')}`, 'v'.repeat(100)]));
  const receiver = await subscribers.start(() => ({ headers: { 'x-long': 'l'.repeat(4_000), ...many } }));
  await workspaceWith(admin, 'bounded', 'crm');
  await subscribeExternal(admin, 'bounded', 'crm.deal.closed', 'crm', receiver.url);
  const delivery = await finishedDelivery('bounded', await publish('bounded'));
  const { headers } = delivery.attempts[0].response;
  assert.is(headers['x-long'], `${'l'.repeat(512)}…`);
  assert.is(headers['x-header-00'], 'v'.repeat(100));
  assert.is(headers['x-header-39'], undefined, 'headers past 2 KiB are left out');
  const bytes = Object.entries(headers as Record<string, string>).reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value), 0);
  assert.ok(bytes <= 2048, `${bytes} bytes of headers`);
});

test('an attempt that sent no request (the connection was refused) records none', async () => {
  await workspaceWith(admin, 'refused', 'crm');
  await subscribeExternal(admin, 'refused', 'crm.deal.closed', 'crm', `http://127.0.0.1:${await closedPort()}`);
  const delivery = await finishedDelivery('refused', await publish('refused'));
  assert.is(delivery.status, 'DEAD');
  for (const attempt of delivery.attempts) {
    assert.match(attempt.error, /network error/);
    assert.is(attempt.request, undefined);
    assert.is(attempt.response, undefined);
  }
});

test('an in-process delivery (the built-in chat) sends no HTTP request: its attempts record none', async () => {
  await workspaceWith(admin, 'inproc', 'crm');
  const published = await admin.post('/api/workspaces/inproc/events/publish', { eventKey: 'platform.notification', payload: { channel: 'deals', message: 'hi' } });
  assert.is(published.status, 200, published.text);
  const delivery = await finishedDelivery('inproc', published.body.meta.eventId);
  assert.equal([delivery.kind, delivery.status], ['IN_PROCESS', 'SUCCEEDED']);
  assert.is(delivery.attempts.length, 1);
  assert.equal(Object.keys(delivery.attempts[0]).sort(), ['durationMs', 'number', 'outcome', 'startedAt']);
});

test.run();
