import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FairQueue } from '../src/daemon/dispatch/fair-queue.js';
import { Fifo } from '../src/daemon/dispatch/fifo.js';
import { Schedule } from '../src/daemon/dispatch/schedule.js';

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

test('Schedule pops the earliest attempt first for any insertion order', () => {
  const random = seededRandom(7);
  const schedule = new Schedule<{ id: number; nextAttemptAt: number }>();
  const times: number[] = [];
  for (let id = 0; id < 500; id += 1) {
    const nextAttemptAt = Math.floor(random() * 1000);
    times.push(nextAttemptAt);
    schedule.push({ id, nextAttemptAt });
  }
  assert.is(schedule.length, 500);
  const popped: number[] = [];
  while (schedule.peek()) {
    const head = schedule.peek()!;
    const item = schedule.pop()!;
    assert.is(item, head);
    popped.push(item.nextAttemptAt);
  }
  assert.equal(popped, [...times].sort((a, b) => a - b));
  assert.is(schedule.pop(), undefined);
});

test('Schedule releases only what is due at the current time of the clock', () => {
  let now = 1_000;
  const schedule = new Schedule<{ id: string; nextAttemptAt: number }>();
  schedule.push({ id: 'late', nextAttemptAt: 5_000 });
  schedule.push({ id: 'soon', nextAttemptAt: 1_500 });
  schedule.push({ id: 'now', nextAttemptAt: 1_000 });
  const due = () => {
    const out: string[] = [];
    while ((schedule.peek()?.nextAttemptAt ?? Number.POSITIVE_INFINITY) <= now) out.push(schedule.pop()!.id);
    return out;
  };
  assert.equal(due(), ['now']);
  now = 2_000;
  assert.equal(due(), ['soon']);
  schedule.push({ id: 'retry', nextAttemptAt: 2_000 });
  assert.equal(due(), ['retry']);
  now = 10_000;
  assert.equal(due(), ['late']);
  assert.is(schedule.length, 0);
});

test.run();
