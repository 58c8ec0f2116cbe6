import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { deadLetterOf, type StoredDeadLetter } from '../src/daemon/dispatch/types.js';
import type { DeadLetterStore, NewAttempt } from '../src/daemon/dispatch/store.js';
import { CarriedEvent, type Delivery } from '../src/daemon/dispatch/types.js';
import { newDelivery } from '../src/daemon/events/service.js';
import { DeadLetterService } from '../src/daemon/dispatch/dead-letter-service.js';
import { conformance, rejection, type OpenedStores, type StoreSite, using, usingTwo } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';
import { listed } from './helpers/pages.js';

/**
 * The events domain's stores (event log, deliveries with their records, dead
 * letters), held to one contract on both backends; the cases marked shared
 * run several daemons on one PostgreSQL queue.
 */

const RETENTION = { maxAgeMs: 7 * 86_400_000, maxPerWorkspace: 10_000 };

function eventIn(workspaceId: string, eventKey = 'order.created', payload: Record<string, unknown> = { n: 1 }): PlatformEvent {
  return {
    id: randomUUID(),
    eventKey,
    tenantId: workspaceId,
    actor: 'ana@example.com',
    publishedBy: 'user-1',
    payload,
    schemaVersion: null,
    occurredAt: new Date().toISOString(),
  };
}

/** An event two days old: past a one-day retention. */
function expiredIn(workspaceId: string): PlatformEvent {
  const event = eventIn(workspaceId);
  event.occurredAt = new Date(Date.now() - 2 * 86_400_000).toISOString();
  return event;
}

const deliveryOf = (event: PlatformEvent, subscriptionId = 'sub-1'): Delivery =>
  newDelivery(CarriedEvent.of(event), 1, { subscriptionId, extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://127.0.0.1:9/hooks' }, Date.now());

const attempt = (outcome: NewAttempt['outcome'], httpStatus: number): NewAttempt => ({
  startedAt: new Date().toISOString(),
  durationMs: 3,
  outcome,
  httpStatus,
  ...(outcome === 'SUCCESS' ? {} : { error: `status ${httpStatus}` }),
  responseExcerpt: `answer \u0000 ${httpStatus}`,
});

/** Runs the delivery's failed attempt as the dispatcher does, and makes it a dead letter. */
async function killed(opened: OpenedStores, delivery: Delivery): Promise<StoredDeadLetter> {
  delivery.attempts += 1;
  delivery.firstAttemptAt ??= new Date().toISOString();
  delivery.lastError = { message: 'status 400', status: 400 };
  const letter = deadLetterOf(delivery, await delivery.event.object(), delivery.lastError, Date.now());
  await opened.stores.deliveries.dead(delivery, attempt('FAILED', 400), letter);
  return letter;
}


conformance('a published event is found and listed newest first, its deliveries pending with their records', (site) =>
  using(site, async ({ stores: { events, deliveries } }) => {
    const first = eventIn('ws-a', 'order.created', { text: 'nul \u0000 kept', z: 1, a: 2 });
    const second = eventIn('ws-a', 'order.paid');
    const other = eventIn('ws-b');
    const delivery = deliveryOf(first);
    await events.publish(first, [delivery]);
    await Promise.all([events.publish(second, []), events.publish(other, [])]);

    assert.equal(await events.find('ws-a', first.id), first);
    assert.is(await events.find('ws-b', first.id), undefined, 'another workspace does not see it');
    assert.equal(Object.keys((await events.find('ws-a', first.id))!.payload), ['text', 'z', 'a'], 'the payload keeps its key order');
    const page = await listed(events, 'ws-a', { limit: 1 }, RETENTION, Date.now());
    assert.equal(page.items.map((event) => event.id), [second.id]);
    assert.ok(page.more && page.last);
    const next = await listed(events, 'ws-a', { limit: 1, before: page.last }, RETENTION, Date.now());
    assert.equal(next.items.map((event) => event.id), [first.id]);
    assert.is(next.more, false);
    assert.equal((await listed(events, 'ws-a', { limit: 10, eventKey: 'order.paid' }, RETENTION, Date.now())).items.map((e) => e.id), [second.id]);
    assert.is(await events.storedCount(), 3);

    const [record] = await deliveries.ofEvent('ws-a', first.id);
    assert.equal([record?.id, record?.status, record?.attempts], [delivery.id, 'PENDING', []]);
  }),
);

conformance('attempts are numbered across a replay; replay and discard move the record and the dead letter together', (site) =>
  using(site, async (opened) => {
    const { events, deliveries, deadLetters } = opened.stores;
    const event = eventIn('ws-a');
    const delivery = deliveryOf(event);
    await events.publish(event, [delivery]);
    assert.ok(deliveries.holds(delivery), 'the publishing daemon holds its new delivery');
    delivery.attempts = 1;
    delivery.nextAttemptAt = Date.now();
    delivery.lastError = { message: 'status 503', status: 503 };
    deliveries.retrying(delivery, attempt('RETRY', 503));
    await deliveries.settled();
    // A shared queue got the retry back: it is claimed again when due (files keep it with this daemon).
    const retried = deliveries.shared ? (await deliveries.claim(5))[0]! : delivery;
    assert.equal([retried.id, retried.attempts, retried.lastError], [delivery.id, 1, { message: 'status 503', status: 503 }]);
    const letter = await killed(opened, retried);
    await deliveries.settled();

    assert.is(await deadLetters.count(), 1);
    assert.equal((await deadLetters.get(letter.id)).lastError, { message: 'status 400', status: 400 });
    assert.is(await deadLetters.state(letter.id), 'dead');
    let [record] = await deliveries.ofEvent('ws-a', event.id);
    assert.equal([record?.status, record?.attempts.map((a) => [a.number, a.outcome, a.responseExcerpt])], [
      'DEAD',
      [
        [1, 'RETRY', 'answer \u0000 503'],
        [2, 'FAILED', 'answer \u0000 400'],
      ],
    ]);

    const [replayed] = await deadLetters.replay([letter.id], Date.now());
    assert.ok(replayed);
    assert.equal([replayed.id, replayed.attempts, replayed.replayCount, replayed.deadLetterId], [delivery.id, 0, 1, letter.id]);
    assert.is(await deadLetters.state(letter.id), 'queued');
    assert.equal(await deadLetters.replay([letter.id], Date.now()), [], 'a letter is replayed once');
    assert.is((await deliveries.ofEvent('ws-a', event.id))[0]?.status, 'PENDING');

    const again = await killed(opened, replayed);
    assert.is(again.id, letter.id, 'a replay that fails comes back under the same id');
    assert.is((await deadLetters.get(letter.id)).replayCount, 1);
    assert.is(await deadLetters.discard([letter.id], Date.now()), 1);
    assert.is(await deadLetters.state(letter.id), 'gone');
    assert.is((await rejection(deadLetters.get(letter.id))).code, 'NOT_FOUND');
    [record] = await deliveries.ofEvent('ws-a', event.id);
    assert.equal([record?.status, record?.attempts.map((a) => a.number)], ['DISCARDED', [1, 2, 3]]);
  }),
);

conformance('a delivery is found by id whatever its status; a redelivery of its event is queued and recorded, across a restart', async (site) => {
  const event = eventIn('ws-again');
  const original = deliveryOf(event);
  const redelivery: Delivery = { ...deliveryOf(event), redeliveryOf: original.id };
  await using(site, async ({ stores: { events, deliveries } }) => {
    await events.publish(event, [original]);
    deliveries.succeeded(original, attempt('SUCCESS', 200));
    await deliveries.settled();
    const found = await deliveries.find('ws-again', original.id);
    assert.equal([found?.id, found?.status, found?.redeliveryOf], [original.id, 'SUCCEEDED', undefined]);
    assert.is(await deliveries.find('ws-other', original.id), undefined, 'another workspace does not see it');
    assert.is(await deliveries.find('ws-again', 'msg_unknown'), undefined);

    const held = await deliveries.redeliver({ ...redelivery, event: CarriedEvent.of((await events.find('ws-again', event.id))!) });
    assert.equal(held.map((delivery) => [delivery.id, delivery.redeliveryOf]), [[redelivery.id, original.id]]);
    assert.ok(deliveries.holds(held[0]!), 'the daemon that queued it holds it');
    const record = await deliveries.find('ws-again', redelivery.id);
    assert.equal([record?.status, record?.redeliveryOf, record?.eventId], ['PENDING', original.id, event.id]);
    assert.equal((await deliveries.ofEvent('ws-again', event.id)).map((shown) => shown.id), [original.id, redelivery.id]);
    // As the dispatcher stops: a shared store lets go of what this daemon held.
    await deliveries.settled();
  });
  await using(site, async ({ stores: { deliveries } }) => {
    assert.is((await deliveries.pending()).count, 1, 'the redelivery is still pending after a restart');
    const [claimed] = await deliveries.claim(5);
    assert.equal([claimed?.id, claimed?.redeliveryOf, (await claimed?.event.object())?.id], [redelivery.id, original.id, event.id]);
    deliveries.retrying({ ...claimed!, attempts: 1, nextAttemptAt: Date.now() }, attempt('RETRY', 503));
    await deliveries.settled();
    const record = await deliveries.find('ws-again', redelivery.id);
    assert.equal([record?.status, record?.redeliveryOf, record?.attempts.length], ['PENDING', original.id, 1], 'an attempt keeps redeliveryOf');
  });
});

conformance('bulk replay and discard of dead letters go in batches, oldest first, across a restart', async (site) => {
  const killedIds: string[] = [];
  const inactive = new Set<string>();
  await using(site, async (opened) => {
    const { events } = opened.stores;
    for (let n = 0; n < 250; n += 1) {
      const event = eventIn('ws-bulk', 'order.created', { n });
      // Every tenth letter's subscription is gone: a replay skips it.
      const delivery = deliveryOf(event, n % 10 === 0 ? 'sub-gone' : 'sub-1');
      await events.publish(event, [delivery]);
      const letter = await killed(opened, delivery);
      killedIds.push(letter.id);
      if (n % 10 === 0) inactive.add(letter.id);
    }
    await opened.stores.deliveries.settled();
  });
  await using(site, async (opened) => {
    const { deadLetters, deliveries } = opened.stores;
    assert.is(await deadLetters.count(), 250, 'the dead letters survive a restart');
    const first = await deadLetters.matchingIds({ workspaceId: 'ws-bulk' }, null, 100);
    assert.equal(first.letters.map((letter) => letter.id), killedIds.slice(0, 100), 'oldest first');
    const second = await deadLetters.matchingIds({ workspaceId: 'ws-bulk' }, first.next, 200);
    assert.equal(second.letters.map((letter) => letter.id), killedIds.slice(100));
    assert.is(second.next, null);

    const queued: Delivery[] = [];
    const admin = new DeadLetterService({
      deadLetters,
      assertWorkspaceExists: async () => undefined,
      extensionExists: () => true,
      inactivity: (subscriptionId) => (subscriptionId === 'sub-gone' ? 'subscription deleted' : null),
      enqueue: (replayed) => queued.push(...replayed),
    });
    assert.equal(await admin.replayMatching({ workspaceId: 'ws-bulk' }, 200), { replayed: 200, skipped: 25 });
    const active = killedIds.filter((id) => !inactive.has(id));
    assert.equal(queued.map((delivery) => delivery.deadLetterId), active.slice(0, 200), 'the oldest 200 replayable, in three batches');
    assert.is((await deliveries.ofEvent('ws-bulk', queued[0]!.event.id))[0]?.status, 'PENDING');
    assert.equal(await admin.discardMatching({ workspaceId: 'ws-bulk' }), { discarded: 50 });
    assert.is(await deadLetters.count(), 0);
    assert.is((await deadLetters.matchingIds({}, null, 10)).letters.length, 0);
    await deliveries.settled();
  });
});

conformance('a bulk replay reads only until its limit is queued; the skipped are counted by subscription in the store', (site) =>
  using(site, async (opened) => {
    const { events, deadLetters, deliveries } = opened.stores;
    for (let n = 0; n < 300; n += 1) {
      const event = eventIn('ws-limit', 'order.created', { n });
      const delivery = deliveryOf(event, n % 3 === 0 ? 'sub-gone' : 'sub-1');
      await events.publish(event, [delivery]);
      await killed(opened, delivery);
    }
    await deliveries.settled();
    assert.equal(await deadLetters.countBySubscription({ workspaceId: 'ws-limit' }), new Map([['sub-gone', 100], ['sub-1', 200]]));
    assert.equal(await deadLetters.countBySubscription({ workspaceId: 'ws-limit', extensionKey: 'nothing' }), new Map());

    let batchesRead = 0;
    const counting = new Proxy(deadLetters, {
      get(target, name: keyof DeadLetterStore) {
        if (name === 'matchingIds') batchesRead += 1;
        const member = target[name];
        return typeof member === 'function' ? member.bind(target) : member;
      },
    });
    const admin = new DeadLetterService({
      deadLetters: counting,
      assertWorkspaceExists: async () => undefined,
      extensionExists: () => true,
      inactivity: (subscriptionId) => (subscriptionId === 'sub-gone' ? 'subscription deleted' : null),
      enqueue: () => undefined,
    });
    assert.equal(await admin.replayMatching({ workspaceId: 'ws-limit' }, 50), { replayed: 50, skipped: 100 });
    assert.is(batchesRead, 1, 'one batch holds the first 50 replayable');
    batchesRead = 0;
    assert.equal(await admin.replayMatching({ workspaceId: 'ws-limit' }, 1_000), { replayed: 150, skipped: 100 });
    assert.is(batchesRead, 3, 'the 250 letters left, a batch of 100 at a time');
    await deliveries.settled();
  }),
);

conformance('deliveries page newest first by cursor, filtered by status', (site) =>
  using(site, async (opened) => {
    const { events, deliveries } = opened.stores;
    const published: Delivery[] = [];
    for (let n = 0; n < 5; n += 1) {
      const event = eventIn('ws-a');
      const delivery = deliveryOf(event, `sub-${n % 2}`);
      await events.publish(event, [delivery]);
      published.push(delivery);
    }
    const first = await deliveries.list('ws-a', { limit: 2 });
    assert.equal(first.items.map((r) => r.id), [published[4]!.id, published[3]!.id]);
    assert.ok(first.more && first.lastSeq !== null);
    const rest = await deliveries.list('ws-a', { limit: 10, before: first.lastSeq! });
    assert.equal(rest.items.map((r) => r.id), [published[2]!.id, published[1]!.id, published[0]!.id]);
    assert.equal((await deliveries.list('ws-a', { limit: 10, subscriptionId: 'sub-1' })).items.map((r) => r.id), [published[3]!.id, published[1]!.id]);
    deliveries.succeeded(published[0]!, attempt('SUCCESS', 200));
    await deliveries.settled();
    assert.equal((await deliveries.list('ws-a', { limit: 10, status: 'SUCCEEDED' })).items.map((r) => r.id), [published[0]!.id]);
  }),
);

conformance('deliveries filter by since and until to the millisecond, both ends inclusive', (site) =>
  using(site, async ({ stores: { events, deliveries } }) => {
    // Ten records 150 ms apart: within a second, only the milliseconds tell them apart.
    const start = Date.parse('2026-11-21T12:00:00.000Z');
    const published: Delivery[] = [];
    for (let n = 0; n < 10; n += 1) {
      const event = eventIn('ws-a');
      const delivery = { ...deliveryOf(event), enqueuedAt: new Date(start + n * 150).toISOString() };
      await events.publish(event, [delivery]);
      published.push(delivery);
    }
    const between = await deliveries.list('ws-a', { limit: 100, since: start + 300, until: start + 1050 });
    assert.equal(between.items.map((record) => record.id), published.slice(2, 8).reverse().map((delivery) => delivery.id));
  }),
);

// Files never compact the segment being written (decisions: "The event log"): these cases need a sealed segment
// there, and files keep pending deliveries and dead letters in files of their own (delivery-records.test.ts).
conformance(
  'retention removes expired events and the records of their deliveries, and keeps the rest',
  (site) =>
    using(site, async ({ stores: { events, deliveries } }) => {
      const old = expiredIn('ws-a');
      const fresh = eventIn('ws-a');
      const delivered = deliveryOf(old);
      await events.publish(old, [delivered]);
      await events.publish(fresh, [deliveryOf(fresh)]);
      deliveries.succeeded(delivered, attempt('SUCCESS', 200));
      await deliveries.settled();
      const removed = await events.applyRetention({ maxAgeMs: 86_400_000, maxPerWorkspace: 100 }, Date.now());
      assert.equal(removed, { removedEvents: 1, removedDeliveries: 1 });
      assert.is(await events.find('ws-a', old.id), undefined);
      assert.equal(await deliveries.ofEvent('ws-a', old.id), []);
      assert.equal((await deliveries.ofEvent('ws-a', fresh.id)).length, 1);
    }),
  { shared: true },
);

conformance(
  'retention keeps an expired event while a delivery of it is still pending or a dead letter, unlisted, and removes it once they end',
  (site) =>
    using(site, async (opened) => {
      const { events, deliveries, deadLetters } = opened.stores;
      const policy = { maxAgeMs: 86_400_000, maxPerWorkspace: 100 };
      const retried = expiredIn('ws-a');
      const failed = expiredIn('ws-a');
      const retry = deliveryOf(retried);
      const dead = deliveryOf(failed);
      await events.publish(retried, [retry]);
      await events.publish(failed, [dead]);
      retry.attempts = 1;
      retry.nextAttemptAt = Date.now();
      deliveries.retrying(retry, attempt('RETRY', 503));
      const letter = await killed(opened, dead);
      await deliveries.settled();

      assert.equal(await events.applyRetention(policy, Date.now()), { removedEvents: 0, removedDeliveries: 0 });
      assert.equal((await listed(events, 'ws-a', { limit: 10 }, policy, Date.now())).items, [], 'expired events are not listed');
      assert.equal(await events.find('ws-a', failed.id), failed, "the dead letter's event is still found");
      const [claimed] = await deliveries.claim(5);
      assert.is(claimed?.id, retry.id, 'the retry is still claimed');
      const [replayed] = await deadLetters.replay([letter.id], Date.now());
      assert.is(replayed?.id, dead.id, 'the dead letter is still replayed');

      deliveries.succeeded(claimed!, attempt('SUCCESS', 200));
      await deliveries.settled();
      assert.equal(await events.applyRetention(policy, Date.now()), { removedEvents: 1, removedDeliveries: 1 });
      assert.is(await events.find('ws-a', retried.id), undefined);
      assert.equal(await events.find('ws-a', failed.id), failed, 'the replayed delivery is pending again');
    }),
  { shared: true },
);

// Several daemons on one queue (PostgreSQL)

/** Publishes `count` events with a delivery each, left to the shared queue (the publisher keeps none). */
async function queue(site: StoreSite, count: number): Promise<string[]> {
  return using(
    site,
    async ({ stores: { events } }) => {
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: count }, async () => {
          const event = eventIn('ws-a');
          const delivery = deliveryOf(event);
          ids.push(delivery.id);
          await events.publish(event, [delivery]);
        }),
      );
      return ids;
    },
    { holdDeliveriesAtMost: 0 },
  );
}

conformance(
  'two daemons claiming from one queue at once never get the same delivery',
  async (site) => {
    const ids = await queue(site, 60);
    await usingTwo(site, async (a, b) => {
      const claimed: string[][] = [[], []];
      for (let round = 0; round < 10; round += 1) {
        const [fromA, fromB] = await Promise.all([a.stores.deliveries.claim(4), b.stores.deliveries.claim(4)]);
        claimed[0]!.push(...fromA.map((d) => d.id));
        claimed[1]!.push(...fromB.map((d) => d.id));
      }
      const all = [...claimed[0]!, ...claimed[1]!];
      assert.is(new Set(all).size, all.length, 'no delivery claimed twice');
      assert.is(all.length, 60);
      assert.equal(new Set(all), new Set(ids));
      assert.ok(claimed[0]!.length > 0 && claimed[1]!.length > 0, 'both daemons got work');
      assert.equal(await a.stores.deliveries.claim(10), [], 'every one is leased');
    });
  },
  { shared: true },
);

conformance(
  'a lease that lapses is taken over; the first daemon’s late result is not written over the second’s',
  async (site) => {
    const [id] = await queue(site, 1);
    await usingTwo(site, async (a, b) => {
      const [held] = await a.stores.deliveries.claim(1);
      assert.is(held?.id, id);
      assert.equal(await b.stores.deliveries.claim(1), [], 'leased while a renews it');
      // A stops renewing without releasing anything, as a killed daemon would.
      await a.database!.query(`UPDATE deliveries SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
      const [taken] = await b.stores.deliveries.claim(1);
      assert.is(taken?.id, id, 'the lapsed lease is taken over');
      b.stores.deliveries.succeeded(taken!, attempt('SUCCESS', 200));
      await b.stores.deliveries.settled();
      held!.attempts = 1;
      held!.nextAttemptAt = Date.now() + 1_000;
      a.stores.deliveries.retrying(held!, attempt('RETRY', 503));
      await a.stores.deliveries.settled();
      const [record] = await b.stores.deliveries.ofEvent('ws-a', taken!.event.id);
      assert.equal([record?.status, record?.attempts.map((x) => x.outcome)], ['SUCCEEDED', ['SUCCESS']]);
      // A long lease: A renews every third of it, and a renewal between the lapse set above and B's claim would take the lease back.
    }, { deliveryLeaseMs: 60_000 });
  },
  { shared: true },
);

conformance(
  'a stalled daemon’s lease lapses by itself and another daemon claims the delivery',
  async (site) => {
    const [id] = await queue(site, 1);
    const a = await site.open({ deliveryLeaseMs: 200 });
    const b = await site.open({ deliveryLeaseMs: 200 });
    try {
      assert.is((await a.stores.deliveries.claim(1))[0]?.id, id);
      // A's renewals stop (its stores closed without releasing: the process died).
      await a.close();
      const taken = await waitFor('the lease to lapse', async () => (await b.stores.deliveries.claim(1))[0]);
      assert.is(taken.id, id);
    } finally {
      await b.close();
    }
  },
  { shared: true },
);

conformance(
  'a claimed delivery is renewed while held, so no other daemon takes it',
  async (site) => {
    await queue(site, 1);
    await usingTwo(site, async (a, b) => {
      assert.is((await a.stores.deliveries.claim(1)).length, 1);
      const renewedPast = Date.now() + 900;
      while (Date.now() < renewedPast) {
        assert.equal(await b.stores.deliveries.claim(1), [], 'still leased to a');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }, { deliveryLeaseMs: 300 });
  },
  { shared: true },
);

conformance(
  'a dead letter replayed by two daemons at once is replayed once',
  async (site) => {
    await usingTwo(site, async (a, b) => {
      const event = eventIn('ws-a');
      const delivery = deliveryOf(event);
      await a.stores.events.publish(event, [delivery]);
      const letter = await killed(a, delivery);
      const [fromA, fromB] = await Promise.all([a.stores.deadLetters.replay([letter.id], Date.now()), b.stores.deadLetters.replay([letter.id], Date.now())]);
      assert.is(fromA.length + fromB.length, 1);
      const [record] = await a.stores.deliveries.ofEvent('ws-a', event.id);
      assert.is(record?.status, 'PENDING');
      assert.is((fromA[0] ?? fromB[0])!.replayCount, 1);
    });
  },
  { shared: true },
);

test.run();
