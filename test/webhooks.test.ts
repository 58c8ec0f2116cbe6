import { createHmac, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, createWorkspace, pluginsDirWith, publishExtension } from './helpers/fixtures.js';
import { call, type Api, type HttpResult } from './helpers/http.js';

type Seen = { headers: Record<string, string>; raw: string; body: unknown; config: Record<string, unknown> };
const seen = ((globalThis as { __hookRequests?: Seen[] }).__hookRequests ??= []);

let t: TestDaemon;
let admin: Api;

const hmacHex = (secret: string | Buffer, text: string) => createHmac('sha256', secret).update(text).digest('hex');
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function configure(key: string, fields: Array<[string, string, unknown]>): Promise<void> {
  const result = await admin.put(`/api/admin/marketplace/extensions/${key}/config`, {
    fields: fields.map(([name, type, value]) => ({ name, type, value })),
  });
  assert.is(result.status, 200, result.text);
}

const post = (key: string, body: string, headers: Record<string, string> = {}) =>
  call(t.url, 'POST', `/api/webhooks/${key}`, { raw: body, headers: { 'content-type': 'application/json', ...headers } });

async function eventsOf(workspace: string): Promise<any[]> {
  return (await admin.get(`/api/workspaces/${workspace}/events`)).body.data;
}

/**
 * Changes the last letter or digit (hex and base64 signatures alike end in
 * one, or in '='). The replacement differs ignoring case too: hex signatures
 * are compared case-insensitively.
 */
function tamper(value: string): string {
  const index = value.search(/[0-9A-Za-z](?=[^0-9A-Za-z]*$)/);
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

test.run();
