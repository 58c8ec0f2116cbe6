import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Column, FingerprintTable, hash32 } from '../src/daemon/store/line-index.js';

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
  table.dropChecks();
  assert.is(table.check(table.slotOf(777 * 7 + 3, 777 + 2 * count)), undefined);
  assert.is(valuesOf(123_456_789).length, 0, 'a fingerprint never added');
});

test.run();
