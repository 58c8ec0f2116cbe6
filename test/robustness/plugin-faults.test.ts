import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN } from '../helpers/daemon.js';
import { spawnDaemon } from '../helpers/cli.js';
import { createWorkspace, install, pluginsDirWith, publishExtension } from '../helpers/fixtures.js';
import { api, call, tokenOf } from '../helpers/http.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

test('plugin handlers that throw, hang, reject late or fail outside any request are contained', async () => {
  const daemon = await spawnDaemon(
    await tempDir(),
    {
      PLATFORM_ADMIN_EMAIL: ADMIN.email,
      PLATFORM_ADMIN_PASSWORD: ADMIN.password,
      PLATFORM_RETRY_SCHEDULE: '10',
      PLATFORM_HANDLER_TIMEOUT: '100',
    },
    ['--plugins-dir', await pluginsDirWith('faulty.mjs')],
  );
  try {
    const admin = api(daemon.url, tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
    await publishExtension(admin, 'faulty');
    await createWorkspace(admin, 'lab');
    await install(admin, 'lab', 'faulty');
    const kinds = ['throw', 'hang', 'late', 'stray', 'timer'];
    for (const kind of kinds) {
      const subscribed = await admin.post('/api/workspaces/lab/subscriptions', { eventKey: `fault.${kind}`, extensionKey: 'faulty', kind: 'IN_PROCESS' });
      assert.is(subscribed.status, 201, kind);
    }
    for (const kind of kinds) assert.is((await admin.post('/api/workspaces/lab/events/publish', { eventKey: `fault.${kind}` })).status, 200, kind);

    const letters = await waitFor('the failing handlers as dead letters', async () => {
      const list = (await admin.get('/api/admin/dead-letters?workspaceId=lab')).body.data;
      return list.length >= 3 && list;
    });
    const reasons = Object.fromEntries(letters.map((letter: { event: { eventKey: string }; lastError: { message: string } }) => [letter.event.eventKey, letter.lastError.message]));
    assert.is(reasons['fault.throw'], 'handler failed: thrown at once');
    assert.is(reasons['fault.hang'], 'handler failed: did not finish within 100 ms');
    assert.is(reasons['fault.late'], 'handler failed: did not finish within 100 ms');
    await waitFor('both stray failures in the log', () =>
      /a promise was rejected outside any request: nobody handles this rejection/.test(daemon.output()) &&
      /an exception was thrown outside any request: thrown from a timer/.test(daemon.output()),
    );
    // Both attempts of the late handler reject after their timeouts: the daemon must shrug that off too.
    await waitFor('the late rejections', () => daemon.output().split('faulty: rejecting late now').length - 1 >= 2);
    assert.is(daemon.child.exitCode, null, 'the daemon is still running');
    assert.is((await call(daemon.url, 'GET', '/api/health')).status, 200);
    assert.is((await admin.post('/api/workspaces/lab/events/publish', { eventKey: 'lab.still.works' })).status, 200);
  } finally {
    daemon.child.kill('SIGTERM');
    await daemon.exited;
  }
});

test.run();
