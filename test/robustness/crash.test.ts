import { randomInt } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SHORT_DELIVERY_LEASE, spawnDaemon, type DaemonProcess } from '../helpers/cli.js';
import { ADMIN } from '../helpers/daemon.js';
import { publishExtension, subscribeExternal, workspaceWith } from '../helpers/fixtures.js';
import { api, call, tokenOf, type Api } from '../helpers/http.js';
import { filesOnly, TEST_BACKEND } from '../helpers/postgres.js';
import { startSubscriber, type Subscriber } from '../helpers/subscriber.js';
import { tempDir } from '../helpers/temp.js';
import { waitFor } from '../helpers/wait.js';

/**
 * SIGKILL at random moments of a mixed load (event publishes, catalog writes,
 * dead-letter replays), 20 times on one data directory (and, on the PostgreSQL
 * pass, its database). Every write the daemon acknowledged (2xx) is recorded;
 * after each kill the daemon is restarted on the same data, and every
 * acknowledged write so far must be there. On files, the data files are also
 * read after each kill, before the restart: the files-only case below says what
 * they held. Kill moments come from a seeded PRNG: CRASH_SEED=<seed> repeats a
 * run's kill schedule.
 */

/**
 * Each round costs a start (and on PostgreSQL the 2 s the dead daemon's
 * leases take to lapse); the kill moments are drawn anew on every run, so
 * runs add up to more schedules than any one of them tries.
 */
const KILLS = 14;
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : randomInt(2 ** 31);
/** Load runs this long (ms) before the kill, chosen at random per round. */
const LOAD_MS = { min: 150, max: 1_500 };
const WORKSPACE = 'crash';
const SUBSCRIBED = 'hooks';
/** Delivered to a subscriber that answers 200. */
const DELIVERED_KEY = 'crash.delivered';
/** Delivered to a subscriber that answers 500: three attempts, then a dead letter to replay. */
const FAILING_KEY = 'crash.failing';
const ENV = {
  PLATFORM_ADMIN_EMAIL: ADMIN.email,
  PLATFORM_ADMIN_PASSWORD: ADMIN.password,
  PLATFORM_RETRY_SCHEDULE: '20,20',
  // A checkpoint of the outbox every megabyte of its journal: kills land before, during and after them.
  PLATFORM_JOURNAL_CHECKPOINT_MB: '1',
  ...SHORT_DELIVERY_LEASE,
};

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface ExtensionWrites {
  versions: Set<string>;
  /** Versions whose yank was acknowledged: they must stay yanked. */
  yanked: Set<string>;
  /** Versions a yank was sent for, acknowledged or not: only the others must be available. */
  yankSent: Set<string>;
  nextMajor: number;
}

/** Every write the daemon acknowledged, across all its lives. */
class Acknowledged {
  readonly deliveredEvents = new Set<string>();
  readonly failingEvents = new Set<string>();
  readonly extensions = new Map<string, ExtensionWrites>();
  /** Replayed dead letter id → its delivery and the replay count the replay started. */
  readonly replays = new Map<string, { deliveryId: string; replayCount: number }>();
  yanks = 0;

  get versions(): number {
    let count = 0;
    for (const extension of this.extensions.values()) count += extension.versions.size;
    return count;
  }

  get total(): number {
    return this.deliveredEvents.size + this.failingEvents.size + this.extensions.size + this.versions + this.yanks + this.replays.size;
  }
}

/** One life of the daemon: started on the shared data directory, logged in as the admin. */
interface Life {
  daemon: DaemonProcess;
  admin: Api;
}

async function startLife(dataDir: string): Promise<Life> {
  const daemon = await spawnDaemon(dataDir, ENV);
  const login = await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN });
  return { daemon, admin: api(daemon.url, tokenOf(login)) };
}

interface DataFiles {
  files: number;
  lines: number;
  tornLines: number;
  eventIds: Set<string>;
  /** JSON documents and complete log lines that do not parse. */
  corrupt: string[];
}

function parsedLine(line: string): { id?: string } | null {
  try {
    return JSON.parse(line) as { id?: string };
  } catch {
    return null;
  }
}

/**
 * Every JSON document must parse, and every complete line of every log; only a
 * log's unterminated last line may be torn (the daemon cuts it on start). The
 * event ids of the event log segments are collected on the way.
 */
function readDataFiles(dataDir: string): DataFiles {
  const result: DataFiles = { files: 0, lines: 0, tornLines: 0, eventIds: new Set(), corrupt: [] };
  for (const entry of readdirSync(dataDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const name = relative(dataDir, path);
    if (name.endsWith('.json')) {
      result.files += 1;
      if (parsedLine(readFileSync(path, 'utf8')) === null) result.corrupt.push(`${name} is not valid JSON`);
    } else if (name.endsWith('.log')) {
      result.files += 1;
      const lines = readFileSync(path, 'utf8').split('\n');
      // The text after the last newline: empty, or a torn write that was never acknowledged.
      if (lines.pop() !== '') result.tornLines += 1;
      const isEventLog = name.startsWith('events/');
      lines.forEach((line, index) => {
        const record = parsedLine(line);
        if (record === null) result.corrupt.push(`${name} line ${index + 1} is corrupt: ${line.slice(0, 200)}`);
        else if (isEventLog && record.id) result.eventIds.add(record.id);
      });
      result.lines += lines.length;
    }
  }
  return result;
}

/** Runs `task` over `items` with at most `width` in flight. */
async function inParallel<T>(items: readonly T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await task(items[next++]!);
    }),
  );
}

interface DeadLetter {
  id: string;
  deliveryId: string;
  event: { id: string };
  replayCount: number;
}

async function allDeadLetters(admin: Api): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  for (let offset = 0; ; offset += 500) {
    const page = await admin.get(`/api/admin/dead-letters?limit=500&offset=${offset}`);
    assert.is(page.status, 200, page.text);
    letters.push(...(page.body.data as DeadLetter[]));
    if (letters.length >= page.body.meta.total) return letters;
  }
}

async function allEventIds(admin: Api): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let cursor = ''; ; ) {
    const page = await admin.get(`/api/workspaces/${WORKSPACE}/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.is(page.status, 200, page.text);
    for (const event of page.body.data as Array<{ id: string }>) ids.add(event.id);
    if (!page.body.meta.nextCursor) return ids;
    cursor = page.body.meta.nextCursor;
  }
}

/** Checks every acknowledged write against a freshly started daemon; returns how many checks were made. */
async function checkAcknowledged(life: Life, acknowledged: Acknowledged, deliveredTo: Subscriber, round: string): Promise<number> {
  let checks = 0;
  const listed = await allEventIds(life.admin);
  for (const id of [...acknowledged.deliveredEvents, ...acknowledged.failingEvents]) {
    assert.ok(listed.has(id), `${round}: acknowledged event ${id} is listed`);
    checks += 1;
  }

  await inParallel([...acknowledged.extensions], 8, async ([key, writes]) => {
    const detail = await life.admin.get(`/api/marketplace/extensions/${key}`);
    assert.is(detail.status, 200, `${round}: acknowledged extension ${key}: ${detail.text}`);
    const stored = new Map((detail.body.data.versions as Array<{ version: string; yanked: boolean }>).map((v) => [v.version, v.yanked]));
    for (const version of writes.versions) {
      assert.ok(stored.has(version), `${round}: acknowledged version ${key}@${version} is published`);
      if (writes.yanked.has(version)) assert.is(stored.get(version), true, `${round}: acknowledged yank of ${key}@${version} holds`);
      else if (!writes.yankSent.has(version)) assert.is(stored.get(version), false, `${round}: ${key}@${version} was never yanked`);
    }
    checks += 1 + writes.versions.size + writes.yanked.size;
  });

  // Every delivery resumes after the restart: wait until none is pending, then each event has its outcome.
  await waitFor(
    `${round}: no pending deliveries`,
    async () => (await life.admin.get('/api/admin/status')).body.data.pendingDeliveries === 0,
    30_000,
  );
  const delivered = deliveredTo.deliveredEventIds();
  for (const id of acknowledged.deliveredEvents) {
    assert.ok(delivered.has(id), `${round}: acknowledged event ${id} was delivered`);
    checks += 1;
  }
  const letters = await allDeadLetters(life.admin);
  const deadLettered = new Set(letters.map((letter) => letter.event.id));
  for (const id of acknowledged.failingEvents) {
    assert.ok(deadLettered.has(id), `${round}: acknowledged event ${id} for the failing subscriber is a dead letter`);
    checks += 1;
  }
  const byId = new Map(letters.map((letter) => [letter.id, letter]));
  const replayCountOf = new Map(letters.map((letter) => [letter.deliveryId, letter.replayCount]));
  for (const [id, replay] of acknowledged.replays) {
    // A replay that failed again comes back under the same id, one replay later.
    assert.ok(
      (byId.get(id)?.replayCount ?? Infinity) > replay.replayCount,
      `${round}: acknowledged replay of dead letter ${id} removed the record it replayed`,
    );
    assert.ok(
      (replayCountOf.get(replay.deliveryId) ?? -1) > replay.replayCount,
      `${round}: the replayed delivery ${replay.deliveryId} ran again and came back as a dead letter`,
    );
    checks += 1;
  }
  return checks;
}

/**
 * Mixed load until `stopped()`: publishers, catalog writers and a replayer,
 * recording what the daemon acknowledges. A request cut by the kill is not
 * acknowledged and ends its worker.
 */
async function runLoad(admin: Api, acknowledged: Acknowledged, random: () => number, round: number, stopped: () => boolean): Promise<void> {
  const unexpected: string[] = [];
  const send = async (what: string, request: () => Promise<{ status: number; text: string }>, expected: number) => {
    const result = await request();
    if (result.status !== expected) unexpected.push(`${what}: ${result.status} ${result.text.slice(0, 200)}`);
    return result.status === expected;
  };

  const publisher = async () => {
    while (!stopped()) {
      const eventKey = random() < 0.85 ? DELIVERED_KEY : FAILING_KEY;
      const result = await admin.post(`/api/workspaces/${WORKSPACE}/events/publish`, { eventKey, payload: { round } });
      if (result.status !== 200) unexpected.push(`publish: ${result.status} ${result.text.slice(0, 200)}`);
      else (eventKey === DELIVERED_KEY ? acknowledged.deliveredEvents : acknowledged.failingEvents).add(result.body.meta.eventId);
    }
  };

  let created = 0;
  const catalogWriter = async (writer: number) => {
    while (!stopped()) {
      const choice = random();
      const keys = [...acknowledged.extensions.keys()];
      if (choice < 0.25 || keys.length === 0) {
        created += 1;
        const key = `ext-${round}-${writer}-${created}`;
        const ok = await send('create', () => admin.post('/api/admin/marketplace/extensions', { extensionKey: key, name: `Extension ${key}` }), 201);
        if (ok) acknowledged.extensions.set(key, { versions: new Set(), yanked: new Set(), yankSent: new Set(), nextMajor: 1 });
        continue;
      }
      const key = keys[Math.floor(random() * keys.length)]!;
      const writes = acknowledged.extensions.get(key)!;
      const yankable = [...writes.versions].filter((version) => !writes.yankSent.has(version));
      if (choice < 0.8 || yankable.length === 0) {
        // A version number is never reused, acknowledged or not: an unacknowledged publish may have been stored.
        const version = `${writes.nextMajor++}.0.0`;
        const ok = await send(
          'publish',
          () => admin.post(`/api/admin/marketplace/extensions/${key}/versions`, { version, artifactUrl: `https://artifacts.example.test/${key}/${version}.jar` }),
          201,
        );
        if (ok) writes.versions.add(version);
      } else {
        const version = yankable[Math.floor(random() * yankable.length)]!;
        writes.yankSent.add(version);
        const ok = await send('yank', () => admin.delete(`/api/admin/marketplace/extensions/${key}/versions/${version}`), 204);
        if (ok) {
          writes.yanked.add(version);
          acknowledged.yanks += 1;
        }
      }
    }
  };

  const replayer = async () => {
    while (!stopped()) {
      const page = await admin.get('/api/admin/dead-letters?limit=20');
      const letters = page.body.data as DeadLetter[];
      if (letters.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      for (const letter of letters) {
        if (stopped()) return;
        const ok = await send('replay', () => admin.post(`/api/admin/dead-letters/${letter.id}/replay`), 202);
        if (ok) acknowledged.replays.set(letter.id, { deliveryId: letter.deliveryId, replayCount: letter.replayCount });
      }
    }
  };

  const untilKilled = (worker: Promise<void>) => worker.catch(() => undefined);
  await Promise.all([
    ...Array.from({ length: 3 }, () => untilKilled(publisher())),
    ...Array.from({ length: 2 }, (_, writer) => untilKilled(catalogWriter(writer))),
    untilKilled(replayer()),
  ]);
  assert.equal(unexpected, [], `round ${round}: every answer before the kill is the expected success`);
}

/** What the data files held after each kill (files pass only). */
const afterKills: Array<{ round: number; files: DataFiles; acknowledgedEvents: string[] }> = [];

test(`SIGKILL ${KILLS} times during mixed load: every acknowledged write survives, every event is delivered or dead-lettered`, async () => {
  console.log(`  (seed ${SEED}; CRASH_SEED=${SEED} repeats this kill schedule)`);
  // The kill schedule has its own sequence: the workers draw a timing-dependent number of values from theirs.
  const killSchedule = prng(SEED);
  const dataDir = await tempDir('platform-crash-');
  const delivered = await startSubscriber();
  const failing = await startSubscriber(() => ({ status: 500 }));
  const acknowledged = new Acknowledged();
  let checks = 0;
  let passed = false;
  let life = await startLife(dataDir);
  try {
    await publishExtension(life.admin, SUBSCRIBED);
    await workspaceWith(life.admin, WORKSPACE, SUBSCRIBED);
    await subscribeExternal(life.admin, WORKSPACE, DELIVERED_KEY, SUBSCRIBED, delivered.url);
    await subscribeExternal(life.admin, WORKSPACE, FAILING_KEY, SUBSCRIBED, failing.url);

    for (let round = 1; round <= KILLS; round += 1) {
      const loadMs = LOAD_MS.min + killSchedule() * (LOAD_MS.max - LOAD_MS.min);
      let killed = false;
      const killer = setTimeout(() => {
        killed = true;
        life.daemon.child.kill('SIGKILL');
      }, loadMs);
      await runLoad(life.admin, acknowledged, prng(SEED + round), round, () => killed);
      clearTimeout(killer);
      assert.is(await life.daemon.exited, 'SIGKILL', `round ${round}: the daemon died by SIGKILL`);

      if (TEST_BACKEND === 'files') {
        afterKills.push({ round, files: readDataFiles(dataDir), acknowledgedEvents: [...acknowledged.deliveredEvents, ...acknowledged.failingEvents] });
      }
      life = await startLife(dataDir);
      checks += await checkAcknowledged(life, acknowledged, delivered, `after kill ${round} (at ${Math.round(loadMs)} ms)`);
    }
    console.log(
      `  (${KILLS} kills; ${acknowledged.total.toLocaleString('en')} acknowledged writes: ` +
        `${(acknowledged.deliveredEvents.size + acknowledged.failingEvents.size).toLocaleString('en')} events ` +
        `(${acknowledged.deliveredEvents.size.toLocaleString('en')} delivered, ${acknowledged.failingEvents.size.toLocaleString('en')} dead-lettered), ` +
        `${acknowledged.extensions.size} extensions, ${acknowledged.versions} versions, ${acknowledged.yanks} yanks, ${acknowledged.replays.size} replays; ` +
        `${checks.toLocaleString('en')} checks after the restarts)`,
    );
    passed = true;
  } finally {
    life.daemon.child.kill('SIGKILL');
    await life.daemon.exited;
    await delivered.close();
    await failing.close();
    // A failed run's data directory is the evidence (a damaged file fails the files-only case below): it stays for inspection.
    if (passed && afterKills.every(({ files }) => files.corrupt.length === 0)) await rm(dataDir, { recursive: true, force: true });
    else console.log(`  (data directory kept: ${dataDir})`);
  }
});

filesOnly(test)("after every kill, every data file parses and every acknowledged event is in the event log (files only: reads the data directory's files)", () => {
  // Round by round first: a damaged file also stops the restart, and so the case above, after that kill.
  for (const { round, files, acknowledgedEvents } of afterKills) {
    assert.equal(files.corrupt, [], `after kill ${round}`);
    assert.equal(acknowledgedEvents.filter((id) => !files.eventIds.has(id)), [], `after kill ${round}: acknowledged events missing from the event log`);
  }
  assert.is(afterKills.length, KILLS, 'the files were read after every kill');
  const last = afterKills.at(-1)!.files;
  const tornLines = afterKills.reduce((sum, { files }) => sum + files.tornLines, 0);
  console.log(`  (${last.files} data files, ${last.lines.toLocaleString('en')} log lines parsed after the last kill, ${tornLines} torn last lines over all kills)`);
});

test.run();
