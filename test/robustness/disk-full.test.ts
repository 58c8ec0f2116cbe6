import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createUser, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FAST_DISPATCH, publishExtension, subscribeExternal, workspaceWith } from '../helpers/fixtures.js';
import type { Api, HttpResult } from '../helpers/http.js';
import { startSubscriber } from '../helpers/subscriber.js';
import { fillDisk, needsSmallDisk, withSmallDisk } from '../helpers/tmpfs.js';
import { waitFor } from '../helpers/wait.js';
import { filesOnly } from '../helpers/postgres.js';

/**
 * Large enough that its event line and outbox record need fresh pages: tmpfs
 * allocates whole pages, so a small append can still land in the free tail of
 * a file's last page on a disk that is otherwise full (and then it is stored,
 * rightly answered 200).
 */
const BIG_PAYLOAD = { report: 'x'.repeat(16 * 1024) };

interface Write {
  what: string;
  send: (admin: Api, user: Api) => Promise<HttpResult>;
  succeeds: number;
}

/** One of each kind of write, as the routes a client would call; each must answer 503 on a full disk. */
const WRITES: Write[] = [
  {
    what: 'create user',
    send: (admin) => admin.post('/api/admin/users', { email: 'late@example.test', fullName: 'Late', password: 'late-password-1' }),
    succeeds: 201,
  },
  {
    what: 'change password',
    send: (_, user) => user.put('/api/auth/me/password', { currentPassword: 'user-password-1', newPassword: 'user-password-2' }),
    succeeds: 200,
  },
  {
    what: 'create extension',
    send: (admin) => admin.post('/api/admin/marketplace/extensions', { extensionKey: 'radar', name: 'Radar' }),
    succeeds: 201,
  },
  {
    what: 'catalog publish',
    send: (admin) =>
      admin.post('/api/admin/marketplace/extensions/weather/versions', {
        version: '2.0.0',
        artifactUrl: 'https://artifacts.example.test/weather-2.0.0.jar',
      }),
    succeeds: 201,
  },
  {
    what: 'yank',
    send: (admin) => admin.delete('/api/admin/marketplace/extensions/weather/versions/1.0.0'),
    succeeds: 204,
  },
  {
    what: 'create workspace',
    send: (admin) => admin.post('/api/admin/workspaces', { id: 'late', name: 'Late' }),
    succeeds: 201,
  },
  {
    what: 'event publish',
    send: (admin) => admin.post('/api/workspaces/acme/events/publish', { eventKey: 'weather.updated', payload: BIG_PAYLOAD }),
    succeeds: 200,
  },
  {
    what: 'extension config PUT',
    send: (admin) =>
      admin.put('/api/admin/marketplace/extensions/weather/config', { fields: [{ name: 'units', type: 'STRING', value: 'metric' }] }),
    succeeds: 200,
  },
];

const EVENTS = '/api/workspaces/acme/events?limit=1000';

const READS = [
  '/api/marketplace/extensions',
  '/api/marketplace/extensions/weather',
  '/api/marketplace/extensions/weather/versions/1.0.0',
  '/api/marketplace/categories',
  '/api/admin/users',
  '/api/workspaces',
  EVENTS,
  '/api/workspaces/acme/subscriptions',
  '/api/admin/marketplace/extensions/weather/config',
  '/api/admin/dead-letters',
];


/**
 * What every read answers, timestamps aside; events by id, as their payloads
 * would flood a failure message.
 */
async function readAll(admin: Api): Promise<Record<string, unknown>> {
  const answers: Record<string, unknown> = {};
  for (const path of READS) {
    const result = await admin.get(path);
    assert.is(result.status, 200, `GET ${path}: ${result.text}`);
    const data = path === EVENTS ? (result.body.data as Array<{ id: string }>).map((event) => event.id) : result.body.data;
    answers[path] = { data, meta: result.body.meta };
  }
  return answers;
}

/** Compared read by read, so that a failure names the route. */
function assertSameReads(actual: Record<string, unknown>, expected: Record<string, unknown>, when: string): void {
  for (const path of READS) assert.equal(actual[path], expected[path], `GET ${path} ${when}`);
}

/** Every file of the data directory by relative path. */
function filesOf(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(relative(dir, path), readFileSync(path));
  }
  return files;
}

/**
 * JSON documents are replaced atomically, so they must be byte for byte what
 * they were; append-only logs may only have grown (an audit line can fit in
 * the tail of a page, as decisions.md allows), never lost or changed a byte.
 */
function assertNothingDamaged(before: Map<string, Buffer>, after: Map<string, Buffer>): void {
  for (const [path, contents] of before) {
    const now = after.get(path);
    assert.ok(now, `${path} still exists`);
    if (path.endsWith('.log')) assert.ok(now.subarray(0, contents.length).equals(contents), `${path} kept its contents`);
    else assert.ok(now.equals(contents), `${path} is unchanged`);
  }
  const added = [...after.keys()].filter((path) => !before.has(path));
  assert.equal(added, [], 'no file appeared');
}

needsSmallDisk(filesOnly(test))('disk full: writes answer 503 UNAVAILABLE, reads keep working, nothing stored is damaged, and writes resume once space is freed (files only: fills the disk of the data directory)', async () => {
  await withSmallDisk('8m', async (dataDir) => {
    const receiver = await startSubscriber();
    let daemon: TestDaemon = await startTestDaemon({ dispatch: FAST_DISPATCH }, dataDir);
    try {
      const admin = await daemon.admin();
      const user = await createUser(daemon, 'dana@example.test');
      await publishExtension(admin, 'weather', '1.0.0', { changelog: 'first' });
      await publishExtension(admin, 'weather', '1.1.0');
      await workspaceWith(admin, 'acme', 'weather');
      await subscribeExternal(admin, 'acme', 'weather.updated', 'weather', receiver.url);
      for (let n = 0; n < 3; n += 1) {
        const published = await admin.post('/api/workspaces/acme/events/publish', { eventKey: 'weather.updated', payload: { n } });
        assert.is(published.status, 200, published.text);
      }
      await receiver.waitForCount(3);
      const configured = await admin.put('/api/admin/marketplace/extensions/weather/config', {
        fields: [{ name: 'webhook.secret', type: 'SECRET', value: 'stored before the disk filled' }],
      });
      assert.is(configured.status, 200, configured.text);
      // The outbox journals finished deliveries lazily (an `x` line each): let those lines land before the snapshot.
      const outbox = join(dataDir, 'outbox.log');
      await waitFor('the deliveries journalled as done', () => readFileSync(outbox, 'utf8').split('{"t":"x",').length - 1 === 3);
      const readsBefore = await readAll(admin);
      const filesBefore = filesOf(dataDir);

      const filler = join(dataDir, 'filler');
      fillDisk(filler);
      for (const write of WRITES) {
        const result = await write.send(admin, user);
        assert.is(result.status, 503, `${write.what} on a full disk: ${result.text}`);
        assert.is(result.body.code, 'UNAVAILABLE', write.what);
      }
      assertSameReads(await readAll(admin), readsBefore, 'answers what was stored before the disk filled');
      assert.is(receiver.received.length, 3, 'a refused publish delivers nothing');
      const filesWhileFull = filesOf(dataDir);
      filesWhileFull.delete('filler');
      assertNothingDamaged(filesBefore, filesWhileFull);

      await rm(filler);
      const recovered = new Map<string, HttpResult>();
      for (const write of WRITES) {
        const result = await write.send(admin, user);
        assert.is(result.status, write.succeeds, `${write.what} once space is freed: ${result.text}`);
        recovered.set(write.what, result);
      }
      await receiver.waitForCount(4);
      const readsRecovered = await readAll(admin);
      const dataOf = <T>(reads: Record<string, unknown>, path: string) => (reads[path] as { data: T }).data;
      assert.equal(
        dataOf<Array<{ email: string }>>(readsRecovered, '/api/admin/users').map((account) => account.email),
        ['admin@example.test', 'dana@example.test', 'late@example.test'],
      );
      assert.equal(
        dataOf<Array<{ extensionKey: string }>>(readsRecovered, '/api/marketplace/extensions').map((extension) => extension.extensionKey),
        ['radar', 'weather'],
      );
      assert.equal(
        dataOf<{ versions: Array<{ version: string; yanked: boolean }> }>(readsRecovered, '/api/marketplace/extensions/weather').versions.map(
          ({ version, yanked }) => (yanked ? `${version} yanked` : version),
        ),
        ['2.0.0', '1.1.0', '1.0.0 yanked'],
      );
      assert.equal(dataOf<string[]>(readsRecovered, EVENTS), [
        recovered.get('event publish')!.body.meta.eventId,
        ...dataOf<string[]>(readsBefore, EVENTS),
      ]);
      assert.equal(dataOf<{ fields: unknown[] }>(readsRecovered, '/api/admin/marketplace/extensions/weather/config').fields, [
        { name: 'webhook.secret', type: 'SECRET', value: '********', set: true },
        { name: 'units', type: 'STRING', value: 'metric', set: true },
      ]);

      daemon = await daemon.restart();
      assertSameReads(await readAll(await daemon.admin()), readsRecovered, 'after a restart');
      assert.is(daemon.daemon.services.extensionConfig.values('weather')['webhook.secret'], 'stored before the disk filled');
      console.log(
        `  (full disk: ${WRITES.length} kinds of write answered 503, ${READS.length} reads unchanged, ` +
          `${filesBefore.size} data files intact; all ${WRITES.length} writes succeeded once space was freed, and survived a restart)`,
      );
    } finally {
      await daemon.stop();
      await receiver.close();
    }
  });
});

test.run();
