import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN } from './helpers/daemon.js';
import { SHORT_DELIVERY_LEASE, spawnDaemon } from './helpers/cli.js';
import { publishExtension, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { api, call, tokenOf, type Api } from './helpers/http.js';
import { startSubscriber } from './helpers/subscriber.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

// One retry, late enough that the daemon is killed between the two attempts.
const env = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, PLATFORM_RETRY_SCHEDULE: '1500', ...SHORT_DELIVERY_LEASE };

const login = async (url: string): Promise<Api> => api(url, tokenOf(await call(url, 'POST', '/api/auth/login', { json: ADMIN })));

test('SIGKILL between two attempts loses no record, and the next attempt is recorded after the restart', async () => {
  const dir = await tempDir();
  const receiver = await startSubscriber((_, index) => ({ status: index === 0 ? 500 : 200 }));
  const daemon = await spawnDaemon(dir, env);
  let restarted: Awaited<ReturnType<typeof spawnDaemon>> | undefined;
  try {
    const admin = await login(daemon.url);
    await publishExtension(admin, 'crm');
    await workspaceWith(admin, 'crash', 'crm');
    await subscribeExternal(admin, 'crash', 'crm.deal.closed', 'crm', receiver.url);
    const eventIds: string[] = [];
    for (let n = 0; n < 3; n += 1) {
      eventIds.push((await admin.post('/api/workspaces/crash/events/publish', { eventKey: 'crm.deal.closed', payload: { n } })).body.meta.eventId);
    }
    await waitFor('a first attempt recorded', async () => {
      const shown = (await admin.get(`/api/workspaces/crash/events/${eventIds[0]}`)).body.data;
      return shown.deliveries[0].attempts.length === 1;
    });
    daemon.child.kill('SIGKILL');
    assert.is(await daemon.exited, 'SIGKILL');

    restarted = await spawnDaemon(dir, env);
    const after = await login(restarted.url);
    for (const eventId of eventIds) {
      const shown = await waitFor(`${eventId} delivered after the restart`, async () => {
        const data = (await after.get(`/api/workspaces/crash/events/${eventId}`)).body.data;
        return data.deliveries[0]?.status === 'SUCCEEDED' && data;
      });
      assert.is(shown.deliveries.length, 1, 'the record survived, once');
      const attempts = shown.deliveries[0].attempts;
      assert.equal(attempts.map((a: any) => a.number), attempts.map((_: unknown, index: number) => index + 1));
      assert.is(attempts.at(-1).outcome, 'SUCCESS', 'the attempt after the restart is recorded');
    }
    const listed = (await after.get('/api/workspaces/crash/deliveries')).body.data as any[];
    assert.is(listed.length, 3);
  } finally {
    if (restarted) {
      restarted.child.kill('SIGTERM');
      await restarted.exited;
    }
    await receiver.close();
  }
});

test.run();
