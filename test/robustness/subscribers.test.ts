import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FAST_DISPATCH, createWorkspace, install, publishExtension, subscribeExternal } from '../helpers/fixtures.js';
import type { Api } from '../helpers/http.js';
import { answerTenMegabytes, startSubscriber } from '../helpers/subscriber.js';
import { waitFor } from '../helpers/wait.js';

/** A subscriber misbehaving at the socket level, which the scripted helper cannot do. */
async function misbehaving(behaviour: 'close-mid-answer' | 'ten-megabytes'): Promise<{ url: string; server: Server; requests: () => number }> {
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      if (behaviour === 'close-mid-answer') {
        res.writeHead(200, { 'content-length': '1000' });
        res.write('{"partial":');
        setTimeout(() => res.socket?.destroy(), 5);
        return;
      }
      answerTenMegabytes(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server, requests: () => requests };
}

async function setUp(t: TestDaemon): Promise<Api> {
  const admin = await t.admin();
  await publishExtension(admin, 'crm');
  await createWorkspace(admin, 'acme');
  await install(admin, 'acme', 'crm');
  return admin;
}

test('a hanging, a slow, a disconnecting and a 10 MB subscriber do not hold up a healthy one', async () => {
  const hanging = await startSubscriber(() => ({ hang: true }));
  const slowServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.end(), 1500));
  });
  await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve));
  const slowUrl = `http://127.0.0.1:${(slowServer.address() as { port: number }).port}`;
  const disconnecting = await misbehaving('close-mid-answer');
  const huge = await misbehaving('ten-megabytes');
  const healthy = await startSubscriber();
  // The daemon runs in this process, after every test file before this one: its growth is what counts.
  const baselineMb = process.memoryUsage().rss / 1048576;
  const t = await startTestDaemon({ dispatch: { ...FAST_DISPATCH, retrySchedule: [60_000], deliveryTimeoutMs: 30_000 } });
  try {
    const admin = await setUp(t);
    for (const url of [hanging.url, slowUrl, disconnecting.url, huge.url, healthy.url]) {
      await subscribeExternal(admin, 'acme', 'crm.deal.closed', 'crm', url);
    }
    const events = 120;
    for (let i = 0; i < events; i += 1) await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'crm.deal.closed', payload: { i } });

    await waitFor('every event at the healthy subscriber', () => healthy.deliveredEventIds().size === events, 20_000);
    const status = (await admin.get('/api/admin/status')).body.data;
    assert.ok(status.inFlightDeliveries > 0, 'the hanging and slow deliveries are still in flight meanwhile');
    assert.ok(hanging.received.length <= 8, `the hanging subscriber holds ${hanging.received.length} slots, at most a quarter`);
    assert.ok(huge.requests() > 0 && disconnecting.requests() > 0);
    const grownMb = process.memoryUsage().rss / 1048576 - baselineMb;
    console.log(`  (test process RSS ${baselineMb.toFixed(0)} MB before, ${grownMb.toFixed(0)} MB more after)`);
    assert.ok(grownMb < 512, `the 10 MB answers were not buffered (test process RSS grew by ${grownMb.toFixed(0)} MB from ${baselineMb.toFixed(0)} MB)`);
  } finally {
    await t.destroy();
    await hanging.close();
    await healthy.close();
    slowServer.closeAllConnections();
    slowServer.close();
    for (const bad of [disconnecting, huge]) {
      bad.server.closeAllConnections();
      bad.server.close();
    }
  }
});

test.run();
