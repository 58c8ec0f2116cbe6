import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signGithub, signHmacSha256, signStripe } from '../src/handlers/webhooks/sign.js';
import { runCli } from './helpers/cli.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { configureExtension, createWorkspace, pluginsDirWith, publishExtension } from './helpers/fixtures.js';
import { call, type Api } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';

const GITHUB_SECRET = 'gh-secret-never-shown-7Qx';
const HMAC_SECRET = 'hmac-secret-never-shown-3Kd';
const PARTNER_KEY = 'partner-key-never-shown-9Zr';

let t: TestDaemon;
let admin: Api & { token: string };

async function configure(key: string, fields: Array<[string, string, unknown]>): Promise<void> {
  await publishExtension(admin, key);
  await configureExtension(admin, key, fields);
}

const post = (key: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  call(t.url, 'POST', `/api/webhooks/${key}`, { raw: body, headers: { 'content-type': 'application/json', ...headers } });

/** Signed for the `hm` extension (hmac-sha256 in x-body-mac); `valid: false` signs with another secret, which is refused. */
const postHmac = (body: string, valid = true) =>
  post('hm', body, { 'x-body-mac': signHmacSha256(valid ? HMAC_SECRET : 'wrong', body) });

const requests = (key: string, query = '') => admin.get(`/api/admin/webhooks/${key}/requests${query}`);

/** Every entry of the log, following nextCursor; `between` runs after each page. */
async function readAll(key: string, limit: number, between: () => Promise<void> = async () => undefined): Promise<any[]> {
  const entries: any[] = [];
  let cursor: string | undefined;
  do {
    const page = await requests(key, `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.is(page.status, 200, page.text);
    entries.push(...page.body.data);
    cursor = page.body.meta.nextCursor;
    await between();
  } while (cursor);
  return entries;
}

test.before(async () => {
  t = await startTestDaemon({ pluginsDir: await pluginsDirWith('hooks.mjs'), maxBodyBytes: 4096 });
  admin = await t.admin();
  await createWorkspace(admin, 'inbox');
  await configure('gh', [
    ['webhook.scheme', 'STRING', 'github'],
    ['webhook.secret', 'SECRET', GITHUB_SECRET],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
  await configure('hm', [
    ['webhook.scheme', 'STRING', 'hmac-sha256'],
    ['webhook.secret', 'SECRET', HMAC_SECRET],
    ['webhook.header', 'STRING', 'X-Body-Mac'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
});
test.after(async () => {
  await t.destroy();
});

test('every outcome is recorded with its reason and eventId, newest first', async () => {
  await configure('nowhere', [['webhook.scheme', 'STRING', 'github'], ['webhook.secret', 'SECRET', GITHUB_SECRET]]);
  await publishExtension(admin, 'unconfigured');
  const body = '{"action":"opened","number":7}';
  const github = (delivery: string, text = body) => ({ 'x-github-delivery': delivery, 'x-github-event': 'issues', 'x-hub-signature-256': signGithub(GITHUB_SECRET, text) });

  const accepted = await post('gh', body, github('d-1'));
  assert.is(accepted.status, 200, accepted.text);
  assert.is((await post('gh', body, github('d-1'))).body.meta.duplicate, true);
  assert.is((await post('gh', body, { ...github('d-2'), 'x-hub-signature-256': signGithub('another secret', body) })).status, 401);
  assert.is((await post('gh', '{"action": op', github('d-3', '{"action": op'))).status, 400);
  assert.is((await post('gh', '[1,2]', github('d-4', '[1,2]'))).status, 400);
  assert.is((await post('gh', 'x'.repeat(5000), github('d-5', 'x'.repeat(5000)))).status, 413);
  assert.is((await post('nowhere', body, github('d-6'))).status, 500);
  assert.is((await post('unconfigured', body)).status, 404);
  assert.is((await post('hooks', '{"mode":"throw"}')).status, 500);
  assert.is((await post('hooks', '{"mode":"reject"}')).status, 401);
  assert.is((await post('hooks', '{"mode":"ok"}')).status, 200);

  const gh = (await requests('gh')).body.data.map((entry: any) => [entry.outcome, entry.reason, entry.eventId, entry.bodyExcerpt]);
  assert.equal(gh, [
    ['REJECTED', 'the request body is larger than the limit of 4096 bytes', undefined, ''],
    ['REJECTED', 'the webhook body must be a JSON object', undefined, '[1,2]'],
    ['REJECTED', 'the request body is not valid JSON', undefined, '{"action": op'],
    ['REJECTED', 'signature does not match', undefined, body],
    ['DUPLICATE', "the provider's delivery id (or, without one, the same signed call) was already published; nothing published", undefined, body],
    ['ACCEPTED', 'event published', accepted.body.meta.eventId, body],
  ]);
  const first = (await requests('gh')).body.data.at(-1);
  assert.is(first.headers['x-github-delivery'], 'd-1');
  assert.is(first.headers['x-github-event'], 'issues');
  assert.ok(Date.parse(first.receivedAt) > 0);

  const reasons = async (key: string) => (await requests(key)).body.data.map((entry: any) => `${entry.outcome}: ${entry.reason}`);
  assert.equal(await reasons('nowhere'), ['FAILED: webhook.workspaceId is not set']);
  assert.equal(await reasons('unconfigured'), ['REJECTED: no webhook handler is registered for unconfigured']);
  // What a plugin threw may hold anything: it stays in the daemon log.
  assert.equal(await reasons('hooks'), [
    'ACCEPTED: handled by the plugin',
    'REJECTED: no entry for you',
    'FAILED: the handler threw; its message is in the daemon log',
  ]);
});

filesOnly(test)('signature and key headers are masked; no secret or signature appears in the answer or on disk (files only: reads webhook-requests.log)', async () => {
  await configure('partner', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', PARTNER_KEY],
    ['webhook.header', 'STRING', 'X-Partner-Credential'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
  const body = '{"deal":42}';
  const stripeSignature = signStripe('whsec_other', Math.floor(Date.now() / 1000), body);
  const sent = {
    'x-partner-credential': PARTNER_KEY,
    authorization: 'Bearer bearer-token-never-shown',
    cookie: 'platform_token=cookie-never-shown',
    'stripe-signature': stripeSignature,
    'x-hub-signature-256': signGithub(GITHUB_SECRET, body),
    'x-custom-token': 'custom-token-never-shown',
    'x-request-id': 'req-17',
  };
  assert.is((await post('partner', body, sent)).status, 200);
  assert.is((await post('partner', body, { ...sent, 'x-partner-credential': 'a-wrong-key-never-shown' })).status, 401);
  const hmacBody = '{"n":"masked"}';
  const mac = signHmacSha256(HMAC_SECRET, hmacBody);
  assert.is((await post('hm', hmacBody, { 'x-body-mac': mac })).status, 200);

  const partner = await requests('partner');
  const hm = await requests('hm');
  assert.equal(
    partner.body.data.map((entry: any) => entry.outcome),
    ['REJECTED', 'ACCEPTED'],
  );
  for (const entry of partner.body.data) {
    for (const name of ['x-partner-credential', 'authorization', 'cookie', 'stripe-signature', 'x-hub-signature-256', 'x-custom-token']) {
      assert.is(entry.headers[name], '****', name);
    }
    assert.is(entry.headers['x-request-id'], 'req-17');
  }
  assert.is(hm.body.data[0].headers['x-body-mac'], '****');
  const onDisk = await readFile(join(t.dataDir, 'webhook-requests.log'), 'utf8');
  for (const secret of [
    PARTNER_KEY,
    'a-wrong-key-never-shown',
    'bearer-token-never-shown',
    'cookie-never-shown',
    stripeSignature,
    sent['x-hub-signature-256'].slice('sha256='.length),
    'custom-token-never-shown',
    mac,
    GITHUB_SECRET,
    HMAC_SECRET,
  ]) {
    assert.not.ok(partner.text.includes(secret), `answer holds ${secret}`);
    assert.not.ok(hm.text.includes(secret), `answer holds ${secret}`);
    assert.not.ok(onDisk.includes(secret), `webhook-requests.log holds ${secret}`);
  }
});

test('the body excerpt is the first 2 KiB, cut at a character boundary; headers are bounded', async () => {
  // 2047 ASCII bytes, then a 2-byte character across the 2048-byte mark.
  const body = `{"a":"${'x'.repeat(2041)}é${'y'.repeat(100)}"}`;
  assert.is((await post('hm', body, { 'x-body-mac': signHmacSha256(HMAC_SECRET, body), 'x-big': 'v'.repeat(6000) })).status, 200);
  const [entry] = (await requests('hm', '?limit=1')).body.data;
  assert.is(entry.bodyExcerpt, body.slice(0, 2047));
  const headerChars = Object.entries(entry.headers as Record<string, string>).reduce((sum, [name, value]) => sum + name.length + value.length, 0);
  assert.ok(headerChars <= 2049, `headers take ${headerChars} characters`);
  assert.ok((entry.headers['x-big'] as string).endsWith('…'));
});

filesOnly(test)('calls for unknown extension keys leave nothing behind (files only: reads webhook-requests.log)', async () => {
  for (const key of ['no-such-extension', 'Not-A-Key', 'ab'.repeat(40)]) {
    assert.is((await post(key, '{"a":1}')).status, 404);
    assert.is((await requests(key)).status, 404);
  }
  t = await t.restart();
  admin = await t.admin();
  const onDisk = await readFile(join(t.dataDir, 'webhook-requests.log'), 'utf8');
  assert.not.ok(onDisk.includes('no-such-extension'));
  assert.not.ok(onDisk.includes('Not-A-Key'));
  assert.is((await requests('no-such-extension')).status, 404);
});

test('paging while calls keep arriving misses and repeats nothing', async () => {
  await configure('pager', [
    ['webhook.scheme', 'STRING', 'api-key'],
    ['webhook.secret', 'SECRET', PARTNER_KEY],
    ['webhook.header', 'STRING', 'x-key'],
    ['webhook.workspaceId', 'STRING', 'inbox'],
  ]);
  for (let n = 0; n < 30; n += 1) assert.is((await post('pager', `{"n":${n}}`, { 'x-key': 'wrong' })).status, 401);
  let more = 30;
  const seen = await readAll('pager', 7, async () => {
    for (let i = 0; i < 3; i += 1, more += 1) await post('pager', `{"n":${more}}`, { 'x-key': 'wrong' });
  });
  assert.equal(
    seen.map((entry) => entry.bodyExcerpt),
    Array.from({ length: 30 }, (_, i) => `{"n":${29 - i}}`),
  );
  const fresh = await requests('pager', '?limit=1');
  assert.is(fresh.body.data[0].bodyExcerpt, `{"n":${more - 1}}`);
});

test('bad limit or cursor is 400 with issues; an unknown extension 404; a member 403', async () => {
  await postHmac('{"n":1}');
  await postHmac('{"n":2}');
  const foreign = (await requests('hm', '?limit=1')).body.meta.nextCursor;
  assert.type(foreign, 'string');
  const cases: Array<[string, string]> = [
    ['?limit=0', 'limit'],
    ['?limit=1001', 'limit'],
    ['?limit=ten', 'limit'],
    ['?cursor=not-a-cursor', 'cursor'],
    [`?cursor=${Buffer.from('["webhook-requests","gh",1,5]').toString('base64url')}`, 'cursor'],
    [`?cursor=${encodeURIComponent(foreign)}`, 'cursor'],
  ];
  for (const [query, path] of cases) {
    const result = await requests('gh', query);
    assert.is(result.status, 400, `${query}: ${result.text}`);
    assert.is(result.body.code, 'VALIDATION_ERROR');
    assert.is(result.body.meta.issues[0].path, path, query);
  }
  assert.is((await requests('missing-extension')).status, 404);
  const member = await createUser(t, 'member@example.test');
  const refused = await member.get('/api/admin/webhooks/gh/requests');
  assert.is(refused.status, 403);
  assert.is((await t.anon.get('/api/admin/webhooks/gh/requests')).status, 401);
});

filesOnly(test)('each extension keeps its latest 1,000 calls, on disk too, across a restart; paging past dropped calls is 409 (files only: reads webhook-requests.log)', async () => {
  const total = 3200;
  for (let n = 0; n < total; n += 1) {
    const result = await postHmac(`{"n":${n}}`, false);
    assert.is(result.status, 401);
  }
  const expected = Array.from({ length: 1000 }, (_, i) => `{"n":${total - 1 - i}}`);
  const kept = await readAll('hm', 1000);
  assert.equal(kept.map((entry) => entry.bodyExcerpt), expected);

  t = await t.restart();
  admin = await t.admin();
  const afterRestart = await readAll('hm', 300);
  assert.equal(afterRestart.map((entry) => entry.id), kept.map((entry) => entry.id));
  // Compacted (at twice what is kept plus 1,000 lines): the file holds what is kept and the lines since.
  const lines = (await readFile(join(t.dataDir, 'webhook-requests.log'), 'utf8')).split('\n').length - 1;
  assert.ok(lines < 2000, `${lines} lines on disk`);

  const first = await requests('hm', '?limit=995');
  for (let n = 0; n < 10; n += 1) await postHmac(`{"late":${n}}`, false);
  const next = await requests('hm', `?limit=995&cursor=${encodeURIComponent(first.body.meta.nextCursor)}`);
  assert.is(next.status, 409, next.text);
  assert.is(next.body.code, 'CONFLICT');
});

test('platform webhooks log: a table for people, JSON for scripts, --all pages to the end', async () => {
  const env = { PLATFORM_URL: t.url, PLATFORM_TOKEN: admin.token, XDG_CONFIG_HOME: '/nonexistent' };
  const table = await runCli(['webhooks', 'log', 'gh', '--limit', '3'], { env });
  assert.is(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0]!, /^TIME\s+OUTCOME\s+REASON\s+EVENT$/);
  assert.match(lines[1]!, /^\S+Z\s+REJECTED\s+the request body is larger than the limit of 4096 bytes\s+-$/);
  assert.is(lines.length, 5, table.stdout);
  assert.match(lines[4]!, /more: --all, or a larger --limit/);

  const all = await runCli(['webhooks', 'log', 'gh', '--all', '--json', '--limit', '2'], { env });
  assert.is(all.code, 0, all.stderr);
  const entries = JSON.parse(all.stdout);
  assert.equal(entries, (await requests('gh')).body.data);
  assert.is(entries.at(-1).outcome, 'ACCEPTED');
  assert.type(entries.at(-1).eventId, 'string');

  const unknown = await runCli(['webhooks', 'log', 'no-such-extension'], { env });
  assert.is.not(unknown.code, 0);
  assert.match(unknown.stderr, /not found/);
});

test.run();
