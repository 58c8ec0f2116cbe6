import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, publishExtension } from './helpers/fixtures.js';
import { freshDatabase } from './helpers/postgres.js';
import { openStream, type Item } from './helpers/streams.js';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js';
import { waitFor } from './helpers/wait.js';

// PostgreSQL only (npm test runs it on the PostgreSQL pass): the database goes away under a
// running daemon. The daemon reaches it through a TCP proxy that the test cuts and restores;
// a second daemon reaches it directly and keeps working meanwhile.

const masterKey = randomBytes(32).toString('base64');
let proxy: TcpProxy;
let cutOff: TestDaemon;
let direct: TestDaemon;

test.before(async () => {
  const url = await freshDatabase();
  proxy = await startTcpProxy(Number(new URL(url).port));
  const proxied = new URL(url);
  proxied.port = String(proxy.port);
  direct = await startTestDaemon({ database: { url, schema: 'platform' }, masterKey });
  cutOff = await startTestDaemon({ database: { url: proxied.toString(), schema: 'platform' }, masterKey });
});
test.after(async () => {
  await cutOff.destroy();
  await direct.destroy();
  await proxy.close();
});

test('while the database cannot be reached: ready and requests answer 503 UNAVAILABLE, nothing is written; then the daemon reconnects by itself and hears what changed meanwhile', async () => {
  const user = await createUser(direct, 'outage@example.test');
  const onCutOff = await cutOff.as('outage@example.test', user.password);
  assert.is((await cutOff.anon.get('/api/health/ready')).status, 200);
  assert.is((await onCutOff.get('/api/auth/me')).status, 200);
  const adminOnCutOff = await cutOff.admin();

  proxy.cut();
  const notReady = await waitFor('readiness to fail', async () => {
    const result = await cutOff.anon.get('/api/health/ready');
    return result.status === 503 ? result : null;
  });
  assert.is(notReady.body.code, 'UNAVAILABLE');
  assert.match(String(notReady.body.message), 'the database cannot be reached');
  const read = await onCutOff.get('/api/auth/me');
  assert.is(read.status, 503);
  assert.is(read.body.code, 'UNAVAILABLE');
  const login = await cutOff.anon.post('/api/auth/login', { email: 'outage@example.test', password: user.password });
  assert.is(login.status, 503, login.text);
  const write = await adminOnCutOff.post('/api/admin/users', { email: 'away@example.test', fullName: 'Away', password: 'user-password-1' });
  assert.is(write.status, 503, write.text);
  assert.is(write.body.code, 'UNAVAILABLE');
  assert.is((await (await direct.admin()).get('/api/admin/users')).status, 200, 'the other daemon still serves');
  await publishExtension(await direct.admin(), 'while-away', '1.0.0');

  proxy.restore();
  await waitFor('readiness to come back', async () => (await cutOff.anon.get('/api/health/ready')).status === 200);
  assert.is((await onCutOff.get('/api/auth/me')).status, 200, 'the same session works again');
  const users = (await adminOnCutOff.get('/api/admin/users')).body.data as Array<{ email: string }>;
  assert.not.ok(users.some((listed) => listed.email === 'away@example.test'), 'the refused write left nothing');
  await waitFor('the change made meanwhile in its search', async () => {
    const result = await cutOff.anon.get('/api/marketplace/extensions?search=while-away');
    return result.body.data.length === 1;
  });
});

test('a live stream on a daemon cut off from the database gets, once it reconnects, what other daemons did meanwhile', async () => {
  const admin = await direct.admin();
  await createWorkspace(admin, 'outage');
  const path = '/api/workspaces/outage/stream';
  const stream = await openStream(cutOff.url, path, admin.token);
  const observer = await openStream(direct.url, path, admin.token);
  const publish = async (n: number) => {
    const published = await admin.post('/api/workspaces/outage/events/publish', { eventKey: 'app.step', payload: { n } });
    assert.is(published.status, 200, published.text);
  };
  await publish(1);
  await waitFor('the first item on the cut-off daemon', () => stream.items.length === 1 || undefined);

  proxy.cut();
  await waitFor('readiness to fail', async () => (await cutOff.anon.get('/api/health/ready')).status === 503);
  for (const n of [2, 3, 4]) await publish(n);
  await waitFor('the items on the other daemon', () => observer.items.length === 4 || undefined);

  proxy.restore();
  await waitFor('the items of the outage', () => stream.items.length === 4 || undefined);
  const ids = (items: Item[]) => items.map((item) => item.id);
  assert.equal(ids(stream.items), ids(observer.items));
  stream.close();
  observer.close();
});

test.run();
