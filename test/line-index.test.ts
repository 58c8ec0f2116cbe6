import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Column, FingerprintTable, Swap, hash32 } from '../src/daemon/store/line-index.js';

test('a column keeps every value across its blocks, also after trimming and growing again', () => {
  const column = new Column(Float64Array);
  const count = 200_003; // four blocks, the last one partly used
  for (let index = 0; index < count; index += 1) {
    column.reserve(index + 1);
    column.set(index, index * 1.5 + 2 ** 40);
  }
  const check = (length: number) => {
    for (let index = 0; index < length; index += 1) {
      if (column.get(index) !== index * 1.5 + 2 ** 40) assert.unreachable(`value ${index} of ${length}`);
    }
  };
  check(count);
  column.trim(70_000);
  check(70_000);
  for (let index = 70_000; index < 140_000; index += 1) {
    column.reserve(index + 1);
    column.set(index, index * 1.5 + 2 ** 40);
  }
  check(140_000);
  column.trim(5);
  column.reserve(9);
  column.set(8, 8 * 1.5 + 2 ** 40);
  for (const index of [0, 4, 8]) assert.is(column.get(index), index * 1.5 + 2 ** 40);
});

test('a column with a swap holds one block in memory and reads and writes the spilled ones through a small cache', () => {
  const dir = mkdtempSync(join(tmpdir(), 'platform-swap-'));
  // 64 KiB of cache: four pages, far less than the columns, so pages are evicted and read again.
  const swap = new Swap(dir, 64 * 1024);
  try {
    assert.equal(readdirSync(dir), [], 'the swap file is unlinked at once');
    const wide = new Column(Float64Array, swap);
    const narrow = new Column(Uint8Array, swap);
    const count = 200_003;
    const valueAt = (index: number) => index * 1.5 + 2 ** 40;
    for (let index = 0; index < count; index += 1) {
      wide.reserve(index + 1);
      narrow.reserve(index + 1);
      wide.set(index, valueAt(index));
      narrow.set(index, index % 251);
    }
    const check = (length: number, at: (index: number) => number = valueAt) => {
      for (let index = 0; index < length; index += 1) {
        if (wide.get(index) !== at(index)) assert.unreachable(`wide value ${index} of ${length}`);
      }
    };
    check(count);
    // Backwards and by jumps, as listings and binary searches read.
    for (let index = count - 1; index >= 0; index -= 7919) assert.is(wide.get(index), valueAt(index));
    // Writes into spilled blocks land in the file and in a cached page alike.
    assert.is(wide.get(10), valueAt(10));
    wide.set(10, -1);
    wide.set(150_000, -2);
    narrow.set(3, 250);
    assert.equal([wide.get(10), wide.get(150_000), narrow.get(3), narrow.get(4)], [-1, -2, 250, 4]);
    for (let index = 0; index < count; index += 4096) wide.get(index); // evicts every page
    assert.equal([wide.get(10), wide.get(150_000), narrow.get(3)], [-1, -2, 250]);
    wide.set(10, valueAt(10));
    wide.set(150_000, valueAt(150_000));
    // Retaining every third value rebuilds the column; its old blocks are released and reused.
    const keep = new Uint8Array(count);
    for (let index = 0; index < count; index += 3) keep[index] = 1;
    wide.retain(keep, count);
    check(Math.ceil(count / 3), (index) => valueAt(index * 3));
    const other = new Column(Float64Array, swap);
    for (let index = 0; index < count; index += 1) {
      other.reserve(index + 1);
      other.set(index, -index);
    }
    check(Math.ceil(count / 3), (index) => valueAt(index * 3));
    for (let index = 0; index < count; index += 1) if (other.get(index) !== -index) assert.unreachable(`other value ${index}`);
    // The cache's four slots are reused: a column whose remembered page was evicted by another's reads reads it again.
    for (let round = 0; round < 50; round += 1) {
      const index = (round * 7919) % Math.ceil(count / 3);
      assert.is(wide.get(index), valueAt(index * 3));
      for (let page = 0; page < 5; page += 1) other.get((round * 5 + page) * 2048 % count);
      assert.is(wide.get(index + 1), valueAt((index + 1) * 3));
    }
    // A column spilled whole (a sealed segment's) reads back its short last block too.
    const sealed = new Column(Uint32Array, swap);
    sealed.reserve(70_001);
    for (let index = 0; index < 70_001; index += 1) sealed.set(index, index + 7);
    sealed.trim(70_001);
    sealed.spill();
    for (const index of [0, 65_535, 65_536, 70_000]) assert.is(sealed.get(index), index + 7);
    assert.throws(() => sealed.reserve(70_002), /grows no more/);
    other.release();
    assert.is(narrow.get(200_002), 200_002 % 251);
    // Columns of every length spilled whole and released, as sealed segments come and go, reuse the file.
    const churn = (round: number) => {
      for (let length = 1_000 + round * 13; length < 120_000; length += 7_919) {
        const column = new Column(Float64Array, swap);
        column.reserve(length);
        column.set(length - 1, length);
        column.trim(length);
        column.spill();
        assert.is(column.get(length - 1), length);
        column.release();
      }
    };
    churn(0);
    const spanned = swap.fileBytes;
    for (let round = 1; round < 20; round += 1) churn(round);
    assert.ok(swap.fileBytes <= 2 * spanned, `the file grew from ${spanned} to ${swap.fileBytes} bytes`);
  } finally {
    swap.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('hash32 is the 32-bit FNV-1a of the text', () => {
  assert.is(hash32(''), 0x811c9dc5);
  assert.is(hash32('a'), 0xe40c292c);
  assert.is(hash32('foobar'), 0xbf9cf968);
});

test('a fingerprint table finds every entry of a fingerprint, shared or not, across growth and removals', () => {
  const table = new FingerprintTable().withTags().withChecks();
  const count = 50_000;
  // Every fingerprint twice: entries n and n + count share key n * 7.
  for (let n = 1; n <= count; n += 1) table.add(n * 7, n, n % 13, n + 1);
  for (let n = 1; n <= count; n += 1) table.add(n * 7, n + count, 5, n + 2);
  assert.is(table.size, count * 2);
  const valuesOf = (key: number) => [...table.find(key)].map((slot) => table.value(slot)).sort((a, b) => a - b);
  for (const n of [1, 777, count]) assert.equal(valuesOf(n * 7), [n, n + count]);
  const slot = table.slotOf(777 * 7, 777);
  assert.equal([table.tag(slot), table.check(slot)], [777 % 13, 778]);
  // Remove one of each pair, then the tombstones are dropped by growth.
  for (let n = 1; n <= count; n += 1) table.remove(table.slotOf(n * 7, n));
  for (let n = 1; n <= count; n += 1) table.add(n * 7 + 3, n + 2 * count);
  assert.is(table.size, count * 2);
  for (const n of [1, 777, count]) {
    assert.equal(valuesOf(n * 7), [n + count]);
    assert.equal(valuesOf(n * 7 + 3), [n + 2 * count]);
  }
  table.removeWhere((_value, tag) => tag === 5);
  assert.equal(valuesOf(777 * 7), []);
  assert.is(table.check(table.slotOf(777 * 7 + 3, 777 + 2 * count)), 0, 'added without a second fingerprint');
  assert.is(valuesOf(123_456_789).length, 0, 'a fingerprint never added');
});

test('a fingerprint table widens its values and tags for good when one does not fit 32 or 16 bits', () => {
  const table = new FingerprintTable().withTags();
  for (let n = 1; n <= 3000; n += 1) table.add(n, n, n % 7);
  table.remove(table.slotOf(5, 5));
  table.add(9, 2 ** 32 - 1, 3); // the narrow table's removed mark: values widen
  table.add(10, 2 ** 40 + 1, 70_000); // and a tag past 16 bits
  const entries = (key: number) => [...table.find(key)].map((slot) => [table.value(slot), table.tag(slot)]);
  assert.equal(entries(9), [[9, 2], [2 ** 32 - 1, 3]]);
  assert.equal(entries(10), [[10, 3], [2 ** 40 + 1, 70_000]]);
  assert.equal(entries(5), [], 'a slot removed before widening stays removed');
  assert.is(table.size, 3001);
  for (let n = 3001; n <= 6000; n += 1) table.add(n, n, 1); // growth keeps the wide arrays
  assert.equal(entries(10), [[10, 3], [2 ** 40 + 1, 70_000]]);
  assert.is([...table.slots()].length, 6001);
});

test.run();
