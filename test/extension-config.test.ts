import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli } from './helpers/cli.js';
import { createWorkspace, publishExtension, subscribeExternal, install } from './helpers/fixtures.js';
import { call, type Api } from './helpers/http.js';
import { hasValidSignature, startSubscriber } from './helpers/subscriber.js';
import { filesOnly } from './helpers/postgres.js';

const SECRET = 'sup3r-s3cret-webhook-value';

let t: TestDaemon;
let admin: Api;
const responses: string[] = [];

/** Every answer the tests see is kept, to check that the secret is in none of them. */
function recording(client: Api): Api {
  const wrap =
    <A extends unknown[]>(send: (...args: A) => Promise<{ text: string }>) =>
    async (...args: A) => {
      const result = await send(...args);
      responses.push(result.text);
      return result as any;
    };
  return { get: wrap(client.get), post: wrap(client.post), put: wrap(client.put), patch: wrap(client.patch), delete: wrap(client.delete), send: wrap(client.send) };
}

const configPath = (key: string) => `/api/admin/marketplace/extensions/${key}/config`;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

test.before(async () => {
  t = await startTestDaemon();
  admin = recording(await t.admin());
  await publishExtension(admin, 'github');
  await createWorkspace(admin, 'acme');
});
test.after(async () => {
  await t.destroy();
});

test('an extension without configuration has no fields; unknown extensions are 404', async () => {
  const empty = await admin.get(configPath('github'));
  assert.is(empty.status, 200);
  assert.equal(empty.body.data, { fields: [] });
  assert.is((await admin.get(configPath('ghost'))).status, 404);
  assert.is((await admin.put(configPath('ghost'), { fields: [{ name: 'a', type: 'STRING', value: 'x' }] })).status, 404);
});

test('PUT merges typed fields; a SECRET is always answered masked', async () => {
  const result = await admin.put(configPath('github'), {
    fields: [
      { name: 'webhook.scheme', type: 'STRING', value: 'github' },
      { name: 'webhook.secret', type: 'SECRET', value: SECRET },
      { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' },
      { name: 'retries', type: 'NUMBER', value: 3 },
      { name: 'verbose', type: 'BOOLEAN', value: false },
    ],
  });
  assert.is(result.status, 200, result.text);
  const fields = Object.fromEntries(result.body.data.fields.map((field: { name: string }) => [field.name, field]));
  assert.equal(fields['webhook.secret'], { name: 'webhook.secret', type: 'SECRET', value: '********', set: true });
  assert.equal(fields.retries, { name: 'retries', type: 'NUMBER', value: 3, set: true });
  assert.equal(fields.verbose, { name: 'verbose', type: 'BOOLEAN', value: false, set: true });

  const merged = await admin.put(configPath('github'), { fields: [{ name: 'retries', type: 'NUMBER', value: 5 }] });
  const names = merged.body.data.fields.map((field: { name: string }) => field.name);
  assert.equal(names, ['webhook.scheme', 'webhook.secret', 'webhook.workspaceId', 'retries', 'verbose'], 'untouched fields stay');
  assert.equal(merged.body.data, (await admin.get(configPath('github'))).body.data);
});

test('a SECRET sent masked or null keeps its value (the webhook still verifies with it)', async () => {
  for (const value of ['********', null]) {
    const result = await admin.put(configPath('github'), { fields: [{ name: 'webhook.secret', type: 'SECRET', value }] });
    assert.is(result.status, 200);
  }
  const body = '{"zen":"Keep it logically awesome."}';
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const hook = await call(t.url, 'POST', '/api/webhooks/github', {
    raw: body,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
  });
  responses.push(hook.text);
  assert.is(hook.status, 200, hook.text);
});

test('values must match their type; webhook fields have fixed types and formats', async () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 'n', type: 'NUMBER', value: 'three' }, 'fields.0.value'],
    [{ name: 'n', type: 'NUMBER', value: true }, 'fields.0.value'],
    [{ name: 'b', type: 'BOOLEAN', value: 'yes' }, 'fields.0.value'],
    [{ name: 's', type: 'STRING', value: 4 }, 'fields.0.value'],
    [{ name: 's', type: 'SECRET', value: '' }, 'fields.0.value'],
    [{ name: 'x', type: 'DATE', value: '2026' }, 'fields.0.type'],
    [{ name: '9lives', type: 'STRING', value: 'x' }, 'fields.0.name'],
    [{ name: 'webhook.scheme', type: 'STRING', value: 'carrier-pigeon' }, 'fields.0.value'],
    [{ name: 'webhook.secret', type: 'STRING', value: 'in clear' }, 'fields.0.value'],
    [{ name: 'webhook.workspaceId', type: 'STRING', value: 'Not A Workspace' }, 'fields.0.value'],
    [{ name: 'webhook.eventKey', type: 'STRING', value: 'nodots' }, 'fields.0.value'],
  ];
  for (const [field, path] of cases) {
    const result = await admin.put(configPath('github'), { fields: [field] });
    assert.is(result.status, 400, JSON.stringify(field));
    assert.is(result.body.meta.issues[0].path, path, JSON.stringify(field));
  }
  const twice = await admin.put(configPath('github'), {
    fields: [
      { name: 'a', type: 'STRING', value: '1' },
      { name: 'a', type: 'STRING', value: '2' },
    ],
  });
  assert.is(twice.status, 400);
  assert.is((await admin.put(configPath('github'), { fields: [] })).status, 400);
  const after = (await admin.get(configPath('github'))).body.data.fields.map((field: { name: string }) => field.name);
  assert.not.ok(after.includes('a') || after.includes('n'), 'a rejected PUT changes nothing');
});

test('only an ADMIN reads or changes configuration; 401 before 403 before 400 before 404', async () => {
  const user = await createUser(t, 'config-reader@example.test');
  assert.is((await t.anon.get(configPath('github'))).status, 401);
  assert.is((await user.get(configPath('github'))).status, 403);
  assert.is((await user.put(configPath('ghost'), { fields: 'bad' })).status, 403);
  assert.is((await admin.put(configPath('ghost'), { fields: 'bad' })).status, 400);
  assert.is((await admin.put(configPath('ghost'), { fields: [{ name: 'a', type: 'STRING', value: '1' }] })).status, 404);
});

test('the secret is in no answer and in no file of the data directory, and never logged', async () => {
  const subscriber = await startSubscriber();
  try {
    await install(admin, 'acme', 'github');
    const { signingSecret } = await subscribeExternal(admin, 'acme', 'github.push', 'github', subscriber.url);
    const hex = Buffer.from(SECRET).toString('hex');
    const b64 = Buffer.from(SECRET).toString('base64');
    for (const file of filesUnder(t.dataDir)) {
      const content = readFileSync(file, 'latin1');
      assert.not.match(content, SECRET, file);
      assert.not.match(content, hex, file);
      assert.not.match(content, b64, file);
      assert.not.match(content, signingSecret.slice(6), `${file} holds the subscription secret in clear`);
    }
    for (const text of responses) assert.not.match(text, SECRET);
    assert.not.match(t.logs.join(''), SECRET);
    assert.ok(responses.length > 10, 'the answers above were recorded');
  } finally {
    await subscriber.close();
  }
});

test('platform ext config get, set and set-secret (from stdin, never from argv)', async () => {
  const env = { PLATFORM_URL: t.url, PLATFORM_TOKEN: (await t.admin()).token, XDG_CONFIG_HOME: '/nonexistent' };
  const cli = (args: string[], input?: string) => runCli(args, { env, input });
  const set = await cli(['ext', 'config', 'set', 'github', 'webhook.header', 'x-signature']);
  assert.is(set.code, 0, set.stderr);
  const number = await cli(['ext', 'config', 'set', 'github', 'retries', '7']);
  assert.is(number.code, 0, number.stderr);
  assert.match(number.stdout, '(NUMBER)', 'an existing field keeps its type');
  const secret = await cli(['ext', 'config', 'set-secret', 'github', 'webhook.secret'], 'rotated-secret-value\n');
  assert.is(secret.code, 0, secret.stderr);
  const refused = await cli(['ext', 'config', 'set', 'github', 'webhook.secret', 'in-argv']);
  assert.is(refused.code, 2, 'a SECRET field is not set from argv');
  assert.is((await cli(['ext', 'config', 'set', 'github', 'x', 'y', '--type', 'SECRET'])).code, 2);

  const shown = await cli(['ext', 'config', 'get', 'github']);
  assert.match(shown.stdout, /webhook\.secret\s+SECRET\s+\*{8}/);
  assert.match(shown.stdout, /retries\s+NUMBER\s+7/);
  assert.not.match(shown.stdout, 'rotated-secret-value');
  const json = JSON.parse((await cli(['ext', 'config', 'get', 'github', '--json'])).stdout);
  assert.is(json.fields.find((field: { name: string }) => field.name === 'webhook.header').value, 'x-signature');
  assert.equal(t.daemon.services.extensionConfig.values('github')['webhook.secret'], 'rotated-secret-value');
});

filesOnly(test)('keys rotate: every secret re-encrypted under a new key, none lost; refused while the daemon runs (files only: the offline rotation rewrites the secrets of the data directory)', async () => {
  const subscriber = await startSubscriber();
  await createWorkspace(admin, 'rotation');
  await install(admin, 'rotation', 'github');
  const { signingSecret } = await subscribeExternal(admin, 'rotation', 'github.push', 'github', subscriber.url);
  await admin.put(configPath('github'), { fields: [{ name: 'webhook.secret', type: 'SECRET', value: SECRET }] });

  const running = await runCli(['keys', 'rotate', '--data-dir', t.dataDir]);
  assert.is(running.code, 1);
  assert.match(running.stderr, 'in use by another platform daemon');

  await t.stop();
  const keyBefore = readFileSync(join(t.dataDir, 'master.key'), 'utf8');
  const sealedBefore = readFileSync(join(t.dataDir, 'extension-config.json'), 'utf8');
  const rotated = await runCli(['keys', 'rotate', '--data-dir', t.dataDir]);
  assert.is(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /re-encrypted (\d+) secrets under a new master key/);
  assert.ok(Number(/re-encrypted (\d+)/.exec(rotated.stdout)![1]) >= 3, 'config secrets and subscription secrets');
  const keyAfter = readFileSync(join(t.dataDir, 'master.key'), 'utf8');
  assert.is.not(keyAfter, keyBefore);
  assert.is(keyAfter.trim().split('\n').length, 1, 'the old key is gone from the keyring');
  assert.is.not(readFileSync(join(t.dataDir, 'extension-config.json'), 'utf8'), sealedBefore);

  t = await startTestDaemon({}, t.dataDir);
  admin = recording(await t.admin());
  assert.equal(t.daemon.services.extensionConfig.values('github')['webhook.secret'], SECRET, 'the secret survived');
  await admin.post('/api/workspaces/rotation/events/publish', { eventKey: 'github.push' });
  const [delivery] = await subscriber.waitForCount(1);
  assert.ok(hasValidSignature(delivery!, signingSecret), 'the subscription still signs with its secret');
  await subscriber.close();
});

filesOnly(test)('an interrupted rotation (keyring of new and old key) still opens every secret (files only: follows the offline rotation above)', async () => {
  await t.stop();
  const { SecretBox } = await import('../src/daemon/secrets/box.js');
  const box = await SecretBox.open(t.dataDir, null);
  // As after the first step of a rotation: a new current key, the old one kept, nothing re-sealed yet.
  await box.withNewKey().saveKeyring(t.dataDir);
  t = await startTestDaemon({}, t.dataDir);
  admin = recording(await t.admin());
  assert.equal(t.daemon.services.extensionConfig.values('github')['webhook.secret'], SECRET);
  await admin.put(configPath('github'), { fields: [{ name: 'other.secret', type: 'SECRET', value: 'sealed-with-the-new-key' }] });
  assert.equal(t.daemon.services.extensionConfig.values('github')['other.secret'], 'sealed-with-the-new-key');
});

test.run();
