import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN } from './helpers/daemon.js';
import { SHORT_DELIVERY_LEASE, spawnDaemon } from './helpers/cli.js';
import { publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { api, call, tokenOf } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

const env = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, PLATFORM_RETRY_SCHEDULE: '20,20,20', ...SHORT_DELIVERY_LEASE };

test('SIGKILL in the middle of a burst of publishes: every acknowledged event is delivered after the restart, once', async () => {
  const dir = await tempDir();
  // The subscriber does not answer until the crash, so deliveries are still pending when the daemon dies.
  const receiver = await startSubscriber(() => ({ hang: true }));
  const daemon = await spawnDaemon(dir, env);
  const admin = api(daemon.url, tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
  await publishExtension(admin, 'crm');
  await workspaceWith(admin, 'burst', 'crm');
  await subscribeExternal(admin, 'burst', 'crm.deal.closed', 'crm', receiver.url);

  const acknowledged = new Set<string>();
  let killed = false;
  const publisher = async (worker: number) => {
    for (let i = 0; !killed; i += 1) {
      try {
        const result = await admin.post('/api/workspaces/burst/events/publish', { eventKey: 'crm.deal.closed', payload: { worker, i } });
        if (result.status === 200) acknowledged.add(result.body.meta.eventId);
      } catch {
        return; // the connection died with the daemon: that publish was never acknowledged
      }
    }
  };
  const publishers = Array.from({ length: 8 }, (_, worker) => publisher(worker));
  await waitFor('200 acknowledged publishes', () => acknowledged.size >= 200);
  daemon.child.kill('SIGKILL');
  killed = true;
  assert.is(await daemon.exited, 'SIGKILL');
  await Promise.all(publishers);
  const acknowledgedBeforeRestart = [...acknowledged];

  receiver.answer(() => ({ status: 200 }));
  const restarted = await spawnDaemon(dir, env);
  try {
    await waitFor(
      `all ${acknowledgedBeforeRestart.length} acknowledged events at the subscriber`,
      () => {
        const delivered = receiver.deliveredEventIds();
        return acknowledgedBeforeRestart.every((id) => delivered.has(id));
      },
      30_000,
    );
    const restartedAdmin = api(restarted.url, tokenOf(await call(restarted.url, 'POST', '/api/auth/login', { json: ADMIN })));
    await waitFor('an empty outbox', async () => (await restartedAdmin.get('/api/admin/status')).body.data.pendingDeliveries === 0);
    const successes = new Map<string, number>();
    for (const delivery of receiver.received) {
      if (delivery.status !== undefined && delivery.status < 300) successes.set(delivery.json.id, (successes.get(delivery.json.id) ?? 0) + 1);
    }
    assert.equal(
      acknowledgedBeforeRestart.filter((id) => successes.get(id) !== 1),
      [],
      'no delivery is attempted again once it succeeded',
    );
    const status = (await restartedAdmin.get('/api/admin/status')).body.data;
    assert.is(status.deadLetters, 0);
    assert.ok(status.eventsStored >= acknowledgedBeforeRestart.length, 'every acknowledged event is in the log');
    console.log(`  (${acknowledgedBeforeRestart.length} acknowledged before SIGKILL, all delivered after restart)`);
  } finally {
    restarted.child.kill('SIGTERM');
    await restarted.exited;
    await receiver.close();
  }
});

test.run();
