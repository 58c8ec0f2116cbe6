import { copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { Outbox, type OutboxOptions } from '../src/daemon/store/file/outbox.js';
import { CarriedEvent, type Delivery, type SubscriberRef } from '../src/daemon/dispatch/types.js';
import { maskCredentials } from '../src/daemon/dispatch/url-credentials.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

const NOW = Date.parse('2026-11-21T12:00:00.000Z');
const LATER = NOW + 86_400_000;
const failOnError = (error: unknown) => assert.unreachable(String(error));
let sequence = 0;

function event(bytes = 100): PlatformEvent {
  sequence += 1;
  return {
    id: `e${sequence}`,
    eventKey: 'a.b',
    tenantId: 'w',
    actor: 'test',
    publishedBy: 'test',
    payload: { n: sequence, text: 'x'.repeat(bytes) },
    schemaVersion: null,
    occurredAt: new Date(NOW).toISOString(),
  };
}

const subscriber = (subscriptionId: string, serviceBaseUrl = 'http://x.test'): SubscriberRef => ({
  subscriptionId,
  extensionKey: 'x',
  kind: 'EXTERNAL_SERVICE',
  serviceBaseUrl,
});

function delivery(id: string, of: PlatformEvent, to = subscriber('s'), due = NOW): Delivery {
  return {
    id,
    event: CarriedEvent.of(of),
    depth: 1,
    subscriber: to,
    attempts: 0,
    nextAttemptAt: due,
    enqueuedAt: new Date(NOW).toISOString(),
    firstAttemptAt: null,
    lastError: null,
    replayCount: 0,
  };
}

const indexOf = (journal: string) => journal.replace(/\.log$/, '.idx');

/**
 * Opens copies of a cleanly closed outbox twice: from the index the stop left,
 * and from its journal alone (as after a crash before any checkpoint): `check`
 * must hold for both.
 */
async function afterRestart(file: string, check: (reopened: Outbox) => Promise<void>, options: OutboxOptions = {}): Promise<void> {
  assert.ok(existsSync(indexOf(file)), 'a clean stop leaves an index');
  for (const fromIndex of [true, false]) {
    const copy = join(await tempDir(), 'outbox.log');
    copyFileSync(file, copy);
    if (fromIndex) copyFileSync(indexOf(file), indexOf(copy));
    const reopened = await Outbox.open(copy, failOnError, options);
    assert.is(existsSync(indexOf(copy)), fromIndex, 'an index that holds stays: the journal still begins with what it covers');
    try {
      await check(reopened);
    } catch (error) {
      throw new Error(`opened ${fromIndex ? 'from its index' : 'from its journal'}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    await reopened.close();
  }
}

/** A delivery with its event as an object: as it was queued, whether its event came back as bytes or not. */
const plain = async (delivery: Delivery) => ({ ...delivery, event: await delivery.event.object() });

/** Claims everything due by `now`, `batch` at a time (claims wait while a compaction runs). */
async function claimAll(outbox: Outbox, now = LATER, batch = 100): Promise<Delivery[]> {
  const claimed: Delivery[] = [];
  for (;;) {
    await outbox.compacted();
    const more = outbox.claim(batch, now);
    if (more.length === 0) return claimed;
    claimed.push(...more);
  }
}

test('a publish holds at most holdAtMost deliveries (in-process ones always); the others wait for a claim, due first', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 2 });
  const shared = event();
  const external = [3, 1, 2, 0].map((n) => delivery(`d${n}`, shared, subscriber('s'), NOW + n));
  const inProcess = { ...delivery('h', shared), subscriber: { subscriptionId: null, extensionKey: 'chat', kind: 'IN_PROCESS' as const, serviceBaseUrl: null } };
  const held = await outbox.add([...external, inProcess]);
  assert.equal(held.map((d) => d.id), ['d3', 'd1', 'h']);
  assert.ok(held.every((d) => outbox.holds(d)));
  assert.is(outbox.size, 5);
  assert.is(outbox.nextDueAt(), NOW + 0, 'the earliest that waits');
  assert.equal(await Promise.all(outbox.claim(10, NOW).map(plain)), [await plain(external[3]!)], 'only what is due');
  const rest = outbox.claim(10, LATER);
  assert.equal(rest.map((d) => d.id), ['d2']);
  assert.is((await rest[0]!.event.body()).toString(), JSON.stringify({ ...shared, workspaceId: shared.tenantId }), 'the body as read: what the event makes');
  assert.equal(await rest[0]!.event.object(), shared, 'with its payload');
  assert.is(outbox.nextDueAt(), null);
  await outbox.close();
});

test('a restart on a backlog resumes every pending delivery in due order, with its payload and its last attempt state', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const expected = new Map<string, Delivery>();
  for (let publish = 0; publish < 300; publish += 1) {
    const published = event(publish % 7 === 0 ? 20_000 : 300);
    // Due in a shuffled order, two subscribers of each event.
    const due = NOW + ((publish * 7919) % 300) * 1000;
    const pair = [delivery(`a${publish}`, published, subscriber('s'), due), delivery(`b${publish}`, published, subscriber('s'), due + 1)];
    await outbox.add(pair);
    for (const one of pair) expected.set(one.id, one);
  }
  // Some fail and are due again later, some end.
  for (const claimed of outbox.claim(40, NOW + 30_000)) {
    if (claimed.id.startsWith('a')) {
      outbox.finished(claimed);
      outbox.done(claimed);
      expected.delete(claimed.id);
    } else {
      claimed.attempts = 1;
      claimed.firstAttemptAt = new Date(NOW).toISOString();
      claimed.lastError = { message: 'subscriber answered HTTP 503', status: 503 };
      claimed.nextAttemptAt = NOW + 400_000;
      outbox.rescheduled(claimed);
      expected.set(claimed.id, { ...claimed });
    }
  }
  await outbox.close();

  await afterRestart(
    file,
    async (reopened) => {
      assert.is(reopened.size, expected.size);
      const resumed = await claimAll(reopened, LATER, 37);
      const order = [...expected.values()].sort((x, y) => x.nextAttemptAt - y.nextAttemptAt).map((d) => d.id);
      assert.equal(resumed.map((d) => d.id), order, 'due first');
      for (const one of resumed) assert.equal(await plain(one), await plain(expected.get(one.id)!), `${one.id} as it was`);
    },
    { holdAtMost: 0 },
  );
});

test('a restart reads each run from its line without parsing its error, whatever the error, key or subscriber says', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const quoted = { ...event(), eventKey: 'a"b.\\c' };
  const plugin: SubscriberRef = { subscriptionId: null, extensionKey: 'chat', kind: 'IN_PROCESS', serviceBaseUrl: null };
  const runs = [
    delivery('plain', event(), subscriber('s'), NOW + 3),
    delivery('quoted', quoted, subscriber('s', 'http://x.test/},"attempts":'), NOW + 1),
    { ...delivery('plugin', event(), plugin, NOW + 2), replayCount: 2, deadLetterId: 'letter-9' },
  ];
  await outbox.add(runs);
  const [failed] = outbox.claim(1, NOW + 1);
  assert.is(failed?.id, 'quoted');
  failed!.attempts = 1;
  failed!.firstAttemptAt = new Date(NOW).toISOString();
  // An error whose text looks like the fields around it.
  failed!.lastError = { message: '},"attempts":7,"due":1,"enq":"x",,"dl":"fake"}', status: 503 };
  failed!.nextAttemptAt = NOW + 4.5;
  outbox.rescheduled(failed!);
  const expected = [runs[2]!, runs[0]!, { ...failed! }];
  await outbox.close();

  await afterRestart(
    file,
    async (reopened) => {
      assert.ok(reopened.replaysLetter('letter-9'));
      assert.not.ok(reopened.replaysLetter('fake'));
      const resumed = await claimAll(reopened);
      // Claims take the subscribers (the plugin, and subscription s) in turn, each in due order.
      assert.equal(resumed.map((d) => d.id).sort(), ['plain', 'plugin', 'quoted']);
      for (const one of resumed) assert.equal(await plain(one), await plain(expected.find((d) => d.id === one.id)!));
    },
    { holdAtMost: 0 },
  );
});

test("the oldest pending delivery's enqueue time is read from its line, also after it moved on and after a restart", async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  assert.is(outbox.oldestEnqueuedAt(), null);
  const queued = [1, 2, 3].map((n) => ({ ...delivery(`q${n}`, event()), enqueuedAt: new Date(NOW + n * 1000).toISOString() }));
  await outbox.add(queued);
  assert.is(outbox.oldestEnqueuedAt(), NOW + 1000);
  const [first] = outbox.claim(1, LATER);
  outbox.finished(first!);
  outbox.done(first!);
  assert.is(outbox.oldestEnqueuedAt(), NOW + 2000);
  await outbox.close();
  await afterRestart(file, async (reopened) => assert.is(reopened.oldestEnqueuedAt(), NOW + 2000));
});

test('claims take each subscriber in turn: a backlog of one does not make a new subscriber wait behind it', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const backlog = Array.from({ length: 5_000 }, (_, n) => delivery(`old${n}`, event(), subscriber('busy'), NOW - 60_000 + n));
  await outbox.add(backlog);
  const fresh = delivery('new', event(), subscriber('quiet'), NOW);
  await outbox.add([fresh]);
  const first = outbox.claim(2, NOW);
  assert.equal(first.map((d) => d.id).sort(), ['new', 'old0'], 'the new subscriber is served in the first claim');
  assert.equal(outbox.claim(3, NOW).map((d) => d.id), ['old1', 'old2', 'old3'], 'then the backlog, oldest due first');
  await outbox.close();
});

test('compaction keeps every pending delivery, also those whose last attempt was not yet written, and claims read the right payloads throughout', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0, compactSlack: 1_000 });
  const payloads = new Map<string, unknown>();
  for (let publish = 0; publish < 6_000; publish += 1) {
    const published = event(50);
    payloads.set(published.id, published.payload);
    await outbox.add([delivery(`d${publish}`, published, subscriber(`s${publish % 3}`), NOW)]);
  }
  const attempts = new Map<string, number>();
  // Rounds of attempts: most fail (a line each), some end; compactions start on their own.
  for (let round = 1; round <= 4; round += 1) {
    for (const claimed of await claimAll(outbox, NOW + round * 1000, 250)) {
      assert.equal((await claimed.event.object()).payload, payloads.get(claimed.event.id), `the payload of ${claimed.id}`);
      assert.is(claimed.attempts, attempts.get(claimed.id) ?? 0, `the attempts of ${claimed.id}`);
      if (Number(claimed.id.slice(1)) % 5 === round) {
        outbox.finished(claimed);
        outbox.done(claimed);
        attempts.delete(claimed.id);
        attempts.set(claimed.id, -1);
        continue;
      }
      claimed.attempts += 1;
      claimed.nextAttemptAt = NOW + round * 1000 + 500;
      claimed.lastError = { message: `failed in round ${round}`, status: 500 };
      outbox.rescheduled(claimed);
      attempts.set(claimed.id, claimed.attempts);
    }
  }
  await outbox.compacted();
  const pendingIds = [...attempts].filter(([, n]) => n >= 0).map(([id]) => id);
  assert.is(outbox.size, pendingIds.length);
  await outbox.close();
  const lines = readFileSync(file, 'utf8').trim().split('\n').length;
  assert.ok(lines <= 4 * pendingIds.length + 1_000 + 1, `${lines} lines for ${pendingIds.length} pending: compacted`);

  await afterRestart(
    file,
    async (reopened) => {
      const resumed = await claimAll(reopened);
      assert.equal(resumed.map((d) => d.id).sort(), pendingIds.sort());
      for (const one of resumed) {
        assert.is(one.attempts, 4, `${one.id}: every failed attempt counted`);
        assert.equal(one.lastError, { message: 'failed in round 4', status: 500 });
        assert.equal((await one.event.object()).payload, payloads.get(one.event.id));
      }
    },
    { holdAtMost: 0 },
  );
});

test('an outbox.log of the old format (whole deliveries, URLs in clear) is read once and rewritten: masked, each payload once', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const published = event();
  const clear = 'https://user:secret@hooks.test/in';
  const a = delivery('a', published, subscriber('s', clear));
  const b = delivery('b', published, subscriber('t'), NOW + 5);
  const c = delivery('c', event(), subscriber('s'), NOW + 9);
  const legacy = [
    { t: 'add', delivery: a },
    { t: 'add', delivery: b },
    { t: 'add', delivery: c },
    { t: 'retry', key: 'b:0', attempts: 2, nextAttemptAt: NOW + 7, firstAttemptAt: new Date(NOW).toISOString(), lastError: { message: 'down', status: 503 } },
    { t: 'done', key: 'c:0' },
  ];
  writeFileSync(file, legacy.map((line) => JSON.stringify(line)).join('\n') + '\n');

  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const text = readFileSync(file, 'utf8');
  assert.not.ok(text.includes('secret'), 'no credentials left');
  assert.not.ok(text.includes('"t":"add"'), 'the new format');
  assert.is(text.split(`"id":"${published.id}","eventKey"`).length - 1, 1, 'the shared event written once');
  const resumed = await claimAll(outbox);
  assert.equal(resumed.map((d) => [d.id, d.attempts, d.nextAttemptAt, d.event.id]), [
    ['a', 0, NOW, published.id],
    ['b', 2, NOW + 7, published.id],
  ]);
  assert.is(resumed[0]!.subscriber.serviceBaseUrl, maskCredentials(clear));
  await outbox.close();
  await afterRestart(file, async (reopened) => assert.equal([...reopened.values()].map((d) => d.id), ['a', 'b']));
});

test('deliveries staged and then retracted leave nothing pending, not even for the next start', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const kept = delivery('kept', event());
  await outbox.add([kept]);
  const withdrawn = event();
  const staged = await outbox.stage([delivery('w1', withdrawn), delivery('w2', withdrawn)]);
  await staged.retract();
  assert.is(outbox.size, 1);
  assert.equal(outbox.claim(10, LATER).map((d) => d.id), ['kept']);
  await outbox.close();
  assert.not.ok(readFileSync(file, 'utf8').includes(withdrawn.id), 'the payload withdrawn too');
  await afterRestart(file, async (reopened) => assert.equal([...reopened.values()].map((d) => d.id), ['kept']));
});

test('a replayed dead letter is known as queued until its run ends, also after a restart', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const replay = { ...delivery('r', event()), replayCount: 1, deadLetterId: 'letter-1' };
  const [held] = await outbox.add([replay], true);
  assert.ok(held && outbox.holds(held), 'a replay is held at once');
  assert.ok(outbox.replaysLetter('letter-1'));
  await outbox.close();
  await afterRestart(file, async (reopened) => {
    assert.ok(reopened.replaysLetter('letter-1'));
    const [again] = reopened.claim(1, LATER);
    assert.is(again?.deadLetterId, 'letter-1');
    reopened.finished(again!);
    reopened.done(again!);
    assert.not.ok(reopened.replaysLetter('letter-1'));
  });
});


test('an index of an earlier stop is read with the journal after it; one of another journal, or garbled, is removed', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  await outbox.add([delivery('first', event())]);
  await outbox.close();
  const earlier = readFileSync(indexOf(file));

  const second = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  await second.add([delivery('second', event())]);
  await second.close();
  // The first stop's index, put back beside the journal that has grown since.
  writeFileSync(indexOf(file), earlier);
  const third = await Outbox.open(file, failOnError);
  assert.ok(existsSync(indexOf(file)), 'it still holds: kept');
  assert.equal([...third.values()].map((d) => d.id), ['first', 'second'], 'what it covers, and the line after it');
  await third.close();

  // Another journal, longer than the one the index covers: it does not begin with those bytes.
  const other = join(await tempDir(), 'outbox.log');
  const elsewhere = await Outbox.open(other, failOnError, { holdAtMost: 0 });
  await elsewhere.add([delivery('third', event(200)), delivery('fourth', event(200))]);
  await elsewhere.close();
  writeFileSync(indexOf(other), earlier);
  const restored = await Outbox.open(other, failOnError);
  assert.not.ok(existsSync(indexOf(other)), 'an index of another journal is removed');
  assert.equal([...restored.values()].map((d) => d.id), ['third', 'fourth']);
  await restored.close();

  const garbled = readFileSync(indexOf(file));
  garbled[garbled.length - 3]! ^= 0xff;
  writeFileSync(indexOf(file), garbled);
  const fourth = await Outbox.open(file, failOnError);
  assert.not.ok(existsSync(indexOf(file)), 'an index whose columns do not match their digest is removed');
  assert.equal([...fourth.values()].map((d) => d.id), ['first', 'second']);
  await fourth.close();
});

test('after a crash the start reads the last checkpoint and replays only the journal after it: as a replay of it all', async () => {
  const file = join(await tempDir(), 'outbox.log');
  // A checkpoint as soon as anything was written.
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0, checkpointBytes: 1 });
  const failAttempt = (claimed: Delivery, due: number) => {
    claimed.attempts += 1;
    claimed.firstAttemptAt ??= new Date(NOW).toISOString();
    claimed.lastError = { message: `failed, attempt ${claimed.attempts}`, status: 503 };
    claimed.nextAttemptAt = due;
    outbox.rescheduled(claimed);
  };
  const shared = event();
  await outbox.add([delivery('a', shared, subscriber('s'), NOW + 1), delivery('b', shared, subscriber('t'), NOW + 2), delivery('c', event(), subscriber('s'), NOW + 3)]);
  await outbox.add([{ ...delivery('r', event(), subscriber('s'), NOW + 4), replayCount: 1, deadLetterId: 'letter-1' }]);
  const [a] = outbox.claim(1, NOW + 1);
  failAttempt(a!, NOW + 50);
  const [b] = outbox.claim(1, NOW + 2);
  outbox.finished(b!);
  outbox.done(b!);
  // Each landing asks for a checkpoint; a durable write lands the lines above first.
  await outbox.add([delivery('d', event(), subscriber('u'), NOW + 100)]);
  const checkpoint = await waitFor('a checkpoint covering those', () => {
    if (!existsSync(indexOf(file))) return undefined;
    const index = readFileSync(indexOf(file));
    const header = JSON.parse(index.subarray(0, index.indexOf(0x0a)).toString()) as { journalBytes: number };
    return header.journalBytes === statSync(file).size ? index : undefined;
  });

  // After the checkpoint: a run ends, one fails again, one is new, the replay fails; then the crash.
  const [c] = outbox.claim(1, NOW + 3);
  outbox.finished(c!);
  outbox.done(c!);
  const [r] = outbox.claim(1, NOW + 4);
  failAttempt(r!, NOW + 70);
  await outbox.add([delivery('e', event(300), subscriber('s'), NOW + 101)]);
  const [again] = outbox.claim(1, NOW + 50);
  assert.is(again?.id, 'a');
  failAttempt(again!, NOW + 60);
  await outbox.add([delivery('f', event(), subscriber('t'), NOW + 102)]);

  const crashed = async (withCheckpoint: boolean) => {
    const copy = join(await tempDir(), 'outbox.log');
    if (withCheckpoint) writeFileSync(indexOf(copy), checkpoint);
    copyFileSync(file, copy);
    const reopened = await Outbox.open(copy, failOnError, { holdAtMost: 0 });
    const seen = {
      pending: await Promise.all((await claimAll(reopened)).map(async (one) => ({ ...(await plain(one)), body: (await one.event.body()).toString() }))),
      replay: reopened.replaysLetter('letter-1'),
    };
    await reopened.close();
    return seen;
  };
  const fromCheckpoint = await crashed(true);
  assert.ok(JSON.parse(checkpoint.subarray(0, checkpoint.indexOf(0x0a)).toString()).journalBytes < statSync(file).size, 'set-up: lines after the checkpoint');
  assert.equal(
    fromCheckpoint.pending.map((one) => [one.id, one.attempts, one.nextAttemptAt]).sort(),
    [['a', 2, NOW + 60], ['d', 0, NOW + 100], ['e', 0, NOW + 101], ['f', 0, NOW + 102], ['r', 1, NOW + 70]],
    'the runs ended after the checkpoint are gone; attempts and due times as last written',
  );
  assert.ok(fromCheckpoint.replay, 'the failed replay is still pending');
  assert.equal(fromCheckpoint, await crashed(false), 'the same as replaying the whole journal');
  await outbox.close();
});

test('a start that replayed the journal writes a checkpoint with nothing else happening, so that the next crash need not replay it', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  await outbox.add([delivery('kept', event())]);
  await outbox.close();
  rmSync(indexOf(file));
  const idle = await Outbox.open(file, failOnError, { checkpointBytes: 1 });
  const index = await waitFor('a checkpoint of the replayed journal', () => existsSync(indexOf(file)) && readFileSync(indexOf(file)));
  assert.is((JSON.parse(index.subarray(0, index.indexOf(0x0a)).toString()) as { journalBytes: number }).journalBytes, statSync(file).size);
  await idle.close();
});

test('a checkpoint taken while deliveries are staged covers the journal only up to them: a crash then resumes them either way', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0, checkpointBytes: 1 });
  await outbox.add([delivery('before', event())]);
  // Staged, not committed (its event line not yet written, in a publish): on disk, not pending in memory.
  const staged = await outbox.stage([delivery('staged', event())]);
  const checkpoint = await waitFor('a checkpoint taken while the staging is open', () => {
    if (!existsSync(indexOf(file))) return undefined;
    const index = readFileSync(indexOf(file));
    const header = JSON.parse(index.subarray(0, index.indexOf(0x0a)).toString()) as { journalBytes: number; slots: number };
    return header.slots === 1 && header.journalBytes < statSync(file).size ? index : undefined;
  });
  const reopen = async (withCheckpoint: boolean) => {
    const copy = join(await tempDir(), 'outbox.log');
    if (withCheckpoint) writeFileSync(indexOf(copy), checkpoint);
    copyFileSync(file, copy);
    const reopened = await Outbox.open(copy, failOnError);
    const ids = [...reopened.values()].map((d) => d.id);
    await reopened.close();
    return ids;
  };
  assert.equal(await reopen(true), ['before', 'staged'], 'its lines are after what the checkpoint covers, and replayed');
  assert.equal(await reopen(false), ['before', 'staged']);
  staged.commit();
  await outbox.close();
});

test('a start from the index gives the records the same fingerprints as a replay of the journal', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, failOnError, { holdAtMost: 0 });
  const other = { ...event(), tenantId: 'v' };
  await outbox.add([delivery('a', event()), delivery('b', other, subscriber('t')), { ...delivery('c', other), replayCount: 3 }]);
  const [ended] = outbox.claim(1, LATER);
  outbox.finished(ended!);
  outbox.done(ended!);
  await outbox.close();
  const seen: string[] = [];
  await afterRestart(file, async (reopened) => {
    const fingerprints = [...reopened.startFingerprints()].map(({ idHash, check, workspaceId, ref }) => `${idHash}/${check}/${workspaceId}:${reopened.loadRuns([ref])[0]?.id}`);
    seen.push(fingerprints.sort().join(' '));
  });
  assert.is(seen.length, 2);
  assert.is(seen[0], seen[1]);
  assert.is(seen[0]!.split(' ').length, 2);
});

test.run();
