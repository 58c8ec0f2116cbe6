import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { EventLog } from '../src/daemon/store/file/event-log.js';
import { Outbox } from '../src/daemon/store/file/outbox.js';
import { CarriedEvent, type Delivery } from '../src/daemon/dispatch/types.js';
import { AppendLog } from '../src/daemon/store/append-log.js';
import { tempDir } from './helpers/temp.js';
import { listed } from './helpers/pages.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T12:00:00.000Z');
let sequence = 0;

function event(workspace: string, ageMs: number, key = 'a.b'): PlatformEvent {
  sequence += 1;
  return {
    id: `e${sequence}`,
    eventKey: key,
    tenantId: workspace,
    actor: 'test',
    publishedBy: 'test',
    payload: { n: sequence },
    schemaVersion: null,
    occurredAt: new Date(NOW - ageMs).toISOString(),
  };
}

/** An event as the log alone lists it: it knows of no delivery. */
const listedAlone = (event: PlatformEvent) => ({ ...event, deliverySummary: { delivered: 0, pending: 0, dead: 0, discarded: 0 } });
const segments = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('segment-') && name.endsWith('.log')).sort();
const storedIds = (dir: string) =>
  segments(dir).flatMap((name) =>
    readFileSync(join(dir, name), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).id as string),
  );

test('appends go to the newest segment, which rolls over at its size; a reopen sees everything', async () => {
  const dir = join(await tempDir(), 'events');
  const log = await EventLog.open(dir, { segmentMaxEvents: 10, recent: { perWorkspace: 5, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  const written = Array.from({ length: 25 }, () => event('w', 0));
  for (const e of written) await log.append(e);
  await log.close();
  assert.equal(segments(dir), ['segment-000001.log', 'segment-000002.log', 'segment-000003.log']);
  assert.equal(storedIds(dir), written.map((e) => e.id));

  const reopened = await EventLog.open(dir, { segmentMaxEvents: 10, recent: { perWorkspace: 5, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  assert.is(reopened.storedCount, 25);
  const recent = (await listed(reopened, 'w', { limit: 3 }, { maxAgeMs: DAY, maxPerWorkspace: 100 }, NOW)).items;
  assert.equal(recent.map((e) => e.id), written.slice(-3).reverse().map((e) => e.id));
  await reopened.close();
});

test('a reopen reads sealed segments from their index files, and reads a segment whose index does not hold for it', async () => {
  const dir = join(await tempDir(), 'events');
  const options = { segmentMaxEvents: 4, recent: { perWorkspace: 0, bytesPerWorkspace: 0, bytesTotal: 0 } };
  const log = await EventLog.open(dir, options);
  const written = Array.from({ length: 14 }, (_, n) => event(n % 3 === 0 ? 'quiet' : 'busy', (14 - n) * 1000, n % 2 === 0 ? 'a.b' : 'a.c'));
  for (const e of written) await log.append(e);
  await log.close();
  const indexes = () => readdirSync(dir).filter((name) => name.endsWith('.idx')).sort();
  assert.equal(indexes(), ['segment-000001.idx', 'segment-000002.idx', 'segment-000003.idx'], 'every sealed segment, not the one written');
  const policy = { maxAgeMs: DAY, maxPerWorkspace: 100 };
  const everything = async (opened: EventLog) =>
    [
      ...(await listed(opened, 'busy', { limit: 100 }, policy, NOW)).items,
      ...(await listed(opened, 'quiet', { limit: 100, eventKey: 'a.c' }, policy, NOW)).items,
      ...(await listed(opened, 'busy', { limit: 100, since: NOW - 6500 }, policy, NOW)).items,
    ].map((e) => e.id);
  const expected = [
    ...written.filter((e) => e.tenantId === 'busy').reverse(),
    ...written.filter((e) => e.tenantId === 'quiet' && e.eventKey === 'a.c').reverse(),
    ...written.filter((e) => e.tenantId === 'busy' && Date.parse(e.occurredAt) >= NOW - 6500).reverse(),
  ].map((e) => e.id);

  // The index is read instead of the segment: a key changed in place (same length) goes unseen.
  const first = join(dir, 'segment-000001.log');
  const original = readFileSync(first, 'utf8');
  writeFileSync(first, original.replace('"eventKey":"a.b"', '"eventKey":"a.x"'));
  let reopened = await EventLog.open(dir, options);
  assert.is(reopened.storedCount, 14);
  assert.equal((await listed(reopened, 'quiet', { limit: 100, eventKey: 'a.x' }, policy, NOW)).items, [], 'indexed as a.b');
  await reopened.close();
  writeFileSync(first, original);
  reopened = await EventLog.open(dir, options);
  assert.equal(await everything(reopened), expected);
  assert.is(reopened.find('quiet', written[0]!.id)?.id, written[0]!.id);
  await reopened.close();

  // A garbled index, or one of a segment of another size, is ignored and written anew.
  const second = join(dir, 'segment-000002.idx');
  const index = readFileSync(second);
  const garbled = Buffer.from(index);
  garbled[garbled.length - 3]! ^= 0xff;
  writeFileSync(second, garbled);
  writeFileSync(join(dir, 'segment-000003.idx'), 'not an index');
  reopened = await EventLog.open(dir, options);
  assert.equal(await everything(reopened), expected);
  assert.ok(readFileSync(second).equals(index), 'written again as it was');
  // Retention rewrites a sealed segment (the first, of the oldest events), and its index with it.
  const { removedEvents } = await reopened.applyRetention({ maxAgeMs: 11_500, maxPerWorkspace: 100 }, NOW);
  assert.is(removedEvents, 3);
  const kept = await everything(reopened);
  await reopened.close();
  assert.equal(indexes(), ['segment-000001.idx', 'segment-000002.idx', 'segment-000003.idx']);
  reopened = await EventLog.open(dir, options);
  assert.equal(await everything(reopened), kept);
  await reopened.close();
});

test("an event staged before its segment rolled over and committed after is listed, and in the segment's index file", async () => {
  const dir = join(await tempDir(), 'events');
  const options = { segmentMaxEvents: 2, recent: { perWorkspace: 0, bytesPerWorkspace: 0, bytesTotal: 0 } };
  const log = await EventLog.open(dir, options);
  const [late, second, third] = [event('w', 3000), event('w', 2000), event('w', 1000)];
  const staged = await log.stage(late);
  await log.append(second);
  await log.append(third); // the first segment rolls over while `late` is staged in it
  assert.equal(readdirSync(dir).filter((name) => name.endsWith('.idx')), [], 'no index while a line is staged');
  staged.commit();
  const policy = { maxAgeMs: DAY, maxPerWorkspace: 100 };
  // The late one is listed where it was committed, after the others of its segment.
  const ids = async (opened: EventLog) => (await listed(opened, 'w', { limit: 10 }, policy, NOW)).items.map((e) => e.id).sort();
  assert.equal(await ids(log), [late.id, second.id, third.id].sort());
  await log.close();
  assert.equal(readdirSync(dir).filter((name) => name.endsWith('.idx')), ['segment-000001.idx']);
  const reopened = await EventLog.open(dir, options);
  assert.equal(await ids(reopened), [late.id, second.id, third.id].sort());
  await reopened.close();
});

test('retention keeps per workspace only events within the age limit and among the newest N, whichever is fewer', async () => {
  const dir = join(await tempDir(), 'events');
  const log = await EventLog.open(dir, { segmentMaxEvents: 4, recent: { perWorkspace: 100, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  const old = [event('busy', 9 * DAY), event('quiet', 9 * DAY)];
  const busy = Array.from({ length: 10 }, () => event('busy', DAY));
  const quiet = [event('quiet', DAY), event('quiet', 0)];
  for (const e of [...old, ...busy, ...quiet]) await log.append(e);
  const policy = { maxAgeMs: 7 * DAY, maxPerWorkspace: 6 };

  const { removedEvents } = await log.applyRetention(policy, NOW);
  const kept = new Set(storedIds(dir));
  assert.not.ok(kept.has(old[0]!.id) || kept.has(old[1]!.id), 'older than 7 days: gone');
  assert.equal(
    busy.filter((e) => kept.has(e.id)).map((e) => e.id),
    busy.slice(-6).map((e) => e.id),
    'busy keeps its newest 6',
  );
  assert.ok(quiet.every((e) => kept.has(e.id)), 'quiet keeps both young events');
  assert.is(removedEvents, 2 + 4);
  assert.is(log.storedCount, 8);
  assert.equal(
    (await listed(log, 'busy', { limit: 100 }, policy, NOW)).items.map((e) => e.id),
    busy.slice(-6).reverse().map((e) => e.id),
    'reads apply the same policy',
  );
  await log.close();
  const reopened = await EventLog.open(dir, { segmentMaxEvents: 4, recent: { perWorkspace: 100, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  assert.is(reopened.storedCount, 8, 'retention is on disk');
  await reopened.close();
});

test('a reopen indexes events from their lines without their payloads: key, workspace and occurredAt as written, whatever the payload says', async () => {
  const dir = join(await tempDir(), 'events');
  // Two a segment: the first (old, young) is sealed, which retention compacts.
  const options = { segmentMaxEvents: 2, recent: { perWorkspace: 100, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } };
  const log = await EventLog.open(dir, options);
  // UUID ids, as published: the lines the start-up reads by their head and tail.
  const young = { ...event('shop', DAY, 'order."quoted"'), id: randomUUID(), payload: { decoy: '"occurredAt":"2000-01-01T00:00:00.000Z"' }, sourceId: 'gh-1' };
  const old = { ...event('shop', 9 * DAY, 'order."quoted"'), id: randomUUID(), payload: { decoy: `"occurredAt":"${new Date(NOW).toISOString()}"` } };
  const other = { ...event('shop', DAY, 'order.other'), id: randomUUID() };
  for (const e of [old, young, other]) await log.append(e);
  await log.close();

  const reopened = await EventLog.open(dir, options);
  const policy = { maxAgeMs: 7 * DAY, maxPerWorkspace: 100 };
  assert.equal((await listed(reopened, 'shop', { limit: 10, eventKey: 'order."quoted"' }, policy, NOW)).items, [listedAlone(young)], 'by key, aged by the real occurredAt');
  const { removedEvents } = await reopened.applyRetention(policy, NOW);
  assert.is(removedEvents, 1, 'the old event expires, whatever its payload says');
  assert.equal((await listed(reopened, 'shop', { limit: 10 }, policy, NOW)).items, [other, young].map(listedAlone));
  await reopened.close();
});

test('fully expired segments are deleted; the segment being written is never touched', async () => {
  const dir = join(await tempDir(), 'events');
  const log = await EventLog.open(dir, { segmentMaxEvents: 3, recent: { perWorkspace: 10, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  for (let i = 0; i < 7; i += 1) await log.append(event('w', 30 * DAY));
  await log.applyRetention({ maxAgeMs: 7 * DAY, maxPerWorkspace: 100 }, NOW);
  assert.equal(segments(dir), ['segment-000003.log'], 'two sealed segments deleted');
  assert.is(log.storedCount, 1, 'the expired event in the active segment waits for its segment to be sealed');
  assert.equal((await listed(log, 'w', { limit: 10 }, { maxAgeMs: 7 * DAY, maxPerWorkspace: 100 }, NOW)).items, [], 'but is not read');
  await log.append(event('w', 0));
  await log.close();
});

const WEEK_POLICY = { maxAgeMs: 7 * DAY, maxPerWorkspace: 100 };
const listedIds = async (log: EventLog) => (await listed(log, 'w', { limit: 100 }, WEEK_POLICY, NOW)).items.map((e) => e.id);

test('retention on an empty log keeps the segment being written: appends and listing go on, also after a reopen', async () => {
  const dir = join(await tempDir(), 'events');
  const options = { segmentMaxEvents: 3, recent: { perWorkspace: 10, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } };
  const log = await EventLog.open(dir, options);
  await log.applyRetention(WEEK_POLICY, NOW);
  await log.applyRetention(WEEK_POLICY, NOW);
  const fresh = event('w', 0);
  await log.append(fresh);
  assert.equal(await listedIds(log), [fresh.id]);
  await log.close();
  const reopened = await EventLog.open(dir, options);
  assert.equal(await listedIds(reopened), [fresh.id]);
  await reopened.close();
});

test('retention that removes every event, right after a rotation, keeps the new segment being written', async () => {
  const dir = join(await tempDir(), 'events');
  const options = { segmentMaxEvents: 3, recent: { perWorkspace: 10, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } };
  const log = await EventLog.open(dir, options);
  // The third append fills the only segment and starts the next one.
  for (let i = 0; i < 3; i += 1) await log.append(event('w', 30 * DAY));
  const { removedEvents } = await log.applyRetention(WEEK_POLICY, NOW);
  assert.is(removedEvents, 3);
  assert.equal(segments(dir), ['segment-000002.log']);
  const fresh = [event('w', 0), event('w', 0)];
  for (const e of fresh) await log.append(e);
  assert.equal(await listedIds(log), fresh.map((e) => e.id).reverse());
  await log.applyRetention(WEEK_POLICY, NOW);
  await log.append(event('w', 0));
  assert.is(log.storedCount, 3);
  await log.close();
  const reopened = await EventLog.open(dir, options);
  assert.is(reopened.storedCount, 3);
  await reopened.close();
});

const RECENT_FOUR = { perWorkspace: 4, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 };

function pageAll(log: EventLog, workspace: string, query: { limit: number; eventKey?: string }, policy: { maxAgeMs: number; maxPerWorkspace: number }, between: () => Promise<void> = async () => undefined) {
  return (async () => {
    const seen: string[] = [];
    let before: { segment: number; at: number; id: string } | undefined;
    for (;;) {
      const page = await listed(log, workspace, { ...query, before }, policy, NOW);
      seen.push(...page.items.map((e) => e.id));
      if (!page.more) return seen;
      before = page.last;
      await between();
    }
  })();
}

test('paging from memory on into disk and across segments lists each event once, while appends and retention run', async () => {
  const dir = join(await tempDir(), 'events');
  const log = await EventLog.open(dir, { segmentMaxEvents: 5, recent: RECENT_FOUR });
  const w: PlatformEvent[] = [];
  for (let n = 0; n < 26; n += 1) {
    const e = event('w', n < 3 ? 9 * DAY : DAY, n % 3 === 0 ? 'a.one' : 'b.two');
    w.push(e);
    await log.append(e);
    await log.append(event('x', 0));
  }
  const policy = { maxAgeMs: 30 * DAY, maxPerWorkspace: 1_000 };
  let turn = 0;
  const seen = await pageAll(log, 'w', { limit: 3 }, policy, async () => {
    turn += 1;
    await log.append(event('w', 0));
    // Halfway, retention removes the three oldest events before the pages reach them.
    if (turn === 4) await log.applyRetention({ maxAgeMs: 7 * DAY, maxPerWorkspace: 1_000 }, NOW);
  });
  assert.equal(seen, w.slice(3).reverse().map((e) => e.id));
  const filtered = await pageAll(log, 'w', { limit: 2, eventKey: 'a.one' }, policy);
  assert.equal(filtered, w.slice(3).filter((e) => e.eventKey === 'a.one').reverse().map((e) => e.id));
  assert.is((await log.find('w', w[10]!.id))?.id, w[10]!.id, 'found on disk');
  assert.is((await log.find('w', w[25]!.id))?.id, w[25]!.id, 'found in memory');
  assert.is(await log.find('w', w[0]!.id), undefined, 'removed by retention');
  assert.is(await log.find('x', w[25]!.id), undefined, 'another workspace');
  await log.close();

  const reopened = await EventLog.open(dir, { segmentMaxEvents: 5, recent: RECENT_FOUR });
  const again = await pageAll(reopened, 'w', { limit: 7 }, policy);
  assert.is(again.length, 23 + turn);
  assert.equal(again.slice(turn), w.slice(3).reverse().map((e) => e.id), 'and after a reopen');
  await reopened.close();
});

test('a page reads only its own lines: memory serves the newest events, the rest is read where the index says', async () => {
  const dir = join(await tempDir(), 'events');
  const log = await EventLog.open(dir, { segmentMaxEvents: 100, recent: { ...RECENT_FOUR, perWorkspace: 5 } });
  const w: PlatformEvent[] = [];
  for (let n = 0; n < 30; n += 1) {
    w.push(event('w', 0));
    await log.append(w[n]!);
  }
  // Every line but those of the second page (and the one after it) becomes garbage of the same
  // length: the first page comes from memory, the second from its own lines.
  const file = join(dir, 'segment-000001.log');
  const lines = readFileSync(file, 'utf8').split('\n');
  writeFileSync(file, lines.map((line, n) => (n >= 19 && n < 25 ? line : 'x'.repeat(line.length))).join('\n'));
  const policy = { maxAgeMs: DAY, maxPerWorkspace: 100 };
  const first = await listed(log, 'w', { limit: 5 }, policy, NOW);
  assert.equal(first.items.map((e) => e.id), w.slice(25).reverse().map((e) => e.id));
  const second = await listed(log, 'w', { limit: 5, before: first.last }, policy, NOW);
  assert.equal(second.items.map((e) => e.payload), w.slice(20, 25).reverse().map((e) => e.payload));
  assert.ok(second.more);
  await log.close();
});

function delivery(id: string): Delivery {
  return {
    id,
    event: CarriedEvent.of(event('w', 0)),
    depth: 1,
    subscriber: { subscriptionId: 's', extensionKey: 'x', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://x.test' },
    attempts: 0,
    nextAttemptAt: NOW,
    enqueuedAt: new Date(NOW).toISOString(),
    firstAttemptAt: null,
    lastError: null,
    replayCount: 0,
  };
}

test('outbox: a reopen has exactly the pending deliveries with their last attempt state', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, (error) => assert.unreachable(String(error)));
  await outbox.add([delivery('a'), delivery('b'), delivery('c')]);
  const b = [...outbox.values()].find((d) => d.id === 'b')!;
  b.attempts = 2;
  b.nextAttemptAt = NOW + 5000;
  b.lastError = { message: 'subscriber answered HTTP 503', status: 503 };
  outbox.rescheduled(b);
  outbox.done([...outbox.values()].find((d) => d.id === 'a')!);
  await outbox.close();

  const reopened = await Outbox.open(file, (error) => assert.unreachable(String(error)));
  const pending = [...reopened.values()];
  assert.equal(pending.map((d) => d.id).sort(), ['b', 'c']);
  const stored = pending.find((d) => d.id === 'b')!;
  assert.equal([stored.attempts, stored.nextAttemptAt, stored.lastError], [2, NOW + 5000, b.lastError]);
  await reopened.close();
});

test('outbox: the journal stays bounded: compacted to the pending set once it holds 50,000 lines more than twice what they need', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, (error) => assert.unreachable(String(error)), { holdAtMost: 0 });
  const ids = Array.from({ length: 60_000 }, (_, i) => `d${i}`);
  await outbox.add(ids.map(delivery));
  for (let start = 0; start < 59_990; start += 500) {
    for (const claimed of outbox.claim(Math.min(500, 59_990 - start), NOW)) {
      outbox.finished(claimed);
      outbox.done(claimed);
    }
    // One compaction runs at a time: waiting for it keeps the bound independent of disk speed.
    await outbox.compacted();
  }
  await outbox.close();
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  // A pending delivery needs two lines: its payload and its state.
  assert.ok(lines.length <= 2 * 2 * 10 + 50_000 + 500, `${lines.length} journal lines for 10 pending deliveries (179,990 lines written)`);
  const reopened = await Outbox.open(file, () => undefined);
  assert.equal([...reopened.values()].map((d) => d.id), ids.slice(59_990));
  await reopened.close();
});

test('outbox: a replay queued before its original run is marked done survives that done, also after a reopen', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const outbox = await Outbox.open(file, (error) => assert.unreachable(String(error)));
  const original = delivery('x');
  await outbox.add([original]);
  const replayed = { ...delivery('x'), replayCount: 1 };
  await outbox.add([replayed]);
  outbox.done(original);
  assert.ok(outbox.holds(replayed));
  await outbox.close();
  const reopened = await Outbox.open(file, () => undefined);
  assert.equal([...reopened.values()].map((d) => [d.id, d.replayCount]), [['x', 1]]);
  await reopened.close();
});

test('append log: an append made after a rewrite was asked for is not lost to a group written before it', async () => {
  const file = join(await tempDir(), 'race.log');
  const log = await AppendLog.open<{ n: number }>(file, () => undefined);
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const first = log.append({ n: 1 });
  await turn(); // the group with n:1 is being written
  const second = log.append({ n: 2 });
  await turn(); // a group for n:2 is queued behind it, not yet run
  const rewrite = log.rewrite([{ n: 100 }]); // reflects n:1 and n:2
  const third = log.append({ n: 3 }); // after the rewrite was asked for: must survive it
  await Promise.all([first, second, rewrite, third]);
  await log.close();
  assert.is(readFileSync(file, 'utf8'), '{"n":100}\n{"n":3}\n');
});

test('append log: appends made while a rewrite waits are kept after it, superseded ones are not', async () => {
  const file = join(await tempDir(), 'race.log');
  const log = await AppendLog.open<{ n: number }>(file, () => undefined);
  const superseded = log.append({ n: 1 });
  const rewrite = log.rewrite([{ n: 100 }]);
  const later = log.append({ n: 2 });
  await Promise.all([superseded, rewrite, later]);
  await log.close();
  assert.is(readFileSync(file, 'utf8'), '{"n":100}\n{"n":2}\n');
});

test('append log: rewriteLines copies lines by offset (long ones too, in any order) between lines given as text, and readLine follows', async () => {
  const file = join(await tempDir(), 'copy.log');
  const log = await AppendLog.open<{ n: number; pad: string }>(file, () => undefined);
  const records = [1, 2, 3, 4].map((n) => ({ n, pad: String(n).repeat(n === 3 ? 3 * 1024 * 1024 : 10) }));
  const spans = await Promise.all(records.map((record) => log.append(record)));
  assert.equal(spans.map((span) => log.readLine(span!.offset)), records.map((record) => JSON.stringify(record)));
  let offsets: Float64Array | undefined;
  await log.rewriteLines(
    { offsets: Float64Array.from([spans[3]!.offset, 0, spans[2]!.offset, spans[0]!.offset]), texts: new Map([[1, '{"n":9,"pad":""}']]) },
    (rewritten) => (offsets = rewritten),
  );
  const expected = [records[3], { n: 9, pad: '' }, records[2], records[0]].map((record) => JSON.stringify(record));
  assert.is(readFileSync(file, 'utf8'), expected.join('\n') + '\n');
  assert.equal([...offsets!].map((offset) => log.readLine(offset)), expected);
  await log.close();
});

test.run();
