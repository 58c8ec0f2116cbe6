import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { createWorkspace } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { filesOnly } from './helpers/postgres.js';

const BUDGET = { bytesTotal: 1024 * 1024, bytesPerWorkspace: 400 * 1024 };

let t: TestDaemon;
let admin: Api;
const published = new Map<string, string[]>();

const recentBytes = () => t.daemon.services.recentEventBytes?.() ?? 0;

async function publishLarge(workspace: string, n: number): Promise<void> {
  const result = await admin.post(`/api/workspaces/${workspace}/events/publish`, {
    eventKey: n % 2 === 0 ? 'big.even' : 'big.odd',
    payload: { n, pad: String(n % 10).repeat(100_000) },
  });
  assert.is(result.status, 200, result.text);
  published.set(workspace, [...(published.get(workspace) ?? []), result.body.meta.eventId]);
}

test.before(async () => {
  t = await startTestDaemon({ recentEventsMemory: BUDGET });
  admin = await t.admin();
  for (const workspace of ['alpha', 'beta', 'gamma']) await createWorkspace(admin, workspace);
});
test.after(async () => {
  await t.destroy();
});

test('many large payloads in one workspace keep the recent-events memory within its budget for a workspace', async () => {
  for (let n = 0; n < 12; n += 1) {
    await publishLarge('alpha', n);
    assert.ok(recentBytes() <= BUDGET.bytesPerWorkspace, `one workspace: ${recentBytes()} bytes held`);
  }
});

filesOnly(test)('the recent-events memory is used, not emptied (files only: on PostgreSQL a daemon keeps no events in memory, it lists them from the database)', () => {
  assert.ok(recentBytes() > BUDGET.bytesPerWorkspace - 120_000, `${recentBytes()} bytes held`);
});

test('many large payloads in several workspaces keep the recent-events memory within its total budget', async () => {
  for (let n = 0; n < 12; n += 1) {
    for (const workspace of ['beta', 'gamma']) {
      await publishLarge(workspace, n);
      assert.ok(recentBytes() <= BUDGET.bytesTotal, `all workspaces: ${recentBytes()} bytes held`);
    }
  }
});

async function assertListedInFull(workspace: string): Promise<void> {
  const ids = published.get(workspace)!;
  const listed = await admin.get(`/api/workspaces/${workspace}/events?limit=1000`);
  assert.is(listed.status, 200);
  assert.equal(listed.body.data.map((event: { id: string }) => event.id), [...ids].reverse(), `${workspace}: every event, newest first`);
  listed.body.data.forEach((event: { payload: { n: number; pad: string } }, index: number) => {
    const n = ids.length - 1 - index;
    assert.is(event.payload.n, n);
    assert.is(event.payload.pad, String(n % 10).repeat(100_000));
  });
  const odd = await admin.get(`/api/workspaces/${workspace}/events?eventKey=big.odd&limit=4`);
  assert.equal(
    odd.body.data.map((event: { payload: { n: number } }) => event.payload.n),
    [11, 9, 7, 5],
    `${workspace}: filtered and limited across memory and disk`,
  );
  const page = await admin.get(`/api/workspaces/${workspace}/events?limit=7`);
  assert.equal(page.body.data.map((event: { id: string }) => event.id), [...ids].reverse().slice(0, 7));
}

test('listing still returns every event, reading those memory dropped from where they are stored', async () => {
  for (const workspace of ['alpha', 'beta', 'gamma']) await assertListedInFull(workspace);
});

test('after a restart, memory stays within the budget and listing is unchanged', async () => {
  t = await t.restart();
  admin = await t.admin();
  assert.ok(recentBytes() <= BUDGET.bytesTotal, `${recentBytes()} bytes held after the start`);
  for (const workspace of ['alpha', 'beta', 'gamma']) await assertListedInFull(workspace);
});

test.run();
