import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace, FAST_DISPATCH } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { freePort } from './helpers/ports.js';
import { waitFor } from './helpers/wait.js';

/**
 * The extension developer's guide's example service (examples/extension-service.mjs),
 * run as docs/extensions.md says: it receives a delivery, verifies it, and
 * publishes an event back with its installation token.
 */

const EXAMPLE = fileURLToPath(new URL('../examples/extension-service.mjs', import.meta.url));

let t: TestDaemon;
let admin: Api;

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
});
test.after(async () => {
  await t.destroy();
});

test('the example service verifies a delivery and publishes an event back with its installation token', async () => {
  assert.is((await admin.post('/api/admin/marketplace/extensions', { extensionKey: 'crm-sync', name: 'CRM sync' })).status, 201);
  const manifest = {
    manifestVersion: 1,
    extensionKey: 'crm-sync',
    version: '1.0.0',
    publishes: [
      {
        eventKey: 'crm-sync.customer.updated',
        schemaVersion: '1',
        schema: { type: 'object', required: ['customer', 'lastOrderId'], properties: { customer: { type: 'string' }, lastOrderId: { type: 'string' } } },
      },
    ],
    subscribes: [{ eventKey: 'shop.order.paid', kind: 'EXTERNAL_SERVICE' }],
  };
  const published = await admin.post('/api/admin/marketplace/extensions/crm-sync/versions', { version: '1.0.0', artifactUrl: 'https://example.test/crm-sync.tgz', manifest });
  assert.is(published.status, 201, published.text);
  await createWorkspace(admin, 'shop');
  const port = await freePort();
  const installed = await admin.post('/api/workspaces/shop/extensions', { extensionKey: 'crm-sync', serviceBaseUrl: `http://127.0.0.1:${port}` });
  assert.is(installed.status, 201, installed.text);
  const { installationToken, subscriptions } = installed.body.data;

  const service = spawn(process.execPath, [EXAMPLE], {
    env: { PATH: process.env.PATH ?? '', PLATFORM_URL: t.url, SIGNING_SECRET: subscriptions[0].signingSecret, INSTALLATION_TOKEN: installationToken, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  service.stdout.on('data', (chunk) => (output += chunk));
  service.stderr.on('data', (chunk) => (output += chunk));
  try {
    await waitFor('the example service listening', () => output.includes('listening on'));
    const forged = await fetch(`http://127.0.0.1:${port}/events`, {
      method: 'POST',
      headers: { 'webhook-id': 'msg_forged', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
      body: '{"eventKey":"shop.order.paid"}',
    });
    assert.is(forged.status, 401, 'a body the platform did not sign is refused');

    const paid = await admin.post('/api/workspaces/shop/events/publish', { eventKey: 'shop.order.paid', payload: { orderId: 'O-7', customer: 'ACME Ltd' } });
    assert.is(paid.status, 200, paid.text);
    const updated = await waitFor('the event the service published back', async () => {
      const events = (await admin.get('/api/workspaces/shop/events?eventKey=crm-sync.customer.updated')).body.data;
      return events[0];
    });
    assert.equal([updated.publishedBy, updated.actor, updated.payload], ['extension:crm-sync', 'crm-sync', { customer: 'ACME Ltd', lastOrderId: 'O-7' }], output);
    const delivery = (await admin.get(`/api/workspaces/shop/events/${paid.body.meta.eventId}`)).body.data.deliveries[0];
    assert.is(delivery.status, 'SUCCEEDED');
  } finally {
    service.kill();
  }
});

test.run();
