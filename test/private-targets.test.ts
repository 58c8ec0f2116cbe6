import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { startSubscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

/** One address in each range --deny-private-targets must refuse: the classic private ones, and the others that are not public. */
const REFUSED = [
  'http://127.0.0.1:9000', // loopback
  'http://localhost:9000', // a name that resolves to loopback
  'http://[::1]:9000',
  'http://10.1.2.3', // RFC 1918
  'http://192.168.0.10:8080',
  'http://169.254.169.254', // link-local (cloud metadata)
  'http://[::7f00:1]:8080', // ::/96, IPv4-compatible
  'http://[64:ff9b::7f00:1]', // 64:ff9b::/96, NAT64
  'http://100.64.0.1', // 100.64.0.0/10, shared address space
  'http://198.18.0.1', // 198.18.0.0/15, benchmarking
  'http://198.19.255.254',
  'http://224.0.0.1', // 224.0.0.0/4, multicast
  'http://239.255.255.250',
  'http://240.0.0.1', // 240.0.0.0/4, reserved
  'http://255.255.255.255', // broadcast
  'http://[2002:7f00:1::1]', // 2002::/16, 6to4
  'http://[::ffff:0:7f00:1]', // ::ffff:0:0:0/96, IPv4-translated
  'http://[::ffff:7f00:1]', // IPv4-mapped loopback
];

test('--deny-private-targets refuses every non-public range at subscription time', async () => {
  const t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, denyPrivateTargets: true } });
  try {
    const admin = await t.admin();
    await workspaceWith(admin, 'acme', 'crm');
    for (const url of REFUSED) {
      const refused = await admin.post('/api/workspaces/acme/subscriptions', {
        eventKey: 'crm.deal.closed',
        extensionKey: 'crm',
        kind: 'EXTERNAL_SERVICE',
        serviceBaseUrl: url,
      });
      assert.is(refused.status, 400, url);
      assert.match(refused.body.message ?? '', 'deny-private-targets', url);
    }
    const publicUrl = await admin.post('/api/workspaces/acme/subscriptions', {
      eventKey: 'crm.deal.closed',
      extensionKey: 'crm',
      kind: 'EXTERNAL_SERVICE',
      serviceBaseUrl: 'http://198.20.0.1',
    });
    assert.is(publicUrl.status, 201, 'just outside 198.18.0.0/15 is public');
  } finally {
    await t.destroy();
  }
});

test('--deny-private-targets refuses every non-public range at connection time, without retrying', async () => {
  // Subscribed while allowed; the operator turns the option on afterwards. One subscriber listens, to see that nothing reaches it.
  const local = await startSubscriber();
  const refused = [...REFUSED, local.url];
  const open = await startTestDaemon({ dispatch: FAST_DISPATCH });
  const admin = await open.admin();
  await workspaceWith(admin, 'acme', 'crm');
  for (const url of refused) await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', url);
  const guarded = await open.restart({ dispatch: { ...FAST_DISPATCH, denyPrivateTargets: true } });
  try {
    const admin = await guarded.admin();
    assert.is((await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed' })).status, 200);
    const letters = await waitFor('every delivery dead-lettered', async () => {
      const list = (await admin.get('/api/admin/dead-letters?workspaceId=acme&limit=100')).body.data;
      return list.length === refused.length && list;
    });
    for (const letter of letters) {
      const url = letter.subscriber.serviceBaseUrl;
      assert.match(letter.lastError.message, 'refused by --deny-private-targets', url);
      assert.is(letter.attempts, 1, `${url}: not retried, the address will not become public by waiting`);
    }
    assert.is(local.received.length, 0, 'nothing reached the listening subscriber');
  } finally {
    await guarded.destroy();
    await local.close();
  }
});

test.run();
