import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon } from './helpers/daemon.js';
import { createWorkspace } from './helpers/fixtures.js';

test('a publish after retention ran on an empty log answers 200, lists, and is stored once', async () => {
  const t = await startTestDaemon();
  try {
    const admin = await t.admin();
    await createWorkspace(admin, 'fresh');
    await t.daemon.services.events.applyRetention();
    const published = await admin.post('/api/workspaces/fresh/events/publish', { eventKey: 'crm.deal.closed', payload: { n: 1 } });
    assert.is(published.status, 200, published.text);
    const listed = (await admin.get('/api/workspaces/fresh/events')).body.data;
    assert.equal(listed.map((event: { id: string }) => event.id), [published.body.meta.eventId]);
  } finally {
    await t.destroy();
  }
});

test.run();
