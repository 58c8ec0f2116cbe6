import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MemoryWebhookReplayStore } from '../src/daemon/store/file/webhook-replays.js';
import { REPLAY_WINDOW_MS, type ReplayClaim } from '../src/daemon/webhooks/replays.js';
import { firstWindow, requestPage, REQUESTS_PER_EXTENSION, type WebhookRequestEntry } from '../src/daemon/webhooks/request-log.js';
import { BACKENDS, conformance, type OpenedStores, using, usingTwo } from './helpers/stores.js';

/**
 * The inbound webhook stores (request log, replay check), held to one
 * contract on both backends: each case runs on a fresh data directory and on
 * a fresh PostgreSQL schema.
 */

const entry = (bodyExcerpt: string, details: Partial<WebhookRequestEntry> = {}): WebhookRequestEntry => ({
  id: randomUUID(),
  receivedAt: '2026-03-01T10:00:00.000Z',
  outcome: 'REJECTED',
  reason: 'the signature does not match',
  headers: { 'content-type': 'application/json', 'x-signature': '****' },
  bodyExcerpt,
  ...details,
});


/** Records calls #from… of one extension, `batch` at a time, as concurrent calls would. */
async function recordMany(opened: OpenedStores, extensionKey: string, count: number, batch = 100, from = 0): Promise<void> {
  for (let first = from; first < from + count; first += batch) {
    const bodies = Array.from({ length: Math.min(batch, from + count - first) }, (_, n) => `{"n":${first + n}}`);
    await Promise.all(bodies.map((body) => opened.stores.webhookRequests.record(extensionKey, entry(body))));
  }
}

conformance('request log: calls are numbered 1, 2, … per extension and read back newest first, as recorded', (site) =>
  using(site, async ({ stores: { webhookRequests: log } }) => {
    assert.is(await log.keptRange('gh'), null);
    assert.equal(await firstWindow(log, 'gh'), { before: 1, floor: 1 });
    const refused = entry('{"a":1}');
    const accepted = entry('{"a":2}', { outcome: 'ACCEPTED', reason: 'event published', eventId: randomUUID(), headers: { b: '2', a: '1', 'x-z': 'last' } });
    const odd = entry('nul \u0000 and é, cut here', { outcome: 'FAILED', reason: 'ours' });
    for (const call of [refused, accepted, odd]) await log.record('gh', call);
    await log.record('stripe', entry('{}'));

    assert.equal(await log.keptRange('gh'), { oldest: 1, newest: 3 });
    assert.equal(await log.keptRange('stripe'), { oldest: 1, newest: 1 });
    assert.equal(await log.newestFirst('gh', { before: 4, floor: 1 }, 10), [
      { seq: 3, entry: odd },
      { seq: 2, entry: accepted },
      { seq: 1, entry: refused },
    ]);
    assert.equal(Object.keys((await log.newestFirst('gh', { before: 3, floor: 1 }, 1))[0]!.entry.headers), ['b', 'a', 'x-z'], 'headers keep their order');
    assert.equal(await log.newestFirst('gh', { before: 3, floor: 2 }, 10), [{ seq: 2, entry: accepted }], 'within the window only');
    assert.equal(await log.newestFirst('gh', { before: 100, floor: 1 }, 2), [{ seq: 3, entry: odd }, { seq: 2, entry: accepted }]);

    const first = await requestPage(log, 'gh', await firstWindow(log, 'gh'), 2);
    assert.equal(first, { entries: [odd, accepted], lost: false, next: { before: 2, floor: 1 } });
    assert.equal(await requestPage(log, 'gh', first.next!, 2), { entries: [refused], lost: false });
  }),
);

conformance(`request log: an extension keeps its latest ${REQUESTS_PER_EXTENSION} calls; a page reaching dropped ones says so`, (site) =>
  using(site, async (opened) => {
    const log = opened.stores.webhookRequests;
    await recordMany(opened, 'busy', 10, 1);
    const early = await requestPage(log, 'busy', await firstWindow(log, 'busy'), 5);
    assert.equal(early.next, { before: 6, floor: 1 });
    await recordMany(opened, 'busy', REQUESTS_PER_EXTENSION, 100, 10);
    await opened.stores.webhookRequests.record('quiet', entry('{}'));

    assert.equal(await log.keptRange('busy'), { oldest: 11, newest: REQUESTS_PER_EXTENSION + 10 });
    const kept = await log.newestFirst('busy', { before: REQUESTS_PER_EXTENSION + 100, floor: 1 }, 2 * REQUESTS_PER_EXTENSION);
    assert.is(kept.length, REQUESTS_PER_EXTENSION, 'asked for more than it keeps: what was dropped is gone');
    assert.equal(kept.map((call) => call.seq), Array.from({ length: REQUESTS_PER_EXTENSION }, (_, n) => REQUESTS_PER_EXTENSION + 10 - n));
    assert.equal((await log.newestFirst('busy', { before: 11, floor: 1 }, 10)), []);
    assert.equal(await requestPage(log, 'busy', early.next!, 5), { entries: [], lost: true });
    assert.equal(await log.keptRange('quiet'), { oldest: 1, newest: 1 }, 'extensions are counted apart');
  }),
);

conformance('request log: what was recorded is there after a restart, and numbering goes on', async (site) => {
  const before = await using(site, async (opened) => {
    await recordMany(opened, 'gh', 2 * REQUESTS_PER_EXTENSION + 20, 250);
    return opened.stores.webhookRequests.newestFirst('gh', { before: 10_000, floor: 1 }, REQUESTS_PER_EXTENSION);
  });
  await using(site, async ({ stores: { webhookRequests: log } }) => {
    assert.equal(await log.newestFirst('gh', { before: 10_000, floor: 1 }, REQUESTS_PER_EXTENSION), before);
    const next = entry('{"after":"restart"}');
    await log.record('gh', next);
    assert.equal(await log.keptRange('gh'), { oldest: REQUESTS_PER_EXTENSION + 22, newest: 2 * REQUESTS_PER_EXTENSION + 21 });
    assert.equal((await log.newestFirst('gh', { before: 10_000, floor: 1 }, 1))[0], { seq: 2 * REQUESTS_PER_EXTENSION + 21, entry: next });
  });
});

conformance(
  'several daemons: calls of one extension recorded on two daemons at once are numbered without gaps or repeats, and both page them alike',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      await Promise.all([recordMany(one, 'shared', 150, 75), recordMany(two, 'shared', 150, 75, 150)]);
      const fromOne = await one.stores.webhookRequests.newestFirst('shared', { before: 10_000, floor: 1 }, 1000);
      assert.equal(fromOne.map((call) => call.seq), Array.from({ length: 300 }, (_, n) => 300 - n));
      assert.equal(new Set(fromOne.map((call) => call.entry.bodyExcerpt)).size, 300, 'every call kept once');
      const page = await requestPage(one.stores.webhookRequests, 'shared', await firstWindow(one.stores.webhookRequests, 'shared'), 100);
      const next = await requestPage(two.stores.webhookRequests, 'shared', page.next!, 100);
      assert.equal([...page.entries, ...next.entries], fromOne.slice(0, 200).map((call) => call.entry), 'a cursor from one daemon pages on the other');

      await Promise.all([recordMany(one, 'shared', REQUESTS_PER_EXTENSION, 50), recordMany(two, 'shared', REQUESTS_PER_EXTENSION, 50)]);
      assert.equal(await two.stores.webhookRequests.keptRange('shared'), { oldest: 2 * REQUESTS_PER_EXTENSION + 300 - 999, newest: 2 * REQUESTS_PER_EXTENSION + 300 });
      assert.is((await one.stores.webhookRequests.newestFirst('shared', { before: 10_000, floor: 1 }, 5000)).length, REQUESTS_PER_EXTENSION);
    });
  },
  { shared: true },
);

/** A clock the test moves; unix milliseconds. */
function movingClock(start = Date.parse('2026-03-01T00:00:00.000Z')) {
  let at = start;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

const claimed = (claim: ReplayClaim | null): ReplayClaim => {
  assert.ok(claim, 'expected a claim, got a duplicate');
  return claim!;
};

conformance('replay check: a committed id is a duplicate for 24 hours from its publish, then claimable again', async (site) => {
  const clock = movingClock();
  await using(
    site,
    async ({ stores: { webhookReplays: replays } }) => {
      assert.is(REPLAY_WINDOW_MS, 24 * 60 * 60 * 1000);
      await claimed(await replays.claim('gh', 'delivery-1')).commit();
      assert.is(await replays.claim('gh', 'delivery-1'), null);
      clock.advance(REPLAY_WINDOW_MS - 1);
      await replays.prune();
      assert.is(await replays.claim('gh', 'delivery-1'), null, 'still inside the window, pruned or not');
      clock.advance(1);
      const again = claimed(await replays.claim('gh', 'delivery-1'));
      await again.commit();
      clock.advance(REPLAY_WINDOW_MS - 1);
      assert.is(await replays.claim('gh', 'delivery-1'), null, 'the window starts again at the new publish');
    },
    { now: clock.now },
  );
});

conformance('replay check: a released claim leaves nothing behind, so a retry is processed; a claim settles once', (site) =>
  using(site, async ({ stores: { webhookReplays: replays } }) => {
    await claimed(await replays.claim('gh', 'failed-once')).release();
    const retry = claimed(await replays.claim('gh', 'failed-once'));
    await retry.commit();
    await retry.release();
    assert.is(await replays.claim('gh', 'failed-once'), null, 'a later release does not undo the commit');
  }),
);

conformance('replay check: a concurrent claim waits for the one in flight: null after a commit, a claim after a release', (site) =>
  using(site, async ({ stores: { webhookReplays: replays } }) => {
    const first = claimed(await replays.claim('gh', 'raced'));
    const waiting = replays.claim('gh', 'raced');
    await first.release();
    const second = claimed(await waiting);

    const third = replays.claim('gh', 'raced');
    const fourth = replays.claim('gh', 'raced');
    await second.commit();
    assert.is(await third, null);
    assert.is(await fourth, null);
  }),
);

conformance('replay check: ids are kept apart per extension, whatever their length or text', (site) =>
  using(site, async ({ stores: { webhookReplays: replays } }) => {
    await claimed(await replays.claim('gh', 'shared-id')).commit();
    assert.is(await replays.claim('gh', 'shared-id'), null);
    await claimed(await replays.claim('stripe', 'shared-id')).release();
    await claimed(await replays.claim('a-b', 'c')).commit();
    await claimed(await replays.claim('a', 'b-c')).release();

    await claimed(await replays.claim('gh', 'x'.repeat(100_000))).commit();
    assert.is(await replays.claim('gh', 'x'.repeat(100_000)), null);
    await claimed(await replays.claim('gh', 'x'.repeat(99_999))).release();
    await claimed(await replays.claim('gh', 'nul \u0000 é 😀')).commit();
    assert.is(await replays.claim('gh', 'nul \u0000 é 😀'), null);
    await claimed(await replays.claim('gh', 'nul \u0000 é')).release();
  }),
);

conformance('replay check: a published id survives a restart where the check is shared; the memory of the file backend forgets', async (site, backend) => {
  await using(site, async ({ stores: { webhookReplays: replays } }) => {
    await claimed(await replays.claim('gh', 'before-restart')).commit();
  });
  await using(site, async ({ stores: { webhookReplays: replays } }) => {
    assert.is((await replays.claim('gh', 'before-restart')) === null, backend.shared);
  });
});

conformance(
  'several daemons: calls with one delivery id arriving at two daemons at once publish once; the others wait and are duplicates',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      for (let round = 0; round < 5; round += 1) {
        const published: string[] = [];
        const call = async (daemon: OpenedStores, name: string): Promise<'published' | 'duplicate'> => {
          const claim = await daemon.stores.webhookReplays.claim('gh', `delivery-${round}`);
          if (!claim) return 'duplicate';
          published.push(name);
          // A publish that takes a moment, so that the others arrive while it is in flight.
          await new Promise((resolve) => setTimeout(resolve, 20));
          await claim.commit();
          return 'published';
        };
        const outcomes = await Promise.all(Array.from({ length: 8 }, (_, n) => call(n % 2 ? two : one, `call ${n}`)));
        assert.is(published.length, 1, `round ${round}: ${published.join(', ')}`);
        assert.is(outcomes.filter((outcome) => outcome === 'duplicate').length, 7);
      }
    });
  },
  { shared: true },
);

conformance(
  "several daemons: a call waiting on another daemon's claim gets the id when that publish fails",
  async (site) => {
    await usingTwo(site, async (one, two) => {
      const first = claimed(await one.stores.webhookReplays.claim('gh', 'failing'));
      let settled = false;
      const waiting = two.stores.webhookReplays.claim('gh', 'failing').finally(() => (settled = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.is(settled, false, 'it waits while the first is in flight');
      await first.release();
      const second = claimed(await waiting);
      await second.commit();
      assert.is(await one.stores.webhookReplays.claim('gh', 'failing'), null);
    });
  },
  { shared: true },
);

conformance(
  'several daemons: the claim of a daemon that stopped mid-publish lapses after two minutes, and another daemon takes the id over',
  async (site) => {
    const clock = movingClock();
    const one = await site.open({ now: clock.now });
    claimed(await one.stores.webhookReplays.claim('gh', 'orphaned'));
    await one.close();
    const two = await site.open({ now: clock.now });
    try {
      clock.advance(2 * 60 * 1000);
      const taken = claimed(await two.stores.webhookReplays.claim('gh', 'orphaned'));
      await taken.commit();
      assert.is(await two.stores.webhookReplays.claim('gh', 'orphaned'), null);
    } finally {
      await two.close();
    }
  },
  { shared: true },
);

test('postgres: prune deletes the rows of ids whose window has passed and of lapsed claims, and keeps the rest', async () => {
  const site = await BACKENDS.find((backend) => backend.name === 'postgres')!.site();
  const clock = movingClock();
  const opened = await site.open({ now: clock.now });
  try {
    const replays = opened.stores.webhookReplays;
    await claimed(await replays.claim('gh', 'old')).commit();
    claimed(await replays.claim('gh', 'orphaned'));
    clock.advance(REPLAY_WINDOW_MS - 1000);
    await claimed(await replays.claim('gh', 'recent')).commit();
    clock.advance(1000);
    await replays.prune();
    const { rows } = await opened.database!.query<{ count: string }>('SELECT count(*) FROM webhook_replays');
    assert.is(Number(rows[0]!.count), 1);
    assert.is(await replays.claim('gh', 'recent'), null);
  } finally {
    await opened.close();
    await site.destroy();
  }
});

test('memory replay check: beyond its cap the oldest ids are forgotten first, and expired ones leave memory', async () => {
  const clock = movingClock();
  const capped = new MemoryWebhookReplayStore(clock.now, 3);
  for (const id of ['a', 'b', 'c', 'd']) await claimed(await capped.claim('s', id)).commit();
  assert.is(capped.size, 3);
  assert.is(await capped.claim('s', 'd'), null);
  await claimed(await capped.claim('s', 'a')).release();

  const replays = new MemoryWebhookReplayStore(clock.now);
  for (let n = 0; n < 50; n += 1) await claimed(await replays.claim('s', `id-${n}`)).commit();
  assert.is(replays.size, 50);
  clock.advance(REPLAY_WINDOW_MS);
  await replays.prune();
  assert.is(replays.size, 0);
  assert.throws(() => new MemoryWebhookReplayStore(clock.now, 0), RangeError);
});

test('postgres: a request log entry that cannot be stored is reported, and recording it still resolves', async () => {
  const site = await BACKENDS.find((backend) => backend.name === 'postgres')!.site();
  const logged: string[] = [];
  const opened = await site.open({ logError: (message) => logged.push(message) });
  try {
    await opened.database!.close();
    await opened.stores.webhookRequests.record('gh', entry('{}'));
    assert.equal(logged.length, 1);
    assert.match(logged[0]!, /^webhook request log: /);
  } finally {
    await site.destroy();
  }
});

test.run();
