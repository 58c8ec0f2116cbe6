import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnDaemon, type DaemonProcess } from './helpers/cli.js';
import { ADMIN } from './helpers/daemon.js';
import { publishConcurrently, subscribeExternal, workspaceWith } from './helpers/fixtures.js';
import { anonymousRssMb } from './helpers/memory.js';
import { api, call, tokenOf } from './helpers/http.js';
import { keepArtifact } from './helpers/artifacts.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

/**
 * Start-up ends with one full garbage collection (PLATFORM_SETTLE_AFTER_START
 * after it; src/daemon/settle.ts). A daemon restarted on a backlog of 10,000
 * pending deliveries, none of them due, is idle once it has started: without
 * that collection V8 keeps what the start grew (its young generation at the
 * maximum, the start's dead buffers), some 20 MB here, until its first burst
 * of work. With it the RSS drops while nothing else happens. The RSS read is
 * its anonymous part, what a collection gives back: the mapped files (Node's
 * code) come and go with the kernel's eviction on a busy machine, and once
 * hid a drop.
 */
const EVENTS = 10_000;
const PUBLISHERS = 16;
const SETTLE_MS = 4_000;
/** Less than what the collections give back on this backlog (12 MB measured on PostgreSQL, 29 on files), more than an idle RSS moves. */
const DROP_MB = 5;

/** Between the two collections of a pair (5 s by default), short here: the second one is counted, not measured. */
const QUIET_MS = '1000';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How many of the settling collections the daemon's debug log reports, after its start or after its heap grew. */
const collections = (daemon: DaemonProcess, after: 'its start' | 'its heap grew') =>
  daemon.output().split('\n').filter((line) => line.includes(`full garbage collection, the daemon idle after ${after}`)).length;

async function stop(daemon: DaemonProcess): Promise<void> {
  daemon.child.kill('SIGTERM');
  await daemon.exited;
}

test(`a daemon restarted on ${EVENTS} pending deliveries gives back its start-up's memory once settled`, async () => {
  const dir = await tempDir();
  // Down for a day: each delivery fails once, and its retry is not due within the test.
  let failures = 0;
  const subscriber = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      failures += 1;
      res.writeHead(503, { 'retry-after': '86400' }).end();
    });
  });
  await new Promise<void>((resolve) => subscriber.listen(0, '127.0.0.1', resolve));
  const env = { PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password, PLATFORM_RETRY_SCHEDULE: '86400000' };
  try {
    const first = await spawnDaemon(dir, env);
    try {
      const admin = api(first.url, tokenOf(await call(first.url, 'POST', '/api/auth/login', { json: ADMIN })));
      await workspaceWith(admin, 'settle', 'sink');
      await subscribeExternal(admin, 'settle', 'bulk.item', 'sink', `http://127.0.0.1:${(subscriber.address() as { port: number }).port}`);
      const text = 's'.repeat(1_000);
      await publishConcurrently(admin, 'settle', EVENTS, PUBLISHERS, (n) => ({ eventKey: 'bulk.item', payload: { n, text } }));
      await waitFor('every delivery to fail once', () => failures >= EVENTS || undefined, 60_000);
    } finally {
      await stop(first);
    }

    const spawnedAt = performance.now();
    const daemon = await spawnDaemon(dir, { ...env, PLATFORM_SETTLE_AFTER_START: String(SETTLE_MS) });
    try {
      await waitFor('the restarted daemon to be ready', async () => (await call(daemon.url, 'GET', '/api/health/ready')).status === 200 || undefined, 30_000);
      // The most of a second before the collection: the start's memory, held.
      let held = 0;
      for (let sample = 0; sample < 5; sample += 1) {
        held = Math.max(held, anonymousRssMb(daemon.child.pid!));
        await sleep(200);
      }
      const beforeSettle = performance.now() - spawnedAt;
      assert.ok(beforeSettle < SETTLE_MS, `the start took ${Math.round(beforeSettle)} ms: the collection may have run before RSS was read`);
      // Each change of RSS, kept with the daemon's log should the drop not come (it once did not, on a machine under heavy load).
      const readings: string[] = [];
      let last = held;
      const settled = await waitFor(
        `RSS to fall ${DROP_MB} MB below ${held.toFixed(0)} MB`,
        () => {
          const rss = anonymousRssMb(daemon.child.pid!);
          if (rss !== last) readings.push(`${Math.round(performance.now() - spawnedAt)} ms: ${rss.toFixed(1)} MB`);
          last = rss;
          return rss <= held - DROP_MB ? rss : undefined;
        },
        SETTLE_MS + 15_000,
      ).catch((error: Error) => {
        const memory = readFileSync(`/proc/${daemon.child.pid}/status`, 'utf8').split('\n').filter((line) => /^(Vm|Rss)/.test(line));
        const kept = keepArtifact('start-settle', [`held ${held.toFixed(1)} MB`, ...readings, '', ...memory, '', daemon.output()].join('\n'));
        throw new Error(`${error.message} (RSS readings and the daemon's log: ${kept})`);
      });
      console.log(`  (RSS ${held.toFixed(0)} MB once started on ${EVENTS} pending deliveries, ${settled.toFixed(0)} MB once settled)`);
      assert.is(failures, EVENTS, 'no retry came meanwhile: the daemon was idle');
    } finally {
      await stop(daemon);
    }
  } finally {
    subscriber.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('the collections after start-up wait for a second in which the daemon was idle', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, {
    PLATFORM_ADMIN_EMAIL: ADMIN.email,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
    PLATFORM_SETTLE_AFTER_START: '500',
    PLATFORM_SETTLE_QUIET: QUIET_MS,
    PLATFORM_LOG_LEVEL: 'debug',
  });
  try {
    // Busy from before the first collection was due until well after: requests back to back.
    let busy = true;
    const load = Array.from({ length: 8 }, async () => {
      while (busy) await call(daemon.url, 'GET', '/api/health');
    });
    await sleep(3_000);
    const whileBusy = collections(daemon, 'its start');
    busy = false;
    await Promise.all(load);
    assert.is(whileBusy, 0, 'no full collection while requests kept the daemon busy');
    // Idle now: the first collection at the end of the next second, the second one QUIET_MS after it.
    await waitFor('both collections once idle', () => collections(daemon, 'its start') === 2 || undefined, 15_000).catch((error: Error) => {
      throw new Error(`${error.message} (the daemon's log: ${keepArtifact('start-settle-idle', daemon.output())})`);
    });
  } finally {
    await stop(daemon);
    await rm(dir, { recursive: true, force: true });
  }
});

test('a burst that grows the heap is followed by the same two collections once the daemon is idle', async () => {
  const dir = await tempDir();
  const daemon = await spawnDaemon(dir, {
    PLATFORM_ADMIN_EMAIL: ADMIN.email,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
    PLATFORM_SETTLE_AFTER_START: '100',
    PLATFORM_SETTLE_GROWTH_MB: '1',
    PLATFORM_SETTLE_QUIET: QUIET_MS,
    PLATFORM_LOG_LEVEL: 'debug',
  });
  try {
    const admin = api(daemon.url, tokenOf(await call(daemon.url, 'POST', '/api/auth/login', { json: ADMIN })));
    await waitFor('the two collections after the start', () => collections(daemon, 'its start') === 2 || undefined, 15_000);
    // Idle and settled: nothing more while nothing happens.
    await sleep(2_500);
    assert.is(collections(daemon, 'its heap grew'), 0, 'no collection while the heap stays as it was');
    await workspaceWith(admin, 'burst', 'sink');
    const text = 'b'.repeat(10_000);
    await publishConcurrently(admin, 'burst', 300, 8, (n) => ({ eventKey: 'burst.item', payload: { n, text } }));
    await waitFor('two collections after the burst', () => collections(daemon, 'its heap grew') === 2 || undefined, 15_000).catch((error: Error) => {
      throw new Error(`${error.message} (the daemon's log: ${keepArtifact('start-settle-growth', daemon.output())})`);
    });
  } finally {
    await stop(daemon);
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
