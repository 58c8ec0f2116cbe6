import { Fifo } from './fifo.js';

/**
 * Ready deliveries of one lane, queued per subscriber and served round-robin.
 * A subscriber holds at most a quarter of the lane's slots while others have
 * deliveries waiting, so that a few hanging or slow subscribers cannot take
 * every slot. Alone, it may use all but a quarter: that quarter stays free for
 * whoever comes next.
 */
export class FairQueue<T> {
  private readonly queues = new Map<string, Fifo<T>>();
  private readonly turns = new Fifo<string>();
  private readonly running = new Map<string, number>();
  private readonly share: number;
  private queued = 0;
  private runningTotal = 0;

  constructor(private readonly limit: number) {
    this.share = Math.max(1, Math.ceil(limit / 4));
  }

  get length(): number {
    return this.queued;
  }

  push(key: string, delivery: T): void {
    let queue = this.queues.get(key);
    if (!queue) {
      queue = new Fifo();
      this.queues.set(key, queue);
      this.turns.push(key);
    }
    queue.push(delivery);
    this.queued += 1;
  }

  /** The next delivery whose subscriber may take a slot now, or undefined; the caller then runs it. */
  take(): { key: string; delivery: T } | undefined {
    for (let tries = this.turns.length; tries > 0; tries -= 1) {
      const key = this.turns.shift()!;
      const queue = this.queues.get(key)!;
      const running = this.running.get(key) ?? 0;
      const alone = this.queues.size === 1;
      if (running >= this.share && !(alone && this.runningTotal < this.limit - this.share)) {
        this.turns.push(key);
        continue;
      }
      const delivery = queue.shift()!;
      this.queued -= 1;
      if (queue.length > 0) this.turns.push(key);
      else this.queues.delete(key);
      this.running.set(key, running + 1);
      this.runningTotal += 1;
      return { key, delivery };
    }
    return undefined;
  }

  finished(key: string): void {
    this.runningTotal -= 1;
    const left = (this.running.get(key) ?? 1) - 1;
    if (left > 0) this.running.set(key, left);
    else this.running.delete(key);
  }
}
