import { createHmac, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { signGithub, signSlack, signStandardWebhook, signStripe } from '../src/handlers/webhooks/sign.js';
import { configureExtension, createWorkspace, FAST_DISPATCH, install, pluginsDirWith, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import { call, type Api, type HttpResult } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';

type Seen = { headers: Record<string, string>; raw: string; body: unknown; config: Record<string, unknown> };
const seen = ((globalThis as { __hookRequests?: Seen[] }).__hookRequests ??= []);

let t: TestDaemon;
let admin: Api;

const hmacHex = (secret: string | Buffer, text: string) => createHmac('sha256', secret).update(text).digest('hex');
const nowSeconds = () => Math.floor(Date.now() / 1000);

const configure = (key: string, fields: Array<[string, string, unknown]>) => configureExtension(admin, key, fields);

const post = (key: string, body: string, headers: Record<string, string> = {}) =>
  call(t.url, 'POST', `/api/webhooks/${key}`, { raw: body, headers: { 'content-type': 'application/json', ...headers } });

async function eventsOf(workspace: string): Promise<any[]> {
  return (await admin.get(`/api/workspaces/${workspace}/events`)).body.data;
}

/**
 * Changes the first letter or digit of the signature proper (after the last
 * `=` or `,` of a prefix such as `sha256=` or `v1,`): the last character of
 * base64 may carry only padding bits, so changing it may leave the bytes as
 * they were. The replacement differs ignoring case too: hex signatures are
 * compared case-insensitively.
 */
function tamper(value: string): string {
  const unpadded = value.replace(/=+$/, '');
  const start = Math.max(unpadded.lastIndexOf('='), unpadded.lastIndexOf(',')) + 1;
  const index = start + unpadded.slice(start).search(/[0-9A-Za-z]/);
  return value.slice(0, index) + (value[index]!.toLowerCase() === 'a' ? 'b' : 'a') + value.slice(index + 1);
}

function assertRejected(result: HttpResult, why: string): void {
  assert.is(result.status, 401, `${why}: ${result.text}`);
  assert.is(result.body.code, 'WEBHOOK_REJECTED', why);
}

test.before(async () => {
  t = await startTestDaemon({ pluginsDir: await pluginsDirWith('hooks.mjs'), maxBodyBytes: 4096, dispatch: { ...FAST_DISPATCH, handlerTimeoutMs: 200 } });
  admin = await t.admin();
  await createWorkspace(admin, 'inbox');
});
test.after(async () => {
  await t.destroy();
});

/**
 * One scheme through the real endpoint: a correct call becomes an event; a
 * wrong signature, a missing header and (where the scheme signs the body) a
 * body changed by one byte are 401.
 */
async function exerciseScheme(options: {
  key: string;
  fields: Array<[string, string, unknown]>;
  sign: (body: string) => Record<string, string>;
  signatureHeader: string;
  coversBody?: false;
}): Promise<void> {
  await publishExtension(admin, options.key);
  await configure(options.key, [...options.fields, ['webhook.workspaceId', 'STRING', 'inbox']]);
  // Unusual whitespace and key order: verified over the bytes as sent.
  const body = `{ "zeta" : 1,\n\t"alpha":[ 2 ,3 ] , "unicode": "h\\u00e9llo" }`;
  const headers = options.sign(body);

  const accepted = await post(options.key, body, headers);
  assert.is(accepted.status, 200, `${options.key}: ${accepted.text}`);
  const [event] = await eventsOf('inbox');
  assert.is(event.id, accepted.body.meta.eventId);
  assert.is(event.eventKey, `${options.key}.webhook.received`);
  assert.equal(event.payload, { zeta: 1, alpha: [2, 3], unicode: 'héllo' });

  const tampered = { ...headers, [options.signatureHeader]: tamper(headers[options.signatureHeader]!) };
  assertRejected(await post(options.key, body, tampered), `${options.key} wrong signature`);
  const missing = { ...headers };
  delete missing[options.signatureHeader];
  assertRejected(await post(options.key, body, missing), `${options.key} missing header`);
  const changed = await post(options.key, body.replace('"zeta" : 1', '"zeta" : 2'), headers);
  if (options.coversBody === false) assert.is(changed.status, 200, 'an API key does not cover the body');
  else assertRejected(changed, `${options.key} one byte changed`);
}

test('hmac-sha256: the configured header carries the hex HMAC of the raw body', async () => {
  const secret = 'shared-hmac-secret';
  await exerciseScheme({
    key: 'hmacer',
    fields: [['webhook.scheme', 'STRING', 'hmac-sha256'], ['webhook.secret', 'SECRET', secret], ['webhook.header', 'STRING', 'X-Signature']],
    sign: (body) => ({ 'X-Signature': `sha256=${hmacHex(secret, body)}` }),
    signatureHeader: 'X-Signature',
  });
});

test('github: x-hub-signature-256', async () => {
  const secret = "It's a Secret to Everybody";
  await exerciseScheme({
    key: 'gh',
    fields: [['webhook.scheme', 'STRING', 'github'], ['webhook.secret', 'SECRET', secret]],
    sign: (body) => ({ 'X-Hub-Signature-256': `sha256=${hmacHex(secret, body)}` }),
    signatureHeader: 'X-Hub-Signature-256',
  });
});

test('stripe: stripe-signature with a timestamp; stale calls are refused', async () => {
  const secret = 'whsec_stripe_test_secret';
  const sign = (body: string, t0 = nowSeconds()) => ({ 'Stripe-Signature': `t=${t0},v1=${hmacHex(secret, `${t0}.${body}`)}` });
  await exerciseScheme({
    key: 'payments',
    fields: [['webhook.scheme', 'STRING', 'stripe'], ['webhook.secret', 'SECRET', secret]],
    sign,
    signatureHeader: 'Stripe-Signature',
  });
  assertRejected(await post('payments', '{"a":1}', sign('{"a":1}', nowSeconds() - 301)), 'stripe stale');
});

test('slack: x-slack-signature over v0:timestamp:body; stale calls are refused', async () => {
  const secret = '8f742231b10e8888abcd99yyyzzz85a5';
  const sign = (body: string, t0 = nowSeconds()) => ({
    'X-Slack-Request-Timestamp': String(t0),
    'X-Slack-Signature': `v0=${hmacHex(secret, `v0:${t0}:${body}`)}`,
  });
  await exerciseScheme({
    key: 'slackbot',
    fields: [['webhook.scheme', 'STRING', 'slack'], ['webhook.secret', 'SECRET', secret]],
    sign,
    signatureHeader: 'X-Slack-Signature',
  });
  assertRejected(await post('slackbot', '{"a":1}', sign('{"a":1}', nowSeconds() - 301)), 'slack stale');
});

test('standard-webhooks: signed id.timestamp.body; stale refused; a repeated id is 200 and does nothing', async () => {
  const key = randomBytes(24);
  const secret = `whsec_${key.toString('base64')}`;
  let counter = 0;
  const sign = (body: string, id = `msg_${(counter += 1)}`, t0 = nowSeconds()) => ({
    'webhook-id': id,
    'webhook-timestamp': String(t0),
    'webhook-signature': `v1,${createHmac('sha256', key).update(`${id}.${t0}.${body}`).digest('base64')}`,
  });
  await exerciseScheme({
    key: 'stdhooks',
    fields: [['webhook.scheme', 'STRING', 'standard-webhooks'], ['webhook.secret', 'SECRET', secret]],
    sign: (body) => sign(body),
    signatureHeader: 'webhook-signature',
  });
  assertRejected(await post('stdhooks', '{"a":1}', sign('{"a":1}', 'msg_old', nowSeconds() - 301)), 'standard-webhooks stale');

  const before = (await eventsOf('inbox')).length;
  const headers = sign('{"once":true}', 'msg_repeat');
  assert.is((await post('stdhooks', '{"once":true}', headers)).status, 200);
  const repeat = await post('stdhooks', '{"once":true}', headers);
  assert.is(repeat.status, 200);
  assert.equal(repeat.body.meta, { duplicate: true });
  assert.is((await eventsOf('inbox')).length, before + 1, 'the repeat published nothing');
});

test('api-key: the configured header equals the secret', async () => {
  await exerciseScheme({
    key: 'keyed',
    fields: [['webhook.scheme', 'STRING', 'api-key'], ['webhook.secret', 'SECRET', 'k-123456789'], ['webhook.header', 'STRING', 'x-api-key']],
    sign: () => ({ 'X-Api-Key': 'k-123456789' }),
    signatureHeader: 'X-Api-Key',
    coversBody: false,
  });
  assertRejected(await post('keyed', '{}', { 'x-api-key': 'k-12345678' }), 'api-key one character short');
});

test('a custom webhook.eventKey is used', async () => {
  await publishExtension(admin, 'custom');
  await configure('custom', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', 'custom-key-1'],
    ['webhook.header', 'STRING', 'authorization'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
    ['webhook.eventKey', 'STRING', 'custom.order.paid'],
  ]);
  const result = await post('custom', '{"order":1}', { authorization: 'custom-key-1' });
  assert.is(result.status, 200);
  assert.is((await eventsOf('inbox'))[0].eventKey, 'custom.order.paid');
});

test('no handler is 404; a body that is not a JSON object is 400; over the limit is 413', async () => {
  assert.is((await post('nobody', '{}')).status, 404);
  assert.is((await post('../../etc', '{}')).status, 404);
  assert.is((await post('hooks', '[1,2]')).status, 400);
  assert.is((await post('hooks', '"text"')).status, 400);
  assert.is((await post('hooks', '')).status, 400);
  const notJson = await post('hooks', 'token=abc&team=xyz', { 'content-type': 'application/x-www-form-urlencoded' });
  assert.is(notJson.status, 400, 'any content type is read; the body must still be JSON');
  assert.is(notJson.body.code, 'INVALID_JSON');
  const big = await post('hooks', JSON.stringify({ pad: 'x'.repeat(5000) }));
  assert.is(big.status, 413);
});

test('a misconfigured webhook is 500 WEBHOOK_FAILED and the reason only goes to the log', async () => {
  await publishExtension(admin, 'halfdone');
  await configure('halfdone', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', 'halfdone-key'],
    ['webhook.header', 'STRING', 'x-key'],
  ]);
  const result = await post('halfdone', '{}', { 'x-key': 'halfdone-key' });
  assert.is(result.status, 500);
  assert.is(result.body.code, 'WEBHOOK_FAILED');
  assert.not.match(result.text, 'workspaceId');
  assert.ok(t.logs.some((line) => line.includes('webhook.workspaceId is not set')));
});

test('plugin handlers: raw bytes and lowercased headers; succeed 200, reject 401, throw 500 without detail, hang 500', async () => {
  const raw = '{"mode":"ok",   "b": [1,2]}';
  const ok = await post('hooks', raw, { 'X-Custom-Header': 'Value', 'X-Repeated': 'a' });
  assert.is(ok.status, 200);
  assert.equal(ok.body.data, { handled: true });
  const last = seen.at(-1)!;
  assert.is(last.raw, raw);
  assert.is(last.headers['x-custom-header'], 'Value');
  assert.not.ok('X-Custom-Header' in last.headers);

  const rejected = await post('hooks', '{"mode":"reject"}');
  assertRejected(rejected, 'plugin rejection');
  assert.is(rejected.body.message, 'no entry for you');
  assertRejected(await post('hooks', '{"mode":"late-reject"}'), 'a rejection after an await');

  const thrown = await post('hooks', '{"mode":"throw"}');
  assert.is(thrown.status, 500);
  assert.is(thrown.body.code, 'WEBHOOK_FAILED');
  assert.not.match(thrown.text, '/srv/hooks');
  assert.not.match(thrown.text, 'at ');
  assert.ok(t.logs.some((line) => line.includes('internal detail at /srv/hooks/secret.txt')), 'logged');

  const hung = await post('hooks', '{"mode":"hang"}');
  assert.is(hung.status, 500);
  assert.ok(t.logs.some((line) => line.includes('did not finish within 200 ms')));

  const published = await post('hooks', '{"mode":"publish","workspace":"inbox"}');
  assert.is(published.status, 200);
  const [event] = await eventsOf('inbox');
  assert.is(event.id, published.body.data.eventId);
  assert.is(event.actor, 'hooks');
});

test('a plugin handler wins over the declarative configuration of the same extension', async () => {
  await publishExtension(admin, 'hooks');
  await configure('hooks', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', 'unused'],
    ['webhook.header', 'STRING', 'x-key'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
  const result = await post('hooks', '{"mode":"ok"}');
  assert.is(result.status, 200, 'no api key needed: the plugin handled it');
  assert.is(seen.at(-1)!.config['webhook.secret'], 'unused', 'the plugin sees its configuration, secrets decrypted');
});

test('no cookie is needed, and one is not used', async () => {
  const token = (await t.admin()).token;
  const result = await post('nobody', '{}', { cookie: `platform_token=${token}` });
  assert.is(result.status, 404);
});

test('the body is limited while streaming (chunked, no Content-Length)', async () => {
  const result = await new Promise<number>((resolve, reject) => {
    const req = request(`${t.url}/api/webhooks/hooks`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    for (let i = 0; i < 20; i += 1) req.write('x'.repeat(500));
    req.end();
  });
  assert.is(result, 413);
});

// ---------------------------------------------------------------------------
// Provider handshakes, delivery ids, {type}

const STD_SECRET = `whsec_${Buffer.from('standard webhooks http test key!').toString('base64')}`;

function standardHeaders(id: string, body: string, names: 'webhook' | 'svix' = 'webhook'): Record<string, string> {
  const timestamp = nowSeconds();
  return {
    [`${names}-id`]: id,
    [`${names}-timestamp`]: String(timestamp),
    [`${names}-signature`]: signStandardWebhook(STD_SECRET, id, timestamp, body),
  };
}

function slackHeaders(secret: string, body: string): Record<string, string> {
  const timestamp = nowSeconds();
  return { 'x-slack-request-timestamp': String(timestamp), 'x-slack-signature': signSlack(secret, timestamp, body) };
}

async function declarative(key: string, scheme: string, secret: string, more: Array<[string, string, unknown]> = []): Promise<void> {
  await publishExtension(admin, key);
  await configure(key, [['webhook.scheme', 'STRING', scheme], ['webhook.secret', 'SECRET', secret], ['webhook.workspaceId', 'STRING', 'inbox'], ...more]);
}

test('slack: a signed url_verification is answered with its challenge as text/plain and publishes nothing', async () => {
  const secret = 'slack-handshake-secret';
  await declarative('slack-handshake', 'slack', secret);
  const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P';
  const body = JSON.stringify({ token: 'Jhj5dZrVaK7ZwHHjRyZWjbDl', challenge, type: 'url_verification' });
  const before = (await eventsOf('inbox')).length;
  // fetch, not call(): the answer is not JSON.
  const response = await fetch(`${t.url}/api/webhooks/slack-handshake`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...slackHeaders(secret, body) },
    body,
  });
  assert.is(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  assert.is(await response.text(), challenge);
  assert.is((await eventsOf('inbox')).length, before, 'the handshake is not an event');

  const forged = { ...slackHeaders('not-the-secret', body) };
  assertRejected(await post('slack-handshake', body, forged), 'an unsigned handshake');

  // Slack sends the handshake when the URL is entered, possibly before a workspace is chosen.
  await publishExtension(admin, 'slack-fresh');
  await configure('slack-fresh', [['webhook.scheme', 'STRING', 'slack'], ['webhook.secret', 'SECRET', secret]]);
  const early = await fetch(`${t.url}/api/webhooks/slack-fresh`, { method: 'POST', headers: slackHeaders(secret, body), body });
  assert.is(early.status, 200);
  assert.is(await early.text(), challenge);
});

test('standard-webhooks: the svix-id, svix-timestamp and svix-signature names are accepted too', async () => {
  await declarative('svixed', 'standard-webhooks', STD_SECRET);
  const body = '{"type":"invoice.paid"}';
  const accepted = await post('svixed', body, standardHeaders('msg_svix_1', body, 'svix'));
  assert.is(accepted.status, 200, accepted.text);
  assert.is((await eventsOf('inbox'))[0].id, accepted.body.meta.eventId);
  const forged = { ...standardHeaders('msg_svix_2', body, 'svix'), 'svix-signature': tamper(standardHeaders('msg_svix_2', body, 'svix')['svix-signature']!) };
  assertRejected(await post('svixed', body, forged), 'a wrong svix-signature');
});

test('standard-webhooks: an id counts as seen only once its event is published, so a retry after a failure is processed', async () => {
  await publishExtension(admin, 'std-retry');
  await configure('std-retry', [['webhook.scheme', 'STRING', 'standard-webhooks'], ['webhook.secret', 'SECRET', STD_SECRET]]);
  const body = '{"type":"order.created","order":7}';
  const failed = await post('std-retry', body, standardHeaders('msg_retry_after_failure', body));
  assert.is(failed.status, 500, 'no workspace configured yet');

  await configure('std-retry', [['webhook.workspaceId', 'STRING', 'inbox']]);
  const retried = await post('std-retry', body, standardHeaders('msg_retry_after_failure', body));
  assert.is(retried.status, 200, retried.text);
  assert.ok(retried.body.meta.eventId, `processed, not answered as a duplicate: ${retried.text}`);
  const again = await post('std-retry', body, standardHeaders('msg_retry_after_failure', body));
  assert.equal(again.body.meta, { duplicate: true });
});

test('standard-webhooks: concurrent calls with one id publish one event', async () => {
  await declarative('std-race', 'standard-webhooks', STD_SECRET);
  const body = '{"type":"race"}';
  const before = (await eventsOf('inbox')).length;
  const results = await Promise.all(Array.from({ length: 8 }, () => post('std-race', body, standardHeaders('msg_race', body))));
  for (const result of results) assert.is(result.status, 200, result.text);
  assert.is(results.filter((result) => result.body.meta.eventId).length, 1);
  assert.is(results.filter((result) => result.body.meta.duplicate === true).length, 7);
  assert.is((await eventsOf('inbox')).length, before + 1);
});

test('stripe: the same signed event twice is one event; its id is kept as sourceId', async () => {
  const secret = 'whsec_stripe_dedup';
  await declarative('stripe-dedup', 'stripe', secret);
  const body = JSON.stringify({ id: 'evt_1NG8Du2eZvKYlo2CUI79vXWy', object: 'event', type: 'invoice.paid', data: { object: {} } });
  const headers = { 'stripe-signature': signStripe(secret, nowSeconds(), body) };
  const first = await post('stripe-dedup', body, headers);
  assert.is(first.status, 200, first.text);
  const replayed = await post('stripe-dedup', body, headers);
  assert.is(replayed.status, 200);
  assert.equal(replayed.body.meta, { duplicate: true });
  const events = (await eventsOf('inbox')).filter((event) => event.payload.id === 'evt_1NG8Du2eZvKYlo2CUI79vXWy');
  assert.is(events.length, 1);
  assert.is(events[0].sourceId, 'evt_1NG8Du2eZvKYlo2CUI79vXWy');

  // Ids are per extension: another extension may receive the same id.
  await declarative('stripe-other', 'stripe', secret);
  const other = await post('stripe-other', body, { 'stripe-signature': signStripe(secret, nowSeconds(), body) });
  assert.ok(other.body.meta.eventId, other.text);
});

test('github: a redelivery with the same X-GitHub-Delivery is one event', async () => {
  const secret = 'github-dedup-secret';
  await declarative('gh-dedup', 'github', secret);
  const body = '{"zen":"Design for failure.","hook_id":1}';
  const headers = { 'x-github-event': 'ping', 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-hub-signature-256': signGithub(secret, body) };
  const first = await post('gh-dedup', body, headers);
  assert.ok(first.body.meta.eventId, first.text);
  assert.equal((await post('gh-dedup', body, headers)).body.meta, { duplicate: true });
  const fresh = await post('gh-dedup', body, { ...headers, 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0959' });
  assert.ok(fresh.body.meta.eventId, 'another delivery id is another event');
  const [latest] = await eventsOf('inbox');
  assert.is(latest.sourceId, '72d3162e-cc78-11e3-81ab-4c9367dc0959');
});

test('slack: a retried event_callback with the same event_id is one event', async () => {
  const secret = 'slack-dedup-secret';
  await declarative('slack-dedup', 'slack', secret);
  const body = JSON.stringify({ type: 'event_callback', event_id: 'Ev08MFMKH6', event: { type: 'app_mention', text: 'hi' } });
  const first = await post('slack-dedup', body, slackHeaders(secret, body));
  assert.ok(first.body.meta.eventId, first.text);
  const retry = await post('slack-dedup', body, { ...slackHeaders(secret, body), 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' });
  assert.equal(retry.body.meta, { duplicate: true });
  assert.is((await eventsOf('inbox'))[0].sourceId, 'Ev08MFMKH6');
});

test('stripe and slack: a signed call without an event id, replayed within the tolerance, is one event; another timestamp or body is another call', async () => {
  const secret = 'no-event-id-secret';
  const schemes = [
    { key: 'stripe-noid', scheme: 'stripe', sign: (body: string, at: number) => ({ 'stripe-signature': signStripe(secret, at, body) }) },
    {
      key: 'slack-noid',
      scheme: 'slack',
      sign: (body: string, at: number) => ({ 'x-slack-request-timestamp': String(at), 'x-slack-signature': signSlack(secret, at, body) }),
    },
  ];
  for (const { key, scheme, sign } of schemes) {
    await declarative(key, scheme, secret);
    const body = JSON.stringify({ type: 'app_rate_limited', minute_rate_limited: 1518467820 });
    const at = nowSeconds() - 60;
    const first = await post(key, body, sign(body, at));
    assert.ok(first.body.meta.eventId, `${key}: ${first.text}`);
    const replayed = await post(key, body, sign(body, at));
    assert.is(replayed.status, 200, replayed.text);
    assert.equal(replayed.body.meta, { duplicate: true }, `${key}: the same call again`);
    const later = await post(key, body, sign(body, at + 1));
    assert.ok(later.body.meta.eventId, `${key}: another timestamp is another call`);
    const other = JSON.stringify({ type: 'app_rate_limited', minute_rate_limited: 1518467880 });
    assert.ok((await post(key, other, sign(other, at))).body.meta.eventId, `${key}: another body is another call`);
    const published = (await eventsOf('inbox')).filter((event) => event.eventKey === `${key}.webhook.received`);
    assert.is(published.length, 3, key);
    assert.ok(published.every((event) => event.sourceId === undefined), `${key}: no provider id, so no sourceId`);
  }
});

test('unknown extension keys are 404 and leave nothing behind in the configuration cache', async () => {
  const config = t.daemon.services.extensionConfig;
  assert.is((await post('gh', '{}')).status, 401, 'a configured extension is cached by its first call');
  const cachedBefore = config.cachedExtensions;
  const keys = [...Array.from({ length: 3000 }, (_, index) => `unknown-${index}`), 'A', 'x'.repeat(65), 'bad_key', '-x', '9lives'];
  for (let start = 0; start < keys.length; start += 50) {
    const results = await Promise.all(keys.slice(start, start + 50).map((key) => post(key, '{}')));
    for (const result of results) assert.is(result.status, 404, result.text);
  }
  assert.is(config.cachedExtensions, cachedBefore);
});

test('webhook.eventKey with {type}: github.{type} gives github.push and github.ping', async () => {
  const secret = 'github-typed-secret';
  await declarative('gh-typed', 'github', secret, [['webhook.eventKey', 'STRING', 'github.{type}']]);
  let delivery = 0;
  const send = (type: string | undefined) => {
    const body = JSON.stringify({ n: (delivery += 1) });
    const headers: Record<string, string> = { 'x-github-delivery': `typed-${delivery}`, 'x-hub-signature-256': signGithub(secret, body) };
    if (type !== undefined) headers['x-github-event'] = type;
    return post('gh-typed', body, headers);
  };
  const keyOf = async (result: HttpResult) => (await eventsOf('inbox')).find((event) => event.id === result.body.meta.eventId).eventKey;
  assert.is(await keyOf(await send('push')), 'github.push');
  assert.is(await keyOf(await send('ping')), 'github.ping');
  assert.is(await keyOf(await send('Pull Request/Review!')), 'github.pull-request-review-');
  assert.is(await keyOf(await send(undefined)), 'github.webhook.received', 'no type');
  // A type that would leave an empty segment cannot make an invalid key: the call counts as untyped.
  assert.is(await keyOf(await send('push.')), 'github.webhook.received');
  assert.is(await keyOf(await send('x'.repeat(300))), 'github.webhook.received', 'over 255 characters');
});

test('webhook.eventKey with {type}: stripe and standard-webhooks read the body type, slack event.type or else type', async () => {
  await declarative('stripe-typed', 'stripe', 'whsec_typed', [['webhook.eventKey', 'STRING', 'stripe.{type}']]);
  const stripeBody = JSON.stringify({ id: 'evt_typed', type: 'customer.subscription.created' });
  const stripe = await post('stripe-typed', stripeBody, { 'stripe-signature': signStripe('whsec_typed', nowSeconds(), stripeBody) });
  assert.is((await eventsOf('inbox'))[0].id, stripe.body.meta.eventId);
  assert.is((await eventsOf('inbox'))[0].eventKey, 'stripe.customer.subscription.created');

  await declarative('std-typed', 'standard-webhooks', STD_SECRET, [['webhook.eventKey', 'STRING', 'acme.{type}']]);
  const stdBody = '{"type":"Invoice.Paid","data":{}}';
  assert.is((await post('std-typed', stdBody, standardHeaders('msg_typed', stdBody))).status, 200);
  const [stdEvent] = await eventsOf('inbox');
  assert.is(stdEvent.eventKey, 'acme.invoice.paid');
  assert.is(stdEvent.sourceId, 'msg_typed');

  await declarative('slack-typed', 'slack', 'slack-typed-secret', [['webhook.eventKey', 'STRING', 'slack.{type}']]);
  const nested = JSON.stringify({ type: 'event_callback', event_id: 'Ev1', event: { type: 'app_mention' } });
  assert.is((await post('slack-typed', nested, slackHeaders('slack-typed-secret', nested))).status, 200);
  assert.is((await eventsOf('inbox'))[0].eventKey, 'slack.app_mention');
  const flat = JSON.stringify({ type: 'app_rate_limited', event_id: 'Ev2' });
  assert.is((await post('slack-typed', flat, slackHeaders('slack-typed-secret', flat))).status, 200);
  assert.is((await eventsOf('inbox'))[0].eventKey, 'slack.app_rate_limited');
});

test('webhook.eventKey: a template is accepted only when every call yields a valid event key', async () => {
  await publishExtension(admin, 'templated');
  for (const value of ['{type}', 'a.{type}.b', 'x.y']) {
    const ok = await admin.put('/api/admin/marketplace/extensions/templated/config', { fields: [{ name: 'webhook.eventKey', type: 'STRING', value }] });
    assert.is(ok.status, 200, `${value}: ${ok.text}`);
  }
  for (const value of ['github.{type', 'github.{kind}', 'github..{type}', 'single']) {
    const refused = await admin.put('/api/admin/marketplace/extensions/templated/config', { fields: [{ name: 'webhook.eventKey', type: 'STRING', value }] });
    assert.is(refused.status, 400, value);
  }
});

test('sourceId reaches an external subscriber with the event', async () => {
  const subscriber = await startSubscriber();
  try {
    await declarative('gh-delivered', 'github', 'delivered-secret', [['webhook.eventKey', 'STRING', 'delivered.{type}']]);
    await install(admin, 'inbox', 'gh-delivered');
    await subscribeExternal(admin, 'inbox', 'delivered.push', 'gh-delivered', subscriber.url);
    const body = '{"ref":"refs/heads/main"}';
    const result = await post('gh-delivered', body, {
      'x-github-event': 'push',
      'x-github-delivery': 'delivery-to-subscriber',
      'x-hub-signature-256': signGithub('delivered-secret', body),
    });
    assert.is(result.status, 200, result.text);
    const [delivery] = await subscriber.waitForCount(1);
    assert.is(delivery!.json.id, result.body.meta.eventId);
    assert.is(delivery!.json.sourceId, 'delivery-to-subscriber');
  } finally {
    await subscriber.close();
  }
});

test.run();
