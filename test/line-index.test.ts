import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Column, hash32 } from '../src/daemon/store/line-index.js';

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

test.run();
