import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startJobs } from '../src/daemon/jobs.js';
import { createLogger } from '../src/daemon/log.js';
import { conformance, rejection } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * Scheduled jobs (retention, pruning) run under the stores' job lock: on
 * PostgreSQL the daemons sharing a schema run each job one at a time, the
 * others skip that run; on files the one daemon always runs it.
 */

/** A run that lasts until `finish` is called, and says when it has started. */
function heldRun() {
  let finish!: () => void;
  let started = false;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    work: async () => {
      started = true;
      await done;
    },
    started: () => started,
    finish,
  };
}

conformance('a scheduled job runs under the job lock', async (site) => {
  const opened = await site.open();
  try {
    let runs = 0;
    assert.is(await opened.stores.jobLock.runAlone('event-retention', async () => (runs += 1)), true);
    assert.is(await opened.stores.jobLock.runAlone('event-retention', async () => (runs += 1)), true);
    assert.is(runs, 2);
    const failed = await rejection(opened.stores.jobLock.runAlone('event-retention', async () => Promise.reject(new Error('disk on fire'))));
    assert.match(failed.message, /disk on fire/);
  } finally {
    await opened.close();
  }
});

conformance(
  'while one daemon runs a job, another skips it; other jobs run; once the run ends (or fails) the next daemon takes it',
  async (site) => {
    const first = await site.open();
    const second = await site.open();
    const held = heldRun();
    const running = first.stores.jobLock.runAlone('event-retention', held.work);
    try {
      await waitFor('the first run to start', held.started);

      let ranOnSecond = 0;
      assert.is(await second.stores.jobLock.runAlone('event-retention', async () => (ranOnSecond += 1)), false);
      assert.is(ranOnSecond, 0);
      assert.is(await second.stores.jobLock.runAlone('prune-revoked-tokens', async () => (ranOnSecond += 1)), true);
      assert.is(ranOnSecond, 1);

      held.finish();
      assert.is(await running, true);
      assert.is(await second.stores.jobLock.runAlone('event-retention', async () => (ranOnSecond += 1)), true);
      assert.is(ranOnSecond, 2);

      await rejection(second.stores.jobLock.runAlone('event-retention', async () => Promise.reject(new Error('failed run'))));
      assert.is(await first.stores.jobLock.runAlone('event-retention', async () => undefined), true);
    } finally {
      held.finish();
      await running.catch(() => undefined);
      await second.close();
      await first.close();
    }
  },
  { shared: true },
);

conformance(
  'the job runner skips a run another daemon holds, without logging it above debug, and runs the job once the lock is free',
  async (site) => {
    const other = await site.open();
    const own = await site.open();
    const lines: string[] = [];
    const logger = createLogger({ sink: { out: (text) => lines.push(text), err: (text) => lines.push(text) }, format: 'json', level: 'info' });
    const held = heldRun();
    const holding = other.stores.jobLock.runAlone('prune-login-throttle', held.work);
    let ticks = 0;
    let runs = 0;
    const runner = startJobs(
      [{ name: 'prune-login-throttle', intervalMs: 1000, run: async () => (runs += 1) }],
      { runAlone: (name, work) => ((ticks += 1), own.stores.jobLock.runAlone(name, work)) },
      logger,
    );
    try {
      await waitFor('the other daemon to hold the job', held.started);
      await waitFor('two ticks of the job', () => ticks >= 2);
      assert.is(runs, 0);
      held.finish();
      await holding;
      await waitFor('the job to run', () => runs >= 1);
      logger.flush();
      assert.equal(lines, []);
    } finally {
      held.finish();
      await holding.catch(() => undefined);
      await runner.stop();
      await own.close();
      await other.close();
    }
  },
  { shared: true },
);

conformance(
  'daemons sharing the database aim at the same instants: each instant of a job runs once, the others skip it',
  async (site) => {
    const daemons = [await site.open(), await site.open()];
    const logger = createLogger({ sink: { out: () => undefined, err: () => undefined }, format: 'json', level: 'error' });
    const outcomes: string[] = [];
    // Each run outlasts the moment the other daemon's timer fires for the same instant.
    const job = { name: 'event-retention', intervalMs: 1000, run: () => new Promise((resolve) => setTimeout(resolve, 300)) };
    const runners = daemons.map((opened) => startJobs([job], opened.stores.jobLock, logger, (_name, outcome) => outcomes.push(outcome)));
    try {
      await waitFor('three instants on both daemons', () => outcomes.length >= 6, 8_000);
      const firstSix = outcomes.slice(0, 6);
      assert.is(firstSix.filter((outcome) => outcome === 'succeeded').length, 3, firstSix.join());
      assert.is(firstSix.filter((outcome) => outcome === 'skipped').length, 3, firstSix.join());
    } finally {
      for (const runner of runners) await runner.stop();
      for (const opened of daemons) await opened.close();
    }
  },
  { shared: true },
);

conformance('a job whose run throws is logged once per failure, by name, and keeps running at its interval', async (site) => {
  const opened = await site.open();
  const lines: string[] = [];
  const logger = createLogger({ sink: { out: (text) => lines.push(text), err: (text) => lines.push(text) }, format: 'json', level: 'info' });
  const outcomes: string[] = [];
  let runs = 0;
  const runner = startJobs(
    [
      {
        name: 'event-retention',
        intervalMs: 1000,
        run: async () => {
          runs += 1;
          if (runs <= 2) throw new Error(`disk on fire (run ${runs})`);
        },
      },
    ],
    opened.stores.jobLock,
    logger,
    (job, outcome) => outcomes.push(`${job}:${outcome}`),
  );
  try {
    await waitFor('a run after two failures', () => outcomes.length >= 3, 6_000);
    logger.flush();
    const logged = lines.map((line) => JSON.parse(line) as { level: string; msg: string });
    assert.equal(outcomes.slice(0, 3), ['event-retention:failed', 'event-retention:failed', 'event-retention:succeeded']);
    assert.equal(
      logged.map(({ level, msg }) => `${level} ${msg}`),
      [
        'error job event-retention failed: disk on fire (run 1)',
        'error job event-retention failed: disk on fire (run 2)',
        'info job event-retention succeeded again',
      ],
    );
  } finally {
    await runner.stop();
    await opened.close();
  }
});

test.run();
