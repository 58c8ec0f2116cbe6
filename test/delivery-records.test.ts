import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { PlatformEvent } from '../src/handlers/sdk.js';
import { DeliveryRecords } from '../src/daemon/store/file/delivery-records.js';
import type { DeliveryAttempt } from '../src/daemon/dispatch/types.js';
import { Outbox } from '../src/daemon/store/file/outbox.js';
import { CarriedEvent, type Delivery } from '../src/daemon/dispatch/types.js';
import { EventLog } from '../src/daemon/store/file/event-log.js';
import { tempDir } from './helpers/temp.js';
import { hash32, hash32b } from '../src/daemon/store/line-index.js';
import { fillDisk, needsSmallDisk, withSmallDisk } from './helpers/tmpfs.js';
import { waitFor } from './helpers/wait.js';
import { openFileDispatch } from '../src/daemon/store/file/dispatch.js';

// Retention runs on sealed segments only, which the daemon seals every 100,000 events:
// this test drives the event log and the records on real files with small segments.

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T12:00:00.000Z');

const event = (n: number, ageMs: number): PlatformEvent => ({
  id: `e${n}`,
  eventKey: 'a.b',
  tenantId: 'w',
  actor: 'test',
  publishedBy: 'test',
  payload: {},
  schemaVersion: null,
  occurredAt: new Date(NOW - ageMs).toISOString(),
});

const delivery = (of: PlatformEvent): Delivery => ({
  id: `msg_${of.id}`,
  event: CarriedEvent.of(of),
  depth: 1,
  subscriber: { subscriptionId: 's1', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: 'http://127.0.0.1:1' },
  attempts: 0,
  nextAttemptAt: Date.parse(of.occurredAt),
  enqueuedAt: of.occurredAt,
  firstAttemptAt: null,
  lastError: null,
  replayCount: 0,
});

/**
 * Opens copies of cleanly closed records twice: from the index the stop left,
 * and from the journal alone (as after a crash before any checkpoint):
 * `check` must hold for both.
 */
async function afterRestart(dir: string, check: (reopened: DeliveryRecords) => Promise<void> | void): Promise<void> {
  const [journal, index] = [join(dir, 'deliveries.log'), join(dir, 'deliveries.idx')];
  assert.ok(existsSync(index), 'a clean stop leaves an index');
  for (const fromIndex of [true, false]) {
    const copy = await tempDir();
    copyFileSync(journal, join(copy, 'deliveries.log'));
    if (fromIndex) copyFileSync(index, join(copy, 'deliveries.idx'));
    const reopened = await DeliveryRecords.open(join(copy, 'deliveries.log'), failOnError);
    assert.is(existsSync(join(copy, 'deliveries.idx')), fromIndex, 'an index that holds stays: the journal still begins with what it covers');
    try {
      await check(reopened);
    } catch (error) {
      throw new Error(`opened ${fromIndex ? 'from its index' : 'from its journal'}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    await reopened.close();
  }
}

test('files: retention removes the records of the events it removes, on disk too', async () => {
  const dir = await tempDir();
  const log = await EventLog.open(join(dir, 'events'), { segmentMaxEvents: 2, recent: { perWorkspace: 100, bytesPerWorkspace: 1 << 30, bytesTotal: 1 << 30 } });
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), (error) => {
    throw error;
  });
  const events = [event(1, 9 * DAY), event(2, 9 * DAY), event(3, 0), event(4, 0), event(5, 0)];
  for (const e of events) {
    await log.append(e);
    records.created([delivery(e)]);
  }
  const { removedIds } = await log.applyRetention({ maxAgeMs: 7 * DAY, maxPerWorkspace: 100 }, NOW);
  assert.equal([...removedIds].sort(), ['e1', 'e2']);
  assert.is(await records.removeEvents(removedIds), 2);
  await records.close();
  await log.close();

  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  const listed = reopened.list('w', { limit: 10 }).items.map((record) => record.eventId);
  assert.equal(listed, ['e5', 'e4', 'e3']);
  await reopened.close();
});

test('files: a pending delivery whose record never reached the disk gets it back from the outbox at the next start', async () => {
  const dir = await tempDir();
  const outbox = await Outbox.open(join(dir, 'outbox.log'), (error) => {
    throw error;
  });
  const pending = delivery(event(9, 0));
  await outbox.add([pending]);
  await outbox.close();
  // deliveries.log does not exist: the crash came before its group write.
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  const reopened = await Outbox.open(join(dir, 'outbox.log'), () => undefined);
  records.reconcile(reopened.startFingerprints(), (slots) => reopened.loadRuns(slots), () => false, NOW);
  await recorded(records, pending.id);
  const [record] = records.list('w', { limit: 10 }).items;
  assert.equal([record?.id, record?.status, record?.eventId], [pending.id, 'PENDING', 'e9']);
  await records.close();
  await reopened.close();
  const again = await DeliveryRecords.open(join(dir, 'deliveries.log'), () => undefined);
  assert.is(again.get(pending.id)?.status, 'PENDING', 'and it is on disk now');
  await again.close();
});

/** Pending deliveries as the outbox names them to reconciling at the start. */
const fingerprintsOf = (deliveries: Delivery[]) => deliveries.map((d) => ({ idHash: hash32(d.id), check: hash32b(d.id), workspaceId: d.event.tenantId, ref: d }));
/** Resolves once the delivery's record is on disk. */
const recorded = (records: DeliveryRecords, id: string) => new Promise<void>((resolve) => records.whenRecorded(id, resolve));
const failOnError = (error: unknown) => {
  throw error;
};
const attempt = (number: number, outcome: DeliveryAttempt['outcome'], httpStatus: number): DeliveryAttempt => ({
  number,
  startedAt: new Date(NOW + number).toISOString(),
  durationMs: 5,
  outcome,
  httpStatus,
  responseExcerpt: `answer ${number}`,
});
/** id, status and attempt outcomes of the workspace's records, oldest first. */
const summary = (records: DeliveryRecords) =>
  records
    .list('w', { limit: 100 })
    .items.reverse()
    .map((record) => `${record.id} ${record.status} ${record.attempts.map((a) => `${a.outcome}:${a.httpStatus}`).join(',')}`);
const journalLines = (dir: string) => readFileSync(join(dir, 'deliveries.log'), 'utf8').trim().split('\n');

/** Six records: one per way of ending, on real files; returns what each should read like. */
async function recordEveryState(records: DeliveryRecords): Promise<string[]> {
  const [pending, retried, succeeded, dead, discarded, replayed] = [1, 2, 3, 4, 5, 6].map((n) => delivery(event(n, 0)));
  records.created([pending!, retried!, succeeded!, dead!, discarded!, replayed!]);
  records.attempted(retried!.id, attempt(1, 'RETRY', 500), NOW + 1000, 'PENDING');
  records.attempted(succeeded!.id, attempt(1, 'RETRY', 503), NOW + 1000, 'PENDING');
  records.attempted(succeeded!.id, attempt(2, 'SUCCESS', 200), null, 'SUCCEEDED');
  for (const gone of [dead!, discarded!, replayed!]) {
    records.attempted(gone.id, attempt(1, 'FAILED', 410), null, 'PENDING');
    records.moved(gone.id, 'DEAD', NOW + 10);
  }
  for (const d of [pending, retried, succeeded, dead, discarded, replayed]) await recorded(records, d!.id);
  await new Promise((resolve) => setTimeout(resolve, 50)); // the lazily journalled results reach the disk
  await records.movedDurably([discarded!.id], 'DISCARDED', NOW + 20);
  await records.movedDurably([replayed!.id], 'PENDING', NOW + 30);
  return [
    `${pending!.id} PENDING `,
    `${retried!.id} PENDING RETRY:500`,
    `${succeeded!.id} SUCCEEDED RETRY:503,SUCCESS:200`,
    `${dead!.id} DEAD FAILED:410`,
    `${discarded!.id} DISCARDED FAILED:410`,
    `${replayed!.id} PENDING FAILED:410`,
  ];
}

test('files: every checkpoint reads as a replay of the journal it covers, and with the journal after it as a replay of it all', async () => {
  const dir = await tempDir();
  const journal = join(dir, 'deliveries.log');
  // A checkpoint after each landing: some are taken while records wait for their first line or for a changed state's.
  const records = await DeliveryRecords.open(journal, failOnError, true, 1);
  const seen = new Map<string, Buffer>();
  const watch = setInterval(() => {
    if (existsSync(`${dir}/deliveries.idx`)) {
      const index = readFileSync(`${dir}/deliveries.idx`);
      seen.set(index.subarray(0, index.indexOf(0x0a)).toString(), index);
    }
  }, 1);
  try {
    await recordEveryState(records);
    const [late, later] = [7, 8].map((n) => delivery(event(n, 0)));
    records.created([late!]);
    await records.movedDurably(['msg_e6'], 'DEAD', NOW + 40);
    // Held until its line lands, in the turn the checkpoint above is taken in.
    records.attempted('msg_e2', attempt(2, 'SUCCESS', 200), null, 'SUCCEEDED');
    await recorded(records, late!.id);
    records.created([later!]);
    records.attempted(late!.id, attempt(1, 'RETRY', 500), NOW + 2000, 'PENDING');
    await recorded(records, later!.id);
    await records.movedDurably(['msg_e4'], 'DISCARDED', NOW + 50);
  } finally {
    clearInterval(watch);
  }
  const reopen = async (bytes: number, index: Buffer | null) => {
    const copy = await tempDir();
    writeFileSync(join(copy, 'deliveries.log'), readFileSync(journal).subarray(0, bytes));
    if (index) writeFileSync(join(copy, 'deliveries.idx'), index);
    const reopened = await DeliveryRecords.open(join(copy, 'deliveries.log'), failOnError);
    const read = { all: summary(reopened), dead: reopened.list('w', { limit: 10, status: 'DEAD' }).items.map((r) => r.id), e2: reopened.get('msg_e2')?.status ?? null, e6: reopened.get('msg_e6')?.status ?? null };
    await reopened.close();
    return read;
  };
  const size = readFileSync(journal).length;
  const checkpoints = [...seen].map(([header, index]) => ({ bytes: (JSON.parse(header) as { journalBytes: number }).journalBytes, index }));
  assert.ok(checkpoints.some(({ bytes }) => bytes < size), `set-up: a checkpoint with lines after it (${checkpoints.length} seen)`);
  for (const { bytes, index } of checkpoints) {
    assert.equal(await reopen(bytes, index), await reopen(bytes, null), `the checkpoint of the first ${bytes} bytes`);
    assert.equal(await reopen(size, index), await reopen(size, null), `that checkpoint and the ${size - bytes} bytes after it`);
  }
  assert.equal((await reopen(size, checkpoints[0]!.index)).all.length, 8);
  await records.close();
});

test('files: every state of a record reads the same after a restart, from the line its index points at', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const expected = await recordEveryState(records);
  assert.equal(summary(records), expected);
  await records.close();

  await afterRestart(dir, (reopened) => {
    assert.equal(summary(reopened), expected);
    assert.is(reopened.get('msg_e4')?.status, 'DEAD', 'a DEAD record is found by id: it may be replayed or discarded');
    assert.equal(reopened.ofEvent('w', 'e3').map((record) => record.attempts.length), [2]);
    assert.equal(reopened.list('w', { limit: 10, status: 'DEAD' }).items.map((record) => record.id), ['msg_e4']);
    assert.equal(reopened.list('w', { limit: 10, subscriptionId: 's2' }).items, [], 'a subscription it does not have');
  });
  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  // A replayed DEAD record read from its line finishes again, and that reads the same after another restart.
  reopened.attempted('msg_e4', attempt(9, 'SUCCESS', 204), null, 'SUCCEEDED');
  await reopened.close();
  const again = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.is(again.ofEvent('w', 'e4')[0]?.status, 'DEAD', 'attempts count only while PENDING');
  await again.movedDurably(['msg_e4'], 'PENDING', NOW + 40);
  again.attempted('msg_e4', attempt(2, 'SUCCESS', 204), null, 'SUCCEEDED');
  await again.close();
  const last = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.is(summary(last)[3], 'msg_e4 SUCCEEDED FAILED:410,SUCCESS:204');
  await last.close();
});

test('since and until filter to the millisecond', async () => {
  const records = await DeliveryRecords.open(join(await tempDir(), 'deliveries.log'), failOnError);
  // Ten records 150 ms apart: the columns hold seconds, the record the millisecond.
  const made = Array.from({ length: 10 }, (_, n) => ({ ...delivery(event(20 + n, 0)), enqueuedAt: new Date(NOW + n * 150).toISOString() }));
  records.created(made);
  const between = records.list('w', { limit: 100, since: NOW + 300, until: NOW + 1050 }).items.map((record) => record.id);
  assert.equal(between, made.slice(2, 8).reverse().map((d) => d.id));
  await records.close();
});

test('files: compaction leaves one line per record, with results journalled while it ran, and the index reads the new file', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const expected = await recordEveryState(records);
  const late = delivery(event(7, 0));
  records.created([late]);
  const removing = records.removeEvents(new Set(['e1'])); // rewrites the journal
  records.attempted(late.id, attempt(1, 'SUCCESS', 200), null, 'SUCCEEDED'); // journalled while the rewrite waits
  assert.is(await removing, 1);
  await recorded(records, late.id);
  const now = [...expected.slice(1), `${late.id} SUCCEEDED SUCCESS:200`];
  assert.equal(summary(records), now);
  await records.close();
  const lines = journalLines(dir);
  assert.is(lines.length, 6 + 1, 'one line per record, and the late one written once, finished, after them');
  assert.is(JSON.parse(lines.at(-1)!).record.status, 'SUCCEEDED');

  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(reopened), now);
  await reopened.close();
});

test('files: a journal of an earlier version (status lines) reads the same and is rewritten to one line per record', async () => {
  const dir = await tempDir();
  const record = (n: number) => ({ ...delivery(event(n, 0)), nextAttemptAt: NOW });
  const base = (n: number) => ({
    id: `msg_e${n}`, eventId: `e${n}`, eventKey: 'a.b', workspaceId: 'w', subscriptionId: 's1', extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE', status: 'PENDING', attempts: [], nextAttemptAt: new Date(NOW).toISOString(), createdAt: record(n).enqueuedAt,
  });
  const at = new Date(NOW + 5).toISOString();
  const legacy = [
    { t: 'new', seq: 1, record: base(1) },
    { t: 'new', seq: 2, record: base(2) },
    { t: 'new', seq: 3, record: { ...base(3), status: 'DEAD', attempts: [attempt(1, 'FAILED', 500)], completedAt: at } },
    { t: 'try', id: 'msg_e1', attempt: attempt(1, 'SUCCESS', 200), nextAttemptAt: null },
    { t: 'status', id: 'msg_e1', status: 'SUCCEEDED', at },
    { t: 'try', id: 'msg_e2', attempt: attempt(1, 'FAILED', 500), nextAttemptAt: null },
    { t: 'status', id: 'msg_e2', status: 'DEAD', at },
    { t: 'status', id: 'msg_e3', status: 'DISCARDED', at },
  ];
  writeFileSync(join(dir, 'deliveries.log'), legacy.map((entry) => JSON.stringify(entry)).join('\n') + '\n');
  const expected = ['msg_e1 SUCCEEDED SUCCESS:200', 'msg_e2 DEAD FAILED:500', 'msg_e3 DISCARDED FAILED:500'];
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(records), expected);
  assert.is(records.get('msg_e2')?.status, 'DEAD');
  await records.close();
  assert.equal(journalLines(dir).map((line) => JSON.parse(line).t), ['new', 'new', 'new']);
  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(reopened), expected);
  await reopened.close();
});

test('files: a record whose first line reached the journal after later records (written again after a failure) is read in its place', async () => {
  const dir = await tempDir();
  const base = (n: number, status: string) => ({
    id: `msg_e${n}`, eventId: `e${n}`, eventKey: 'a.b', workspaceId: 'w', subscriptionId: 's1', extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE', status, attempts: [], createdAt: new Date(NOW + n).toISOString(),
  });
  const journal = [
    { t: 'new', seq: 1, record: base(1, 'SUCCEEDED') },
    { t: 'new', seq: 3, record: base(3, 'PENDING') },
    { t: 'state', seq: 2, record: base(2, 'DEAD') },
    { t: 'state', seq: 3, record: base(3, 'SUCCEEDED') },
  ];
  writeFileSync(join(dir, 'deliveries.log'), journal.map((entry) => JSON.stringify(entry)).join('\n') + '\n');
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(records), ['msg_e1 SUCCEEDED ', 'msg_e2 DEAD ', 'msg_e3 SUCCEEDED ']);
  assert.is(records.get('msg_e2')?.status, 'DEAD');
  assert.equal(records.list('w', { limit: 1, before: 3 }).items.map((record) => record.id), ['msg_e2'], 'a cursor finds its position');
  await records.close();
});

test('files: a delivery that ends before its record is first written is written once, finished; one that goes on gets its attempts after', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const [quick, slow] = [delivery(event(30, 0)), delivery(event(31, 0))];
  records.created([quick, slow]);
  records.attempted(quick.id, attempt(1, 'SUCCESS', 200), null, 'SUCCEEDED');
  await recorded(records, slow.id);
  records.attempted(slow.id, attempt(1, 'RETRY', 500), NOW + 1000, 'PENDING');
  await records.close();
  const lines = journalLines(dir).map((line) => JSON.parse(line));
  const written = lines.map((line) => [line.t, line.record.status, line.record.attempts.map((a: DeliveryAttempt) => a.outcome).join()]);
  assert.equal(written, [['new', 'SUCCEEDED', 'SUCCESS'], ['new', 'PENDING', ''], ['state', 'PENDING', 'RETRY']], 'an attempt of a PENDING record is its whole state again');
  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(reopened), [`${quick.id} SUCCEEDED SUCCESS:200`, `${slow.id} PENDING RETRY:500`]);
  await reopened.close();
});

test('files: a delivery still in the outbox whose record finished on disk does not get a second record', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const done = delivery(event(8, 0));
  records.created([done]);
  records.attempted(done.id, attempt(1, 'SUCCESS', 200), null, 'SUCCEEDED');
  await recorded(records, done.id);
  await records.close();
  // The crash came before the outbox forgot the delivery.
  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  reopened.reconcile(fingerprintsOf([done]), (refs) => refs, () => false, NOW);
  assert.equal(summary(reopened), [`${done.id} SUCCEEDED SUCCESS:200`]);
  await reopened.close();
});

test('files: a PENDING record keeps every attempt, one whole line per attempt, across restarts, and is found by id among thousands', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const many = Array.from({ length: 3000 }, (_, n) => delivery(event(1000 + n, 0)));
  records.created(many);
  await recorded(records, many.at(-1)!.id);
  const retried = many[1234]!;
  for (let n = 1; n <= 10; n += 1) records.attempted(retried.id, attempt(n, 'RETRY', 500 + n), NOW + n * 1000, 'PENDING');
  await records.close();

  let reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const after = reopened.get(retried.id);
  assert.equal(after?.attempts.map((a) => a.httpStatus), [501, 502, 503, 504, 505, 506, 507, 508, 509, 510]);
  assert.is(after?.nextAttemptAt, new Date(NOW + 10_000).toISOString());
  reopened.attempted(retried.id, attempt(11, 'SUCCESS', 200), null, 'SUCCEEDED');
  assert.is(reopened.get(retried.id), undefined, 'a finished record is no longer found by id');
  assert.is(reopened.get(many[0]!.id)?.status, 'PENDING');
  await reopened.close();
  reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(reopened.ofEvent('w', retried.event.id).map((record) => [record.status, record.attempts.length]), [['SUCCEEDED', 11]]);
  await reopened.close();
});

test('files: a restart indexes records from the head and tail of their lines, whatever their key, subscription or state', async () => {
  const dir = await tempDir();
  let records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const plain = delivery(event(1, 0));
  // An escaped event key, and a built-in plugin's delivery (no subscription).
  const quoted = { ...delivery({ ...event(2, 0), eventKey: 'a"b.\\c' }), subscriber: { subscriptionId: null, extensionKey: 'plug', kind: 'IN_PROCESS' as const, serviceBaseUrl: null } };
  const finished = delivery(event(3, 0));
  records.created([plain, quoted, finished]);
  records.attempted(finished.id, attempt(1, 'SUCCESS', 200), null, 'SUCCEEDED');
  await recorded(records, finished.id);
  const before = records.list('w', { limit: 10 }).items;
  await records.close();
  await afterRestart(dir, (reopened) => {
    assert.equal(reopened.list('w', { limit: 10 }).items, before);
    assert.equal(reopened.list('w', { limit: 10, eventKey: 'a"b.\\c' }).items.map((record) => record.id), [quoted.id]);
    assert.equal(reopened.list('w', { limit: 10, status: 'SUCCEEDED' }).items.map((record) => record.id), [finished.id]);
    assert.equal(reopened.list('w', { limit: 10, subscriptionId: 's1' }).items.map((record) => record.id), [finished.id, plain.id]);
    assert.equal(reopened.list('w', { limit: 10, since: NOW, until: NOW }).items.length, 3, 'createdAt read from the tail');
    assert.equal(reopened.list('w', { limit: 10, since: NOW + 1 }).items.length, 0);
    assert.is(reopened.get(quoted.id)?.eventKey, 'a"b.\\c');
  });
});

test("files: past a block of 65,536 records a workspace's columns are in the swap, and listing, attempts, retention and a restart read the same", async () => {
  const dir = await tempDir();
  let records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const count = 140_000; // two blocks in the swap, the third in memory
  const many = Array.from({ length: count }, (_, n) => delivery(event(n, 0)));
  for (let n = 0; n < count; n += 10_000) records.created(many.slice(n, n + 10_000));
  await recorded(records, many.at(-1)!.id);
  // Records in spilled blocks change in the swap: a listing by status and a lookup by id see it.
  for (const n of [5, 70_000, 139_999]) records.attempted(many[n]!.id, attempt(1, 'SUCCESS', 200), null, 'SUCCEEDED');
  const succeeded = () => records.list('w', { limit: 10, status: 'SUCCEEDED' }).items.map((record) => record.id);
  assert.equal(succeeded(), ['msg_e139999', 'msg_e70000', 'msg_e5']);
  assert.is(records.get(many[6]!.id)?.status, 'PENDING');
  assert.equal(records.ofEvent('w', 'e65536').map((record) => record.id), ['msg_e65536']);
  // Paging from the oldest block back to the newest reads every record once.
  let seen = 0;
  for (let before: number | undefined, page; (page = records.list('w', { limit: 5000, ...(before === undefined ? {} : { before }) })); before = page.lastSeq!) {
    seen += page.items.length;
    if (!page.more) break;
  }
  assert.is(seen, count);
  // Retention of the oldest 100,000 rebuilds the columns.
  assert.is(await records.removeEvents(new Set(many.slice(0, 100_000).map((d) => d.event.id))), 100_000);
  await records.close();
  await afterRestart(dir, (reopened) => {
    records = reopened;
    assert.equal(succeeded(), ['msg_e139999']);
    assert.equal(reopened.list('w', { limit: 2, status: 'PENDING' }).items.map((record) => record.id), ['msg_e139998', 'msg_e139997']);
    assert.is(reopened.get('msg_e100000')?.status, 'PENDING');
    assert.is(reopened.get('msg_e99999'), undefined);
  });
});

test('files: a journal with `try` lines (earlier versions) reads the same and is rewritten to one line per record', async () => {
  const dir = await tempDir();
  const base = {
    id: 'msg_e1', eventId: 'e1', eventKey: 'a.b', workspaceId: 'w', subscriptionId: 's1', extensionKey: 'crm',
    kind: 'EXTERNAL_SERVICE', status: 'PENDING', attempts: [], nextAttemptAt: new Date(NOW).toISOString(), createdAt: new Date(NOW).toISOString(),
  };
  const journal = [
    { t: 'new', seq: 1, record: base },
    { t: 'try', id: 'msg_e1', attempt: attempt(1, 'RETRY', 500), nextAttemptAt: new Date(NOW + 1000).toISOString() },
    { t: 'try', id: 'msg_e1', attempt: attempt(2, 'RETRY', 502), nextAttemptAt: new Date(NOW + 2000).toISOString() },
  ];
  writeFileSync(join(dir, 'deliveries.log'), journal.map((entry) => JSON.stringify(entry)).join('\n') + '\n');
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(records), ['msg_e1 PENDING RETRY:500,RETRY:502']);
  assert.is(records.get('msg_e1')?.nextAttemptAt, new Date(NOW + 2000).toISOString());
  await records.close();
  assert.equal(journalLines(dir).map((line) => JSON.parse(line).t), ['new']);
  const reopened = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  assert.equal(summary(reopened), ['msg_e1 PENDING RETRY:500,RETRY:502']);
  await reopened.close();
});

test('files: reconciling at the start matches pending deliveries to their records by id alone, and settles the others', async () => {
  const dir = await tempDir();
  const records = await DeliveryRecords.open(join(dir, 'deliveries.log'), failOnError);
  const many = Array.from({ length: 2000 }, (_, n) => delivery(event(5000 + n, 0)));
  records.created(many);
  await recorded(records, many.at(-1)!.id);
  // A dead letter's record: in no outbox, and DEAD it stays.
  const letter = many[1500]!;
  records.attempted(letter.id, attempt(1, 'FAILED', 500), null, 'DEAD');
  await records.close();
  // Settled in the order of their records, whatever the order of the index's slots.
  const [gone, dead] = [many[1999]!, many[20]!];
  const unrecorded = delivery(event(9999, 0));
  const pending = [...many.filter((d) => d !== gone && d !== dead && d !== letter), unrecorded];
  await afterRestart(dir, (reopened) => {
    const loaded: string[] = [];
    reopened.reconcile(
      fingerprintsOf(pending),
      (refs) => {
        loaded.push(...refs.map((d) => d.id));
        return refs;
      },
      (id) => id === dead.id,
      NOW,
    );
    assert.equal(loaded, [unrecorded.id], 'only the delivery without a record is loaded whole');
    assert.is(reopened.get(gone.id), undefined, 'delivered before the crash: SUCCEEDED');
    assert.is(reopened.ofEvent('w', gone.event.id)[0]?.status, 'SUCCEEDED');
    assert.is(reopened.get(dead.id)?.status, 'DEAD');
    assert.is(reopened.get(unrecorded.id)?.status, 'PENDING');
    assert.is(reopened.get(letter.id)?.status, 'DEAD');
    assert.equal(reopened.list('w', { limit: 5000, status: 'DEAD' }).items.map((record) => record.id), [letter.id, dead.id]);
    assert.is(reopened.list('w', { limit: 5000, status: 'PENDING' }).items.length, 1998);
  });
});

type FileDispatch = Awaited<ReturnType<typeof openFileDispatch>>;
const success = { startedAt: new Date(NOW).toISOString(), durationMs: 5, outcome: 'SUCCESS', httpStatus: 200, responseExcerpt: 'ok' } as const;

/**
 * Opens the file stores on a small disk, publishes one delivery and fills the
 * disk before its record's first line is written (100 ms later: that write
 * needs a page of its own), then runs `run`; whatever `run` leaves open is
 * closed, so that the disk can be unmounted even when an assertion fails.
 */
async function withRecordWriteFailing(
  run: (dir: string, open: { dispatch: FileDispatch | null }, finished: Delivery, errors: unknown[]) => Promise<void>,
): Promise<void> {
  await withSmallDisk('4m', async (dir) => {
    const errors: unknown[] = [];
    const open: { dispatch: FileDispatch | null } = { dispatch: await openFileDispatch(dir, { reportError: (error) => errors.push(error) }) };
    try {
      const finished = delivery(event(1, 0));
      await open.dispatch!.events.publish(finished.event.atHand!, [finished]);
      fillDisk(join(dir, 'filler'));
      await run(dir, open, finished, errors);
    } finally {
      await open.dispatch?.events.close();
    }
  });
}

needsSmallDisk(test)('files: a delivery whose record failed to reach a full disk stays in the outbox until a later try writes the record', async () => {
  await withRecordWriteFailing(async (dir, open, finished, errors) => {
    const dispatch = open.dispatch!;
    dispatch.deliveries.succeeded(finished, success);
    await dispatch.deliveries.settled();
    assert.ok(errors.length > 0, 'the failed write is reported');
    assert.is((await dispatch.deliveries.pending()).count, 1, 'the outbox still holds the delivery whose record is not on disk');

    await rm(join(dir, 'filler'));
    await waitFor('the record written on a later try, and the delivery forgotten', async () => (await dispatch.deliveries.pending()).count === 0);
    open.dispatch = null;
    await dispatch.events.close();
    const reopened = (open.dispatch = await openFileDispatch(dir, { reportError: failOnError }));
    const listed = (await reopened.deliveries.list('w', { limit: 10 })).items.map((record) => `${record.id} ${record.status}`);
    assert.equal(listed, [`${finished.id} SUCCEEDED`], 'the record survives a restart');
    assert.equal(await reopened.deliveries.claim(10), [], 'and the delivery is not run again');
  });
});

needsSmallDisk(test)('files: a record still unwritten when the daemon stops leaves its delivery in the outbox, recorded at the next start', async () => {
  await withRecordWriteFailing(async (dir, open, finished, errors) => {
    const dispatch = open.dispatch!;
    dispatch.deliveries.succeeded(finished, success);
    open.dispatch = null;
    await dispatch.events.close();

    await rm(join(dir, 'filler'));
    const reopened = (open.dispatch = await openFileDispatch(dir, { reportError: failOnError }));
    assert.equal((await reopened.deliveries.claim(10)).map((pending) => pending.id), [finished.id], 'the delivery runs again');
    const listed = (await reopened.deliveries.list('w', { limit: 10 })).items.map((record) => `${record.id} ${record.status}`);
    assert.equal(listed, [`${finished.id} PENDING`]);
    assert.ok(errors.some((error) => /1 delivery records could not be written/.test(String(error))), 'the stop says so');
  });
});

test.run();
