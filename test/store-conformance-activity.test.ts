import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { ActivityFeed, KEPT_ITEMS, STREAM_PAYLOAD_BYTES, type ActivityItem } from '../src/daemon/events/activity.js';
import { conformance, type OpenedStores } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * The activity log behind live streams, held to one contract on both
 * backends; on PostgreSQL also across daemons sharing one schema. Streams
 * over HTTP are in streams.test.ts and multi-daemon.test.ts.
 */

const event = (n: number, payload: Record<string, unknown> = {}): PlatformEvent => ({
  id: randomUUID(),
  eventKey: 'app.step',
  tenantId: 'ws',
  actor: 'tester',
  publishedBy: 'tester',
  payload: { n, ...payload },
  schemaVersion: null,
  occurredAt: '2026-03-01T10:00:00.000Z',
});

/** A daemon's feed over the site's activity log, and what one stream of it got. */
async function daemon(opened: OpenedStores) {
  const feed = await ActivityFeed.open(opened.stores.activity);
  await opened.listen();
  return feed;
}

function follow(feed: ActivityFeed, lastEventId: number | null = null) {
  const items: ActivityItem[] = [];
  const unsubscribe = feed.follow(lastEventId, { item: (item) => items.push(item), closed: () => undefined });
  const frames = () => items.map((item) => item.frame.toString());
  return { items, frames, unsubscribe, ids: () => items.map((item) => item.id) };
}

const increasing = (ids: number[]) => ids.every((id, index) => index === 0 || id > ids[index - 1]!);

conformance('items reach a stream once each, in id order, with their data as appended', async (site) => {
  const opened = await site.open();
  try {
    const feed = await daemon(opened);
    const stream = follow(feed);
    const events = [event(1, { text: 'nul \u0000, é, 𝄞' }), event(2), event(3)];
    for (const published of events) feed.eventPublished(published);
    await waitFor('the three items', () => stream.items.length === 3 || undefined);
    assert.ok(increasing(stream.ids()), stream.ids().join(', '));
    assert.equal(
      stream.frames().map((frame) => JSON.parse(frame.split('\ndata: ')[1]!)),
      events,
    );
    assert.equal(stream.frames()[0]!.split('\n').slice(0, 2), [`id: ${stream.ids()[0]}`, 'event: event.published']);

    const resumed = follow(feed, stream.ids()[0]!);
    assert.equal(resumed.ids(), stream.ids().slice(1), 'the kept items after the id, at once');
  } finally {
    await opened.close();
  }
});

conformance('a burst of more items than the history keeps reaches a stream whole, and the latest KEPT_ITEMS are kept', async (site) => {
  const opened = await site.open();
  try {
    const feed = await daemon(opened);
    const stream = follow(feed);
    const burst = KEPT_ITEMS + KEPT_ITEMS / 2;
    for (let n = 1; n <= burst; n += 1) feed.eventPublished(event(n));
    await waitFor('the whole burst', () => stream.items.length === burst || undefined);
    feed.eventPublished(event(burst + 1));
    await waitFor('the item after it', () => stream.items.length === burst + 1 || undefined);
    assert.ok(increasing(stream.ids()), 'once each, in order');

    const latest = stream.ids().slice(-KEPT_ITEMS);
    assert.equal(follow(feed, 0).ids(), latest, 'the kept history');
    // Every daemon reads the history from the table: nothing older may linger there.
    const rows = await opened.database?.query<{ id: string }>('SELECT id FROM activity ORDER BY id');
    if (rows) assert.equal(rows.rows.map((row) => Number(row.id)), latest, 'the table holds the latest items only');
  } finally {
    await opened.close();
  }
});

conformance(
  'daemons sharing the log see each other\'s items with the same ids, and one opened later gets the kept history',
  async (site) => {
    const [first, second] = [await site.open(), await site.open()];
    let third: OpenedStores | undefined;
    try {
      const [one, two] = [await daemon(first), await daemon(second)];
      const [onOne, onTwo] = [follow(one), follow(two)];
      one.eventPublished(event(1));
      two.eventPublished(event(2, { text: 'nul \u0000, é, 𝄞' }));
      one.eventPublished(event(3));
      await waitFor('every item on both', () => (onOne.items.length === 3 && onTwo.items.length === 3) || undefined);
      assert.equal(onOne.frames(), onTwo.frames(), 'the same items, data, ids and order on both');
      assert.ok(increasing(onOne.ids()));

      third = await site.open();
      const three = await daemon(third);
      assert.equal(follow(three, 1).frames(), onOne.frames());
    } finally {
      await third?.close();
      await second.close();
      await first.close();
    }
  },
  { shared: true },
);

conformance(
  'a Last-Event-ID from a daemon that is ahead holds back the items up to it: nothing is repeated',
  async (site) => {
    const [first, second] = [await site.open(), await site.open()];
    try {
      const one = await daemon(first);
      // The second daemon hears no notification: it reads only when asked to (or after 2 s).
      const two = await ActivityFeed.open(second.stores.activity);
      const onOne = follow(one);
      for (const n of [1, 2, 3]) one.eventPublished(event(n));
      await waitFor('the items on the first daemon', () => onOne.items.length === 3 || undefined);

      const resumed = follow(two, onOne.ids()[1]!);
      await waitFor('the item after the id', () => resumed.items.length > 0 || undefined);
      assert.equal(resumed.frames(), onOne.frames().slice(2));
    } finally {
      await second.close();
      await first.close();
    }
  },
  { shared: true },
);

conformance(
  'an event whose payload is over 16 KiB is kept and shared without it, with payloadBytes: every item stays small',
  async (site) => {
    const [first, second] = [await site.open(), await site.open()];
    try {
      const [one, two] = [await daemon(first), await daemon(second)];
      const onTwo = follow(two);
      const large = event(1, { text: 'x'.repeat(200_000) });
      const small = event(2);
      one.eventPublished(large);
      one.eventPublished(small);
      await waitFor('both items on the other daemon', () => onTwo.items.length === 2 || undefined);
      const [largeData, smallData] = onTwo.frames().map((frame) => JSON.parse(frame.split('\ndata: ')[1]!));
      const { payload, ...rest } = large;
      assert.equal(largeData, { ...rest, payloadBytes: Buffer.byteLength(JSON.stringify(payload)) });
      assert.equal(smallData, small);
      const { rows } = await first.database!.query<{ size: number; bytes: number }>('SELECT size, octet_length(data) AS bytes FROM activity ORDER BY id');
      assert.ok(rows.every((row) => row.size < STREAM_PAYLOAD_BYTES && row.bytes < STREAM_PAYLOAD_BYTES), JSON.stringify(rows));
    } finally {
      await second.close();
      await first.close();
    }
  },
  { shared: true },
);

test.run();
