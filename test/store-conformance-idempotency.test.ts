import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import type { ClaimOutcome, KeyClaim, KeyRef } from '../src/daemon/events/idempotency.js';
import { FileIdempotencyKeyStore, IDEMPOTENCY_KEYS_FILE } from '../src/daemon/store/file/idempotency-keys.js';
import { KeptKeys } from '../src/daemon/store/file/kept-keys.js';
import { conformance, using, usingTwo } from './helpers/stores.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

/**
 * The idempotency key stores, held to one contract on both backends: a claim
 * is exclusive, settled once; a kept key answers its first request's body
 * hash and event; a claim left unsettled (a crash) is taken for published
 * exactly when its event was recorded. The file backend's memory is bounded
 * by its key count.
 */

const DAY_MS = 86_400_000;
const sha256 = (text: string) => createHash('sha256').update(text).digest();
const keyOf = (workspaceId: string, key: string): KeyRef => ({ workspaceId, keyDigest: sha256(key) });
const claimFor = (body: string, ttlMs = DAY_MS) => ({ bodyHash: sha256(body), eventId: randomUUID(), ttlMs });

function claimed(outcome: ClaimOutcome): KeyClaim {
  if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`);
  return outcome.claim;
}

function eventWith(id: string, workspaceId: string): PlatformEvent {
  return { id, eventKey: 'order.created', tenantId: workspaceId, actor: 'ana', publishedBy: 'user-1', payload: {}, schemaVersion: null, occurredAt: new Date().toISOString() };
}

conformance('a claim is exclusive; committed, the key answers its body hash and event; released, it is free again', (site) =>
  using(site, async ({ stores: { idempotencyKeys: keys } }) => {
    const key = keyOf('ws-a', 'k-1');
    const first = claimFor('body-1');
    const claim = claimed(await keys.claim(key, first));
    assert.equal(await keys.claim(key, claimFor('body-1')), { kind: 'held' });
    await claim.release();
    const second = claimFor('body-2');
    await claimed(await keys.claim(key, second)).commit();
    assert.equal(await keys.claim(key, claimFor('body-3')), { kind: 'kept', kept: { bodyHash: second.bodyHash, eventId: second.eventId } });
    // Another workspace, or another key, is another key.
    await claimed(await keys.claim(keyOf('ws-b', 'k-1'), claimFor('body-1'))).commit();
    await claimed(await keys.claim(keyOf('ws-a', 'k-2'), claimFor('body-1'))).commit();
  }),
);

conformance('a key outlives a restart; past its lifetime it is free, and prune forgets it', async (site) => {
  const kept = claimFor('body');
  await using(site, async ({ stores: { idempotencyKeys: keys } }) => {
    await claimed(await keys.claim(keyOf('ws-a', 'lasting'), kept)).commit();
    await claimed(await keys.claim(keyOf('ws-a', 'brief'), claimFor('body', 50))).commit();
    await claimed(await keys.claim(keyOf('ws-a', 'pruned'), claimFor('body', 50))).commit();
    await sleep(100);
    assert.is(await keys.prune(), 2, 'the brief and the pruned key');
    assert.is(await keys.prune(), 0);
    await claimed(await keys.claim(keyOf('ws-a', 'brief'), claimFor('body', 50))).commit();
  });
  await sleep(100);
  await using(site, async ({ stores: { idempotencyKeys: keys } }) => {
    assert.equal(await keys.claim(keyOf('ws-a', 'lasting'), claimFor('body')), { kind: 'kept', kept: { bodyHash: kept.bodyHash, eventId: kept.eventId } });
    await claimed(await keys.claim(keyOf('ws-a', 'brief'), claimFor('other body'))).release();
  });
});

conformance('a claim left unsettled by a crash is kept when its event was recorded, and free when it was not', async (site) => {
  const recorded = claimFor('recorded');
  const lost = claimFor('lost');
  // A short lease: on PostgreSQL another daemon may take a crashed daemon's claims once it lapses.
  const options = { deliveryLeaseMs: 200 };
  await using(
    site,
    async ({ stores: { idempotencyKeys: keys, events } }) => {
      claimed(await keys.claim(keyOf('ws-a', 'recorded'), recorded));
      await events.publish(eventWith(recorded.eventId, 'ws-a'), []);
      claimed(await keys.claim(keyOf('ws-a', 'lost'), lost));
      // Closed with both claims unsettled, as a crash leaves them.
    },
    options,
  );
  await using(
    site,
    async ({ stores: { idempotencyKeys: keys } }) => {
      const settled = await waitFor('the lapsed claim settled from the event log', async () => {
        const outcome = await keys.claim(keyOf('ws-a', 'recorded'), claimFor('recorded'));
        return outcome.kind === 'held' ? null : outcome;
      });
      assert.equal(settled, { kind: 'kept', kept: { bodyHash: recorded.bodyHash, eventId: recorded.eventId } });
      const retried = await waitFor('the lapsed claim taken over', async () => {
        const outcome = await keys.claim(keyOf('ws-a', 'lost'), claimFor('lost'));
        return outcome.kind === 'held' ? null : outcome;
      });
      assert.is(retried.kind, 'claimed');
      await claimed(retried).commit();
    },
    options,
  );
});

conformance(
  'daemons sharing the store: one claims a key, the other finds it held, then kept; a claim renewed past its lease stays held',
  (site) =>
    usingTwo(
      site,
      async ({ stores: { idempotencyKeys: one } }, { stores: { idempotencyKeys: two } }) => {
        const key = keyOf('ws-a', 'shared');
        const request = claimFor('body');
        const claim = claimed(await one.claim(key, request));
        // Three leases: the holder keeps renewing its claim.
        await sleep(900);
        assert.equal(await two.claim(key, claimFor('body')), { kind: 'held' });
        await claim.commit();
        assert.equal(await two.claim(key, claimFor('body')), { kind: 'kept', kept: { bodyHash: request.bodyHash, eventId: request.eventId } });
      },
      { deliveryLeaseMs: 300 },
    ),
  { shared: true },
);

conformance(
  'a release keeps the key when the failed publish recorded its event after all',
  (site) =>
    using(site, async ({ stores: { idempotencyKeys: keys, events } }) => {
      const request = claimFor('body');
      const claim = claimed(await keys.claim(keyOf('ws-a', 'doubtful'), request));
      await events.publish(eventWith(request.eventId, 'ws-a'), []);
      await claim.release();
      assert.equal(await keys.claim(keyOf('ws-a', 'doubtful'), claimFor('body')), { kind: 'kept', kept: { bodyHash: request.bodyHash, eventId: request.eventId } });
    }),
  // On files a failed publish recorded nothing (the event log withdraws it): a release frees the key.
  { shared: true },
);

test('files: the log is rewritten to what is kept, so that it stays bounded by the key count too', async () => {
  const dir = await tempDir();
  const open = () => FileIdempotencyKeyStore.open(dir, { maxKeys: 100, eventRecorded: async () => false, reportError: (error) => assert.unreachable(String(error)) });
  const keys = await open();
  for (let n = 0; n < 3_000; n += 1) await claimed(await keys.claim(keyOf('ws-a', `k-${n}`), claimFor('body'))).commit();
  assert.is(keys.keptCount, 100);
  await keys.close();
  const lines = (await readFile(join(dir, IDEMPOTENCY_KEYS_FILE), 'utf8')).split('\n').filter(Boolean).length;
  assert.ok(lines <= 2 * 100 + 1_000 + 2, `${lines} lines`);
  const reopened = await open();
  assert.is(reopened.keptCount, 100);
  assert.is((await reopened.claim(keyOf('ws-a', 'k-2999'), claimFor('body'))).kind, 'kept');
  assert.is((await reopened.claim(keyOf('ws-a', 'k-2899'), claimFor('body'))).kind, 'claimed', 'the 101st newest was forgotten');
  await reopened.close();
});

test('files: the memory of kept keys is bounded by their number, whatever the keys sent', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heapBytes = () => {
    gc();
    gc();
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    return heapUsed + arrayBuffers;
  };
  const capacity = 20_000;
  const before = heapBytes();
  const kept = new KeptKeys(capacity);
  const bodyHash = sha256('body');
  // Ten times the capacity of distinct keys, as a client sending new keys at full speed would.
  for (let n = 0; n < 10 * capacity; n += 1) kept.add(sha256(`key-${n}`), { bodyHash, eventId: randomUUID(), expiresAt: Date.now() + DAY_MS });
  const grown = heapBytes() - before;
  assert.is(kept.size, capacity);
  // About 160 bytes a key (docs/decisions.md); all ten times the keys would need far more than this.
  assert.ok(grown < capacity * 300, `${grown} bytes for ${capacity} keys`);
});

test.run();
