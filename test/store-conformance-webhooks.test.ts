import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { firstWindow, requestPage, REQUESTS_PER_EXTENSION, type WebhookRequestEntry } from '../src/daemon/webhooks/request-log.js';
import { BACKENDS, conformance, type OpenedStores, type StoreSite } from './helpers/stores.js';

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

async function using<T>(site: StoreSite, run: (opened: OpenedStores) => Promise<T>): Promise<T> {
  const opened = await site.open();
  try {
    return await run(opened);
  } finally {
    await opened.close();
  }
}

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
    const [one, two] = [await site.open(), await site.open()];
    try {
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
    } finally {
      await one.close();
      await two.close();
    }
  },
  { shared: true },
);

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
