import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from './helpers/cli.js';
import { createUser, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { FAST_DISPATCH, createWorkspace, publishExtension, subscribeExternal } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { endOf, openStream, tail, type Item, type Tail } from './helpers/streams.js';
import { startSubscriber, type Subscriber } from './helpers/subscriber.js';
import { waitFor } from './helpers/wait.js';

let t: TestDaemon;
let admin: Api & { token: string };
let subscriber: Subscriber;
/** Its keep-alive (which also checks the caller) never comes in a test: revocation must end a stream as it happens. */
let quiet: TestDaemon;
let quietAdmin: Api & { token: string };

const publish = (workspace: string, eventKey: string, payload: Record<string, unknown> = {}, client: Api = admin) =>
  client.post(`/api/workspaces/${workspace}/events/publish`, { eventKey, payload });

const assertIncreasing = (items: Item[]) => {
  for (let index = 1; index < items.length; index += 1) assert.ok(items[index]!.id > items[index - 1]!.id, 'ids increase');
};

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH, streamHeartbeatMs: 100 });
  admin = await t.admin();
  // Failing deliveries of crm.fail run the retry ladder to a dead letter; the rest succeed.
  subscriber = await startSubscriber((request) => ({ status: request.body.includes('crm.fail') ? 500 : 200 }));
  await publishExtension(admin, 'crm');
  for (const workspace of ['live', 'other']) {
    await createWorkspace(admin, workspace);
    await admin.post(`/api/workspaces/${workspace}/extensions`, { extensionKey: 'crm' });
  }
  const credentialed = subscriber.url.replace('http://', 'http://hook-user:hook-pass@');
  for (const eventKey of ['crm.ok', 'crm.fail']) await subscribeExternal(admin, 'live', eventKey, 'crm', credentialed);
  quiet = await startTestDaemon({ streamHeartbeatMs: 3_600_000 });
  quietAdmin = await quiet.admin();
  for (const workspace of ['live', 'doomed']) await createWorkspace(quietAdmin, workspace);
});
test.after(async () => {
  await subscriber.close();
  await t.destroy();
  await quiet.destroy();
});

test('a workspace stream and the admin stream carry every kind of item, with increasing ids and no secrets', async () => {
  const member = await createUser(t, 'watcher@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/live/members/${member.id}`)).status, 200);
  const workspaceStream = await openStream(t.url, '/api/workspaces/live/stream', member.token);
  const adminStream = await openStream(t.url, '/api/admin/stream', admin.token);
  assert.is(workspaceStream.status, 200);
  assert.match(workspaceStream.response.headers['content-type'] ?? '', /^text\/event-stream/);

  const ok = (await publish('live', 'crm.ok', { n: 1 })).body.meta.eventId as string;
  const failed = (await publish('live', 'crm.fail', { n: 2 })).body.meta.eventId as string;
  const elsewhere = (await publish('other', 'crm.ok')).body.meta.eventId as string;

  for (const stream of [workspaceStream, adminStream]) {
    await waitFor('the dead letter on the stream', () => stream.items.some((item) => item.event === 'delivery.dead') || undefined);
    const published = stream.items.filter((item) => item.event === 'event.published').map((item) => item.data.id);
    assert.ok(published.includes(ok) && published.includes(failed));
    const succeeded = stream.items.find((item) => item.event === 'delivery.succeeded')!;
    assert.is(succeeded.data.eventId, ok);
    assert.is(succeeded.data.eventKey, 'crm.ok');
    assert.is(succeeded.data.workspaceId, 'live');
    assert.is(succeeded.data.kind, 'EXTERNAL_SERVICE');
    assert.is(succeeded.data.attempts, 1);
    const retrying = stream.items.filter((item) => item.event === 'delivery.retrying');
    assert.is(retrying.length, FAST_DISPATCH.retrySchedule.length);
    assert.is(retrying[0]!.data.httpStatus, 500);
    assert.ok(Date.parse(retrying[0]!.data.nextAttemptAt) > 0);
    const dead = stream.items.find((item) => item.event === 'delivery.dead')!;
    assert.is(dead.data.eventId, failed);
    assert.is(dead.data.attempts, FAST_DISPATCH.retrySchedule.length + 1);
    assertIncreasing(stream.items);
    assert.not.match(stream.text(), 'hook-pass');
    assert.not.match(stream.text(), 'whsec');
  }
  assert.not.ok(workspaceStream.items.some((item) => item.data.id === elsewhere || item.data.eventId === elsewhere), 'only its workspace');
  await waitFor('the other workspace on the admin stream', () => adminStream.items.some((item) => item.data.id === elsewhere) || undefined);
  workspaceStream.close();
  adminStream.close();
});

test('enabling or disabling a subscription by hand shows on the workspace and admin streams, without its URL', async () => {
  const workspaceStream = await openStream(t.url, '/api/workspaces/live/stream', admin.token);
  const adminStream = await openStream(t.url, '/api/admin/stream', admin.token);
  const otherStream = await openStream(t.url, '/api/workspaces/other/stream', admin.token);
  const subscriptions = (await admin.get('/api/workspaces/live/subscriptions')).body.data as Array<{ id: string; eventKey: string }>;
  const { id } = subscriptions.find((subscription) => subscription.eventKey === 'crm.ok')!;
  const change = (enabled: boolean) => admin.patch(`/api/workspaces/live/subscriptions/${id}`, { enabled });
  assert.is((await change(false)).status, 200);
  assert.is((await change(false)).status, 200, 'disabling it again changes nothing');
  assert.is((await change(true)).status, 200);
  const base = { subscriptionId: id, workspaceId: 'live', eventKey: 'crm.ok', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE' };
  const expected = [
    { ...base, enabled: false, disabledReason: 'disabled by an administrator' },
    { ...base, enabled: true, disabledReason: null },
  ];
  for (const stream of [workspaceStream, adminStream]) {
    const changes = await waitFor('both changes on the stream', () => {
      const seen = stream.items.filter((item) => item.event === 'subscription.changed');
      return seen.length === 2 && seen;
    });
    assert.equal(changes.map((item) => item.data), expected);
    assert.not.match(stream.text(), 'hook-pass');
    assert.not.match(stream.text(), subscriber.url.replace('http://', ''));
  }
  assert.is(otherStream.items.length, 0, 'not on the stream of another workspace');
  for (const stream of [workspaceStream, adminStream, otherStream]) stream.close();
});

test('streams refuse non-members (403), unknown workspaces (404), non-admins on the admin stream and bad ids', async () => {
  const outsider = await createUser(t, 'outsider@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/other/members/${outsider.id}`)).status, 200);
  assert.is((await outsider.get('/api/workspaces/live/stream')).status, 403);
  assert.is((await outsider.get('/api/admin/stream')).status, 403);
  assert.is((await admin.get('/api/workspaces/nowhere/stream')).status, 404);
  assert.is((await t.anon.get('/api/workspaces/live/stream')).status, 401);
  const badId = await admin.get('/api/admin/stream', { headers: { 'last-event-id': 'yesterday' } });
  assert.is(badId.status, 400);
  assert.is(badId.body.code, 'VALIDATION_ERROR');
});

test('Last-Event-ID resumes with exactly what was missed', async () => {
  await createWorkspace(admin, 'resume');
  const first = await openStream(t.url, '/api/workspaces/resume/stream', admin.token);
  await publish('resume', 'app.before');
  await waitFor('the first item', () => first.items[0]);
  first.close();
  const missed = [];
  for (let n = 0; n < 3; n += 1) missed.push((await publish('resume', 'app.missed', { n })).body.meta.eventId);
  const resumed = await openStream(t.url, '/api/workspaces/resume/stream', admin.token, first.items[0]!.id);
  await waitFor('the missed items', () => resumed.items.length >= 3 || undefined);
  assert.equal(
    resumed.items.map((item) => item.data.id),
    missed,
  );
  assertIncreasing([first.items[0]!, ...resumed.items]);
  const live = (await publish('resume', 'app.after')).body.meta.eventId;
  await waitFor('the live item after the replay', () => resumed.items.length === 4 || undefined);
  assert.is(resumed.items[3]!.data.id, live);
  resumed.close();
});

test('a Last-Event-ID older than the kept history gets every item kept: the latest 1,000', async () => {
  const own = await startTestDaemon();
  try {
    const ownAdmin = await own.admin();
    await createWorkspace(ownAdmin, 'busy');
    const watcher = await openStream(own.url, '/api/admin/stream', ownAdmin.token);
    const total = 1_010;
    for (let from = 0; from < total; from += 10) {
      const published = await Promise.all(Array.from({ length: 10 }, (_, n) => publish('busy', 'app.many', { n: from + n }, ownAdmin)));
      assert.ok(published.every((result) => result.status === 200));
    }
    await waitFor('every item on the watching stream', () => watcher.items.length === total || undefined);
    watcher.close();
    const resumed = await openStream(own.url, '/api/admin/stream', ownAdmin.token, watcher.items[0]!.id);
    await waitFor('the kept items', () => resumed.items.length >= 1_000 || undefined);
    assert.equal(
      resumed.items.map((item) => item.id),
      watcher.items.slice(-1_000).map((item) => item.id),
    );
    resumed.close();
  } finally {
    await own.destroy();
  }
});

test('a Last-Event-ID ahead of every id given out gets no history, then every new item', async () => {
  await createWorkspace(admin, 'ahead');
  await publish('ahead', 'app.before');
  const stream = await openStream(t.url, '/api/workspaces/ahead/stream', admin.token, '9000000000000000');
  const live = (await publish('ahead', 'app.live')).body.meta.eventId;
  await waitFor('the new item', () => stream.items[0]);
  assert.equal(
    stream.items.map((item) => item.data.id),
    [live],
  );
  stream.close();
});

test('heartbeat comments arrive', async () => {
  const stream = await openStream(t.url, '/api/admin/stream', admin.token);
  await waitFor('a heartbeat', () => stream.comments.includes('keep-alive') || undefined);
  stream.close();
});

async function quietMember(email: string, workspace = 'live') {
  const user = await createUser(quiet, email);
  assert.is((await quietAdmin.put(`/api/admin/workspaces/${workspace}/members/${user.id}`)).status, 200);
  return user;
}

test('logging out, changing the password or losing the membership ends the stream at once', async () => {
  const member = await quietMember('leaver@example.test');
  const session = await quiet.as('leaver@example.test', member.password);
  const loggedOut = await openStream(quiet.url, '/api/workspaces/live/stream', session.token);
  const removed = await openStream(quiet.url, '/api/workspaces/live/stream', member.token);
  assert.is(loggedOut.status, 200);
  assert.is(removed.status, 200);

  assert.is((await session.post('/api/auth/logout')).status, 200);
  assert.equal(await endOf(loggedOut), { clean: true });
  assert.ok(loggedOut.comments.some((comment) => comment.startsWith('closed:')), loggedOut.comments.join('|'));
  assert.not.ok(removed.response.complete, 'the other session stays');

  assert.is((await quietAdmin.delete(`/api/admin/workspaces/live/members/${member.id}`)).status, 204);
  assert.equal(await endOf(removed), { clean: true });
  assert.ok(removed.comments.some((comment) => comment.includes('membership')), removed.comments.join('|'));

  const changer = await quietMember('changer@example.test');
  const changing = await openStream(quiet.url, '/api/workspaces/live/stream', changer.token);
  const changed = await changer.put('/api/auth/me/password', { currentPassword: changer.password, newPassword: 'another-password-2' });
  assert.is(changed.status, 200, changed.text);
  assert.equal(await endOf(changing), { clean: true });
});

test('disabling the account, taking the ADMIN role or deleting the workspace ends the stream at once', async () => {
  const disabled = await quietMember('disabled@example.test');
  const demoted = await createUser(quiet, 'demoted@example.test', { roles: ['ADMIN'] });
  const memberStream = await openStream(quiet.url, '/api/workspaces/live/stream', disabled.token);
  const adminStream = await openStream(quiet.url, '/api/admin/stream', demoted.token);
  assert.is(adminStream.status, 200);

  assert.is((await quietAdmin.patch(`/api/admin/users/${disabled.id}`, { active: false })).status, 200);
  assert.equal(await endOf(memberStream), { clean: true });
  assert.not.ok(adminStream.ended, 'the other user keeps the stream');
  assert.is((await quietAdmin.patch(`/api/admin/users/${demoted.id}`, { roles: ['USER'] })).status, 200);
  assert.equal(await endOf(adminStream), { clean: true });

  const resident = await quietMember('resident@example.test', 'doomed');
  const doomed = await openStream(quiet.url, '/api/workspaces/doomed/stream', resident.token);
  assert.is((await quietAdmin.delete('/api/admin/workspaces/doomed')).status, 200);
  assert.equal(await endOf(doomed), { clean: true });
});

test('at most 20 streams per user: the 21st gets 429', async () => {
  const greedy = await createUser(t, 'greedy@example.test');
  assert.is((await admin.put(`/api/admin/workspaces/live/members/${greedy.id}`)).status, 200);
  const open = [];
  for (let n = 0; n < 20; n += 1) open.push(await openStream(t.url, '/api/workspaces/live/stream', greedy.token));
  assert.ok(open.every((stream) => stream.status === 200));
  const refused = await openStream(t.url, '/api/workspaces/live/stream', greedy.token);
  refused.close();
  assert.is(refused.status, 429);
  open[0]!.close();
  await waitFor('a slot freed', async () => {
    const again = await openStream(t.url, '/api/workspaces/live/stream', greedy.token);
    again.close();
    return again.status === 200 || undefined;
  });
  for (const stream of open) stream.close();
});

test('stopping the daemon ends every stream cleanly and stops', async () => {
  const own = await startTestDaemon({ shutdownGraceMs: 600_000 });
  const token = (await own.admin()).token;
  await createWorkspace(await own.admin(), 'ws');
  const streams = [
    await openStream(own.url, '/api/admin/stream', token),
    await openStream(own.url, '/api/workspaces/ws/stream', token),
  ];
  const stopped = own.destroy();
  for (const stream of streams) {
    assert.equal(await endOf(stream), { clean: true });
    assert.ok(stream.comments.includes('the daemon is stopping'));
  }
  await stopped;
});

test('CLI events tail prints events, follows a daemon restart, and exits 0 on Ctrl-C', async () => {
  let own = await startTestDaemon();
  const port = own.daemon.port;
  const ownAdmin = await own.admin();
  await createWorkspace(ownAdmin, 'tailed');
  let child: Tail | undefined;
  try {
    child = await tail(own.url, ownAdmin.token, ['tailed']);
    const { output } = child;
    const before = (await ownAdmin.post('/api/workspaces/tailed/events/publish', { eventKey: 'app.before' })).body.meta.eventId;
    await waitFor('the first event printed', () => output.stdout.includes(before) || undefined);
    assert.match(output.stdout, /published\s+app\.before/);

    await own.stop();
    own = await startTestDaemon({ port }, own.dataDir);
    const after = (await ownAdmin.post('/api/workspaces/tailed/events/publish', { eventKey: 'app.after' })).body.meta.eventId;
    await waitFor('the event after the restart printed', () => output.stdout.includes(after) || undefined, 20_000);
    assert.is(output.stdout.split(before).length, 2, 'nothing printed twice');

    child.kill('SIGINT');
    assert.is(await child.exited, 0, output.stderr);
  } finally {
    child?.kill('SIGKILL');
    await own.destroy();
  }
});


test('CLI events tail prints a subscription disabled and enabled again', async () => {
  const child = await tail(t.url, admin.token, ['live']);
  try {
    const subscriptions = (await admin.get('/api/workspaces/live/subscriptions')).body.data as Array<{ id: string; eventKey: string }>;
    const { id } = subscriptions.find((subscription) => subscription.eventKey === 'crm.ok')!;
    for (const enabled of [false, true]) assert.is((await admin.patch(`/api/workspaces/live/subscriptions/${id}`, { enabled })).status, 200);
    const lines = await waitFor('both changes printed', () => {
      const printed = child.output.stdout.split('\n').filter((line) => line.includes(id));
      return printed.length === 2 && printed;
    });
    assert.match(lines[0]!, new RegExp(`subscription\\s+crm\\.ok -> crm\\s+${id}\\s+disabled: disabled by an administrator$`));
    assert.match(lines[1]!, new RegExp(`subscription\\s+crm\\.ok -> crm\\s+${id}\\s+enabled$`));
  } finally {
    child.kill('SIGKILL');
  }
});

test('CLI events tail --event --json prints only that event key, one JSON object a line; a refusal exits 1', async () => {
  const own = await startTestDaemon();
  const ownAdmin = await own.admin();
  await createWorkspace(ownAdmin, 'filtered');
  let child: Tail | undefined;
  try {
    child = await tail(own.url, ownAdmin.token, ['filtered', '--event', 'app.picked', '--json']);
    const { output, env } = child;
    await ownAdmin.post('/api/workspaces/filtered/events/publish', { eventKey: 'app.other' });
    const picked = (await ownAdmin.post('/api/workspaces/filtered/events/publish', { eventKey: 'app.picked' })).body.meta.eventId;
    await waitFor('the picked event printed', () => output.stdout.includes('\n') || undefined);
    const lines = output.stdout.trim().split('\n').map((line) => JSON.parse(line));
    assert.is(lines.length, 1);
    assert.is(lines[0].type, 'event.published');
    assert.is(lines[0].data.id, picked);
    child.kill('SIGINT');
    assert.is(await child.exited, 0, output.stderr);

    const refused = await runCli(['events', 'tail', 'nowhere'], { env });
    assert.is(refused.code, 1);
    assert.match(refused.stderr, /not found/);
  } finally {
    child?.kill('SIGKILL');
    await own.destroy();
  }
});

test.run();
