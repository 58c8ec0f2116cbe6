import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { startSubscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

/**
 * Every range --deny-private-targets refuses, written from the IANA IPv4 and
 * IPv6 Special-Purpose Address Registries independently of the daemon's table:
 * addresses inside it (its edges where they matter), and addresses just
 * outside it that are public, where its neighbours are ordinary addresses.
 */
const RANGES: Array<{ range: string; inside: string[]; outside?: string[] }> = [
  { range: '0.0.0.0/8 this network', inside: ['0.0.0.0', '0.255.255.255'], outside: ['1.0.0.1'] },
  { range: '10.0.0.0/8 private-use', inside: ['10.0.0.1', '10.255.255.255'], outside: ['9.255.255.254', '11.0.0.1'] },
  { range: '100.64.0.0/10 shared address space', inside: ['100.64.0.1', '100.127.255.254'], outside: ['100.63.255.254', '100.128.0.1'] },
  { range: '127.0.0.0/8 loopback', inside: ['127.0.0.1', '127.255.255.254'], outside: ['126.255.255.254', '128.0.0.1'] },
  { range: '169.254.0.0/16 link local', inside: ['169.254.169.254'], outside: ['169.253.255.254', '169.255.0.1'] },
  { range: '172.16.0.0/12 private-use', inside: ['172.16.0.1', '172.31.255.254'], outside: ['172.15.255.254', '172.32.0.1'] },
  { range: '192.0.0.0/24 IETF protocol assignments', inside: ['192.0.0.1', '192.0.0.9', '192.0.0.170', '192.0.0.255'], outside: ['191.255.255.254', '192.0.1.1'] },
  { range: '192.0.2.0/24 documentation', inside: ['192.0.2.1', '192.0.2.255'], outside: ['192.0.3.1'] },
  { range: '192.88.99.0/24 6to4 relay anycast', inside: ['192.88.99.1'], outside: ['192.88.98.254', '192.88.100.1'] },
  { range: '192.168.0.0/16 private-use', inside: ['192.168.0.1', '192.168.255.254'], outside: ['192.167.255.254', '192.169.0.1'] },
  { range: '198.18.0.0/15 benchmarking', inside: ['198.18.0.1', '198.19.255.254'], outside: ['198.17.255.254', '198.20.0.1'] },
  { range: '198.51.100.0/24 documentation', inside: ['198.51.100.7'], outside: ['198.51.99.254', '198.51.101.1'] },
  { range: '203.0.113.0/24 documentation', inside: ['203.0.113.9'], outside: ['203.0.112.254', '203.0.114.1'] },
  { range: '224.0.0.0/4 multicast', inside: ['224.0.0.1', '239.255.255.250'], outside: ['223.255.255.254'] },
  { range: '240.0.0.0/4 reserved', inside: ['240.0.0.1', '255.255.255.254'] },
  { range: '255.255.255.255/32 limited broadcast', inside: ['255.255.255.255'] },
  { range: '::/128 unspecified, ::1/128 loopback, ::/96 IPv4-compatible', inside: ['[::]', '[::1]', '[::7f00:1]', '[::808:808]'] },
  { range: '::ffff:0:0/96 IPv4-mapped, judged by its IPv4 address', inside: ['[::ffff:7f00:1]', '[::ffff:a00:1]'], outside: ['[::ffff:808:808]'] },
  { range: '::ffff:0:0:0/96 IPv4-translated', inside: ['[::ffff:0:7f00:1]', '[::ffff:0:808:808]'] },
  { range: '64:ff9b::/96 IPv4-IPv6 translation', inside: ['[64:ff9b::7f00:1]', '[64:ff9b::808:808]'] },
  { range: '64:ff9b:1::/48 IPv4-IPv6 translation, local use', inside: ['[64:ff9b:1::1]', '[64:ff9b:1:ffff::1]'] },
  { range: '100::/64 discard-only', inside: ['[100::1]', '[100::ffff:ffff:ffff:ffff]'] },
  { range: '100:0:0:1::/64 dummy prefix', inside: ['[100:0:0:1::1]'] },
  { range: '2001::/23 IETF protocol assignments, TEREDO 2001::/32', inside: ['[2001::1]', '[2001:0:ffff::1]', '[2001:2::1]', '[2001:1ff:ffff::1]'], outside: ['[2001:200::1]'] },
  { range: '2001:db8::/32 documentation', inside: ['[2001:db8::1]', '[2001:db8:ffff::1]'], outside: ['[2001:db7:ffff::1]', '[2001:db9::1]'] },
  { range: '2002::/16 6to4', inside: ['[2002:7f00:1::1]', '[2002:ffff::1]'], outside: ['[2001:ffff::1]', '[2003::1]'] },
  { range: '3fff::/20 documentation', inside: ['[3fff::1]', '[3fff:fff:ffff::1]'], outside: ['[3ffe:ffff::1]', '[3fff:1000::1]'] },
  { range: '5f00::/16 SRv6 SIDs', inside: ['[5f00::1]', '[5f00:ffff::1]'] },
  { range: 'fc00::/7 unique-local', inside: ['[fc00::1]', '[fdff:ffff::1]'] },
  { range: 'fe80::/10 link-local', inside: ['[fe80::1]', '[febf:ffff::1]'] },
  { range: 'fec0::/10 site-local', inside: ['[fec0::1]', '[feff:ffff::1]'] },
  { range: 'ff00::/8 multicast', inside: ['[ff02::1]', '[ffff::1]'] },
];

const REFUSED = [
  'http://localhost:9000', // a name that resolves to loopback
  ...RANGES.flatMap(({ inside }) => inside.map((address) => `http://${address}:8080`)),
];
const PUBLIC = [
  ...RANGES.flatMap(({ outside }) => (outside ?? []).map((address) => `http://${address}:8080`)),
  'http://8.8.8.8',
  'http://[2606:4700:4700::1111]',
];

test('--deny-private-targets refuses every non-public range at subscription time', async () => {
  const t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, denyPrivateTargets: true } });
  try {
    const admin = await t.admin();
    await workspaceWith(admin, 'acme', 'crm');
    const subscribe = (serviceBaseUrl: string) =>
      admin.post('/api/workspaces/acme/subscriptions', { eventKey: 'crm.deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl });
    for (const url of REFUSED) {
      const refused = await subscribe(url);
      assert.is(refused.status, 400, url);
      assert.match(refused.body.message ?? '', 'deny-private-targets', url);
    }
    for (const url of PUBLIC) assert.is((await subscribe(url)).status, 201, `${url} is public`);
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
