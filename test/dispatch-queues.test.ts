import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FairQueue } from '../src/daemon/dispatch/fair-queue.js';
import { Fifo } from '../src/daemon/dispatch/fifo.js';
import { DueTimes } from '../src/daemon/dispatch/schedule.js';

// The dispatcher's queue structures on their own, driven by values: no timers, no daemon.

/** A seeded generator, so that a failing order can be replayed. */
const seededRandom = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};

test('Fifo hands items back in order, also across its internal compaction', () => {
  const fifo = new Fifo<number>();
  for (let n = 0; n < 3000; n += 1) fifo.push(n);
  const out: number[] = [];
  for (let n = 0; n < 2000; n += 1) out.push(fifo.shift()!);
  for (let n = 3000; n < 3500; n += 1) fifo.push(n);
  assert.is(fifo.length, 1500);
  let item: number | undefined;
  while ((item = fifo.shift()) !== undefined) out.push(item);
  assert.equal(out, Array.from({ length: 3500 }, (_, n) => n));
  assert.is(fifo.length, 0);
  assert.is(fifo.shift(), undefined);
});

test('FairQueue serves subscribers round-robin, each in its own order', () => {
  const queue = new FairQueue<string>(100);
  for (const item of ['a1', 'a2', 'a3']) queue.push('a', item);
  for (const item of ['b1', 'b2']) queue.push('b', item);
  queue.push('c', 'c1');
  assert.is(queue.length, 6);
  const order: string[] = [];
  for (let taken = queue.take(); taken; taken = queue.take()) {
    order.push(taken.delivery);
    queue.finished(taken.key);
  }
  assert.equal(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  assert.is(queue.length, 0);
});

test('FairQueue gives one subscriber at most a quarter of the slots while others wait', () => {
  const queue = new FairQueue<string>(8);
  for (let n = 0; n < 10; n += 1) queue.push('slow', `slow${n}`);
  for (let n = 0; n < 10; n += 1) queue.push('other', `other${n}`);
  const running = { slow: 0, other: 0 };
  for (let taken = queue.take(); taken; taken = queue.take()) running[taken.key as 'slow' | 'other'] += 1;
  assert.equal(running, { slow: 2, other: 2 });
  assert.is(queue.length, 16);
});

test('FairQueue lets a subscriber alone use all but a quarter of the slots, and frees a slot when one finishes', () => {
  const queue = new FairQueue<string>(8);
  for (let n = 0; n < 10; n += 1) queue.push('alone', `d${n}`);
  const taken: string[] = [];
  for (let next = queue.take(); next; next = queue.take()) taken.push(next.delivery);
  assert.equal(taken, ['d0', 'd1', 'd2', 'd3', 'd4', 'd5']);
  queue.push('newcomer', 'n0');
  assert.equal(queue.take(), { key: 'newcomer', delivery: 'n0' });
  assert.is(queue.take(), undefined);
  queue.finished('alone');
  queue.finished('alone');
  queue.finished('alone');
  queue.finished('alone');
  queue.finished('alone');
  assert.equal(queue.take(), { key: 'alone', delivery: 'd6' });
});

test('DueTimes answers the earliest time still ahead, for any insertion order, growing past its first room', () => {
  const random = seededRandom(7);
  const due = new DueTimes();
  const times: number[] = [];
  for (let index = 0; index < 500; index += 1) {
    const at = Math.floor(random() * 1000);
    times.push(at);
    due.add(at);
  }
  const sorted = [...new Set(times)].sort((a, b) => a - b);
  // Each answer is the earliest time after `now`; those up to `now` are gone for good.
  for (const at of sorted) assert.is(due.next(at - 0.5), at, `after ${at - 0.5}`);
  assert.is(due.next(sorted.at(-1)!), null);
  assert.is(due.next(0), null, 'what was due is not answered again');
});

test('DueTimes: a time added after the clock passed others is answered in order', () => {
  const due = new DueTimes();
  due.add(5_000);
  due.add(1_500);
  due.add(1_000);
  assert.is(due.next(1_000), 1_500, 'the time that is due now goes: the claim at hand takes it');
  due.add(2_000);
  assert.is(due.next(1_600), 2_000);
  assert.is(due.next(2_000), 5_000);
  assert.is(due.next(10_000), null);
});

test.run();
