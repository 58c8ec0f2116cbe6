import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnDaemon } from './helpers/cli.js';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createLogger } from '../src/daemon/log.js';
import { ADMIN, createUser, startTestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { call } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

const ADMIN_ENV = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password };

test('no secret of any kind reaches the log, whatever route carried it, at level debug', async () => {
  const t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [] } }, undefined, { format: 'json', level: 'debug' });
  const subscriber = await startSubscriber();
  const secrets: Record<string, string> = {
    'new user password': 'first-Passw0rd-of-user',
    'changed password': 'second-Passw0rd-of-user',
    'wrong password at login': 'wrong-Passw0rd-tried',
    'SECRET config value': 'config-secret-value-42',
    'webhook secret': 'webhook-api-key-secret-77',
    'URL credentials': 'url-Passw0rd-in-subscription',
    'URL query string': 'url-query-key-in-subscription',
  };
  try {
    const admin = await t.admin();
    secrets['admin password'] = ADMIN.password;
    secrets['admin JWT'] = admin.token;
    const user = await createUser(t, 'secretive@example.test', { password: secrets['new user password'] });
    secrets['user JWT (first)'] = user.token;
    assert.is((await user.put('/api/auth/me/password', { currentPassword: secrets['new user password'], newPassword: secrets['changed password'] })).status, 200);
    const again = await t.as('secretive@example.test', secrets['changed password']!);
    secrets['user JWT (second)'] = again.token;
    assert.is((await t.anon.post('/api/auth/login', { email: 'secretive@example.test', password: secrets['wrong password at login'] })).status, 401);
    assert.is((await again.post('/api/auth/logout')).status, 200);

    await workspaceWith(admin, 'acme', 'crm');
    const withCredentials = `${subscriber.url.replace('http://', `http://operator:${secrets['URL credentials']}@`)}/?key=${secrets['URL query string']}`;
    const subscription = await subscribeExternal(admin, 'acme', 'deal.won', 'crm', withCredentials);
    secrets['subscription signing secret'] = subscription.signingSecret;
    assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'deal.won', payload: {} })).status, 200);
    await waitFor('the delivery settled', async () => (await admin.get('/api/admin/status')).body.data.pendingDeliveries === 0);

    const configured = await admin.put('/api/admin/marketplace/extensions/crm/config', {
      fields: [
        { name: 'apiKey', type: 'SECRET', value: secrets['SECRET config value'] },
        { name: 'webhook.scheme', type: 'STRING', value: 'api-key' },
        { name: 'webhook.secret', type: 'SECRET', value: secrets['webhook secret'] },
        { name: 'webhook.header', type: 'STRING', value: 'x-api-key' },
        { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' },
      ],
    });
    assert.is(configured.status, 200, configured.text);
    const hook = (key: string) =>
      call(t.url, 'POST', '/api/webhooks/crm', { raw: '{"a":1}', headers: { 'content-type': 'application/json', 'x-api-key': key } });
    assert.is((await hook(secrets['webhook secret']!)).status, 200);
    assert.is((await hook(`${secrets['webhook secret']}x`)).status, 401);
    // Cookies and query strings: sent where a careless logger would write them.
    await call(t.url, 'GET', `/api/auth/me?token=${admin.token}`, { headers: { cookie: `platform_token=${admin.token}` } });
    await call(t.url, 'GET', '/api/health', { headers: { authorization: `Bearer ${admin.token}` } });

    const log = t.logs.join('');
    assert.ok(log.split('\n').filter((line) => line.includes('"msg":"request"')).length > 15, 'the access lines are there');
    for (const [kind, secret] of Object.entries(secrets)) {
      assert.not.ok(log.includes(secret), `the ${kind} is in the log`);
    }
    for (const line of log.trim().split('\n')) {
      const entry = JSON.parse(line);
      assert.type(entry.time, 'string');
      assert.ok(['debug', 'info', 'warn', 'error'].includes(entry.level), line);
      assert.type(entry.msg, 'string');
    }
  } finally {
    await subscriber.close();
    await t.destroy();
  }
});

/** The daemon's stdout as JSON lines. */
const jsonLines = (output: string) =>
  output
    .trim()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

test('platform serve: JSON lines off a terminal, with an access line per request; --quiet cuts them', async () => {
  const daemon = await spawnDaemon(await tempDir(), ADMIN_ENV);
  try {
    await call(daemon.url, 'GET', '/api/workspaces/acme', { headers: { 'x-request-id': 'req-from-proxy-1' } });
    const access = await waitFor('the access line', () =>
      jsonLines(daemon.output()).find((entry) => entry.requestId === 'req-from-proxy-1'),
    );
    assert.equal(
      { level: access.level, msg: access.msg, method: access.method, route: access.route, status: access.status },
      { level: 'info', msg: 'request', method: 'GET', route: '/api/workspaces/:id', status: 401 },
    );
    assert.type(access.durationMs, 'number');
    assert.match(String(access.time), /^\d{4}-\d\d-\d\dT.*Z$/);
    assert.ok(jsonLines(daemon.output()).some((entry) => String(entry.msg).startsWith('platform listening on')));
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }

  const quiet = await spawnDaemon(await tempDir(), ADMIN_ENV, ['--quiet']);
  try {
    await call(quiet.url, 'GET', '/api/health', { headers: { 'x-request-id': 'req-quiet-1' } });
    quiet.child.kill('SIGTERM');
    await quiet.exited;
    assert.match(quiet.output(), 'platform stopped', 'everything logged is out');
    assert.not.match(quiet.output(), 'req-quiet-1', 'no access lines');
  } finally {
    quiet.child.kill('SIGTERM');
  }

  const text = await spawnDaemon(await tempDir(), ADMIN_ENV, ['--log-format', 'text']);
  try {
    await call(text.url, 'GET', '/api/health', { headers: { 'x-request-id': 'req-text-1' } });
    const line = await waitFor('the text access line', () => text.output().split('\n').find((entry) => entry.endsWith('req-text-1')));
    assert.match(line, /^\S+Z GET \/api\/health 200 \d+\.\dms req-text-1$/);
  } finally {
    text.child.kill('SIGTERM');
    await text.exited;
  }
});

test('access lines of consecutive event-loop turns share one write; other lines go out on the next turn', async () => {
  const writes: string[] = [];
  const logger = createLogger({ sink: { out: (text) => writes.push(text), err: (text) => writes.push(text) }, format: 'json', access: true });
  for (let request = 0; request < 20; request += 1) {
    logger.access('GET', '/api/health', 200, 0.4, `batched-${request}`);
    await nextTurn();
  }
  // One write for the twenty, unless the machine stalled past the wait more than once.
  assert.ok(writes.length <= 2, `${writes.length} writes for 20 access lines`);
  logger.flush();
  assert.is(writes.join('').split('\n').filter((line) => line.includes('batched-')).length, 20);

  writes.length = 0;
  logger.info('started');
  await nextTurn();
  assert.equal(writes.length, 1, 'an ordinary line is out after one turn');

  writes.length = 0;
  const many = Math.ceil((64 * 1024) / 100);
  for (let request = 0; request < many; request += 1) logger.access('GET', '/api/marketplace/extensions/:key', 200, 1, `full-${request}`);
  assert.ok(writes.length >= 1, '64 KiB of access lines are written without waiting');
  logger.flush();
});

test('a log level drops the lines below it: at warn, no access or info lines; errors stay', async () => {
  const t = await startTestDaemon({}, undefined, { format: 'json', level: 'warn', access: undefined });
  try {
    await t.anon.get('/api/health');
    await t.stop();
    const log = t.logs.join('');
    assert.not.match(log, '"level":"info"');
    assert.not.match(log, '"msg":"request"');
  } finally {
    await t.destroy();
  }
});

test('platform serve refuses an unknown log format or level (exit 2)', async () => {
  const { runCli } = await import('./helpers/cli.js');
  const format = await runCli(['serve', '--port', '0', '--data-dir', await tempDir(), '--log-format', 'xml']);
  assert.is(format.code, 2);
  assert.match(format.stderr, '--log-format / PLATFORM_LOG_FORMAT: must be json or text');
  const level = await runCli(['serve', '--port', '0', '--data-dir', await tempDir()], { env: { PLATFORM_LOG_LEVEL: 'loud' } });
  assert.is(level.code, 2);
  assert.match(level.stderr, 'must be debug, info, warn or error');
});

test.run();
