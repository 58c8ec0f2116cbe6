import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AppendLog, replay } from '../src/daemon/store/append-log.js';
import { Collection } from '../src/daemon/store/collection.js';
import { ensurePrivateDir } from '../src/daemon/files.js';
import { openFilesUnder, tempDir } from './helpers/temp.js';
import { needsSmallDisk, withSmallDisk } from './helpers/tmpfs.js';

interface CounterDoc {
  schemaVersion: number;
  items: number[];
}

const openCounter = (file: string, schemaVersion = 1, migrations?: Record<number, (doc: any) => any>) =>
  Collection.open<CounterDoc>({ file, schemaVersion, create: () => ({ schemaVersion, items: [] }), migrations });

test('a new collection is written at once, with mode 0600 in a 0700 directory', async () => {
  const dir = join(await tempDir(), 'data');
  await ensurePrivateDir(dir);
  const collection = await openCounter(join(dir, 'counter.json'));
  assert.equal(JSON.parse(readFileSync(collection.file, 'utf8')), { schemaVersion: 1, items: [] });
  assert.is(statSync(collection.file).mode & 0o777, 0o600);
  assert.is(statSync(dir).mode & 0o777, 0o700);
});

test('concurrent updates share physical writes, and every one is on disk when it resolves', async () => {
  const dir = await tempDir();
  const collection = await openCounter(join(dir, 'counter.json'));
  const before = collection.physicalWrites;
  await Promise.all(Array.from({ length: 1000 }, (_, i) => collection.update((data) => data.items.push(i))));
  const writes = collection.physicalWrites - before;
  assert.ok(writes <= 2, `1000 concurrent updates cost ${writes} physical writes`);
  const onDisk = JSON.parse(readFileSync(collection.file, 'utf8')) as CounterDoc;
  assert.is(onDisk.items.length, 1000);
  assert.equal((await readdir(dir)).sort(), ['counter.json'], 'no temp file is left behind');
});

test('update returns the value of the mutation', async () => {
  const collection = await openCounter(join(await tempDir(), 'counter.json'));
  const length = await collection.update((data) => data.items.push(7));
  assert.is(length, 1);
});

test('a file that is not JSON stops the open, names the file, and is left untouched', async () => {
  const file = join(await tempDir(), 'counter.json');
  writeFileSync(file, '{"schemaVersion":1,"items":[1,2');
  try {
    await openCounter(file);
    assert.unreachable('opened a corrupt file');
  } catch (error) {
    assert.instance(error, Error);
    assert.is((error as Error).name, 'StartupError');
    assert.match((error as Error).message, file);
  }
  assert.is(readFileSync(file, 'utf8'), '{"schemaVersion":1,"items":[1,2');
});

test('a document from a newer schemaVersion is refused; an older one is migrated and saved', async () => {
  const dir = await tempDir();
  const newer = join(dir, 'newer.json');
  writeFileSync(newer, JSON.stringify({ schemaVersion: 9, items: [] }));
  try {
    await openCounter(newer);
    assert.unreachable('opened a newer document');
  } catch (error) {
    assert.match((error as Error).message, 'newer than this platform supports');
  }
  const older = join(dir, 'older.json');
  writeFileSync(older, JSON.stringify({ schemaVersion: 1, values: [3] }));
  const migrated = await openCounter(older, 2, { 1: (doc) => ({ items: doc.values }) });
  assert.equal(migrated.data, { schemaVersion: 2, items: [3] });
  assert.equal(JSON.parse(readFileSync(older, 'utf8')), { schemaVersion: 2, items: [3] });
});

test('append log: appends are grouped, replayed in order, and a torn last line is cut off', async () => {
  const file = join(await tempDir(), 'events.log');
  const log = await AppendLog.open<{ n: number }>(file, () => undefined);
  await Promise.all(Array.from({ length: 500 }, (_, n) => log.append({ n })));
  assert.ok(log.physicalWrites <= 2, `500 concurrent appends cost ${log.physicalWrites} writes`);
  await log.close();

  appendFileSync(file, '{"n":50'); // a crash in the middle of a write
  const replayed: number[] = [];
  const reopened = await AppendLog.open<{ n: number }>(file, (record) => replayed.push(record.n));
  assert.equal(replayed, Array.from({ length: 500 }, (_, n) => n));
  await reopened.append({ n: 500 });
  await reopened.close();
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.is(lines.length, 501);
  assert.is(lines.at(-1), '{"n":500}');
});

test('append log: a closed log holds no descriptor, also after a line is read from it (as the checkpoint of a stop does)', async () => {
  const dir = await tempDir();
  const log = await AppendLog.open<{ n: number }>(join(dir, 'records.log'), () => undefined);
  const span = (await log.append({ n: 1 }))!;
  assert.is(log.readLine(span.offset), '{"n":1}');
  await log.close();
  assert.equal(openFilesUnder(dir), []);
  assert.is(log.readLine(span.offset), '{"n":1}');
  assert.is(log.readSpan(span.offset, span.length), '{"n":1}');
  assert.equal(openFilesUnder(dir), [], 'reads after close open and close their own');
});

test('append log: a replay waits after each chunk, so that a reader writes out what it gathered before the rest is read (db import)', async () => {
  const file = join(await tempDir(), 'events.log');
  const padding = 'x'.repeat(1_000);
  writeFileSync(file, Array.from({ length: 3_000 }, (_, n) => JSON.stringify({ n, padding }) + '\n').join(''));
  let gathered: number[] = [];
  const written: number[][] = [];
  await replay<{ n: number }>(
    file,
    (record) => gathered.push(record.n),
    async () => {
      written.push(gathered);
      gathered = [];
    },
  );
  assert.ok(written.length >= 3, `${written.length} chunks of a 3 MB log`);
  assert.ok(Math.max(...written.map((chunk) => chunk.length)) < 1_100, 'no chunk holds much more than 1 MiB of lines');
  assert.equal(written.flat(), Array.from({ length: 3_000 }, (_, n) => n));
  assert.equal(gathered, []);
});

test('append log: a corrupt line before good ones stops the open and names the file', async () => {
  const file = join(await tempDir(), 'events.log');
  writeFileSync(file, '{"n":1}\nnot json\n{"n":3}\n');
  try {
    await AppendLog.open(file, () => undefined);
    assert.unreachable('opened a corrupt log');
  } catch (error) {
    assert.match((error as Error).message, `${file} is corrupt at line 2`);
  }
  assert.is(readFileSync(file, 'utf8'), '{"n":1}\nnot json\n{"n":3}\n');
});

test('append log: rewrite replaces the contents atomically and later appends follow', async () => {
  const file = join(await tempDir(), 'outbox.log');
  const log = await AppendLog.open<{ n: number }>(file, () => undefined);
  await Promise.all([1, 2, 3].map((n) => log.append({ n })));
  await log.rewrite([{ n: 3 }]);
  await log.append({ n: 4 });
  await log.close();
  assert.is(readFileSync(file, 'utf8'), '{"n":3}\n{"n":4}\n');
});

needsSmallDisk(test)('disk full: the failed update is reverted in memory, the file keeps the last good state, and writes resume', async () => {
  await withSmallDisk('64k', async (dir) => {
    const collection = await openCounter(join(dir, 'counter.json'));
    let resets = 0;
    collection.onReset(() => (resets += 1));
    await collection.update((data) => data.items.push(1));
    writeFileSync(join(dir, 'filler'), Buffer.alloc(60 * 1024)); // leaves too little for the next write

    const big = Array.from({ length: 2000 }, (_, i) => i);
    try {
      await collection.update((data) => data.items.push(...big));
      assert.unreachable('a write on a full disk succeeded');
    } catch (error) {
      assert.is((error as { code?: string }).code, 'UNAVAILABLE');
    }
    assert.equal(collection.data.items, [1], 'memory is back to what is on disk');
    assert.is(resets, 1);
    assert.equal(JSON.parse(readFileSync(collection.file, 'utf8')).items, [1]);
    assert.not.ok(existsSync(`${collection.file}.tmp`));

    await rm(join(dir, 'filler'));
    await collection.update((data) => data.items.push(2));
    assert.equal(JSON.parse(readFileSync(collection.file, 'utf8')).items, [1, 2]);
  });
});

test('a failed update whose revert cannot read the file back is never written by a later update', async () => {
  const dir = await tempDir();
  const collection = await openCounter(join(dir, 'counter.json'));
  await collection.update((data) => data.items.push(1));
  // A directory where the file was: the write cannot replace it, and the revert cannot read it.
  renameSync(collection.file, `${collection.file}.aside`);
  mkdirSync(collection.file);
  await collection.update((data) => data.items.push(2)).then(
    () => assert.unreachable('an update succeeded over a directory'),
    () => undefined,
  );
  rmdirSync(collection.file);
  renameSync(`${collection.file}.aside`, collection.file);

  await collection.update((data) => data.items.push(3));
  assert.equal(JSON.parse(readFileSync(collection.file, 'utf8')).items, [1, 3], 'the refused 2 is not on disk');
  assert.equal(collection.data.items, [1, 3]);
});

needsSmallDisk(test)('disk full: a failed append leaves no torn line behind', async () => {
  await withSmallDisk('64k', async (dir) => {
    const file = join(dir, 'events.log');
    const log = await AppendLog.open<{ text: string }>(file, () => undefined);
    await log.append({ text: 'kept' });
    writeFileSync(join(dir, 'filler'), Buffer.alloc(56 * 1024));
    const failed = await log.append({ text: 'x'.repeat(20_000) }).then(
      () => false,
      (error: { code?: string }) => error.code === 'UNAVAILABLE',
    );
    await rm(join(dir, 'filler'));
    await log.append({ text: 'after' });
    await log.close();
    assert.ok(failed, 'the append on a full disk was refused with UNAVAILABLE');
    assert.is(readFileSync(file, 'utf8'), '{"text":"kept"}\n{"text":"after"}\n');
  });
});

test('a retracted line is blanked where it is (same length, no free space needed), skipped by replay; a line a rewrite moved is left alone', async () => {
  const dir = await tempDir();
  const file = join(dir, 'journal.log');
  const log = await AppendLog.open<{ n: number }>(file, () => undefined);
  const records = [{ n: 1 }, { n: 2 }, { n: 3 }];
  const spans = await Promise.all(records.map((record) => log.append(record)));
  await log.retract([{ span: spans[1]!, record: records[1]! }]);
  await log.append({ n: 4 });
  assert.is(readFileSync(file, 'utf8'), '{"n":1}\n       \n{"n":3}\n{"n":4}\n');
  await log.rewrite([{ n: 3 }, { n: 1 }]);
  // The retraction looks at offset 0, where n: 3 is now: not its line, so nothing is touched.
  await log.retract([{ span: spans[0]!, record: records[0]! }]);
  await log.close();
  assert.is(readFileSync(file, 'utf8'), '{"n":3}\n{"n":1}\n');
  const replayed: number[] = [];
  await replay<{ n: number }>(file, (record) => replayed.push(record.n));
  assert.equal(replayed, [3, 1]);

  const blanked = join(dir, 'blanked.log');
  writeFileSync(blanked, '{"n":1}\n       \n{"n":3}\n');
  const again: number[] = [];
  await replay<{ n: number }>(blanked, (record) => again.push(record.n));
  assert.equal(again, [1, 3], 'the blank line is skipped, not taken for corruption');
});

test.run();
