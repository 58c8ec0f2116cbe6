/** Deliveries waiting for a later attempt, earliest first (binary min-heap). */
export class Schedule<T extends { nextAttemptAt: number }> {
  private heap: T[] = [];
  get length(): number {
    return this.heap.length;
  }
  peek(): T | undefined {
    return this.heap[0];
  }
  push(delivery: T): void {
    const heap = this.heap;
    heap.push(delivery);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.nextAttemptAt <= delivery.nextAttemptAt) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = delivery;
  }
  pop(): T | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.nextAttemptAt < heap[left]!.nextAttemptAt ? right : left;
      if (heap[child]!.nextAttemptAt >= last.nextAttemptAt) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = last;
    return top;
  }
}

/**
 * Times at which work falls due, earliest first: 8 bytes each in a binary
 * min-heap of numbers (no object per entry).
 */
export class DueTimes {
  private heap = new Float64Array(16);
  private length = 0;

  add(at: number): void {
    if (this.length === this.heap.length) {
      const grown = new Float64Array(this.heap.length * 2);
      grown.set(this.heap);
      this.heap = grown;
    }
    let index = this.length++;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (this.heap[parent]! <= at) break;
      this.heap[index] = this.heap[parent]!;
      index = parent;
    }
    this.heap[index] = at;
  }

  /** The earliest time after `now`, or null; those up to `now` are due (the claim at hand takes them) and go. */
  next(now: number): number | null {
    while (this.length > 0 && this.heap[0]! <= now) this.removeFirst();
    if (this.length === 0 && this.heap.length > 1024) this.heap = new Float64Array(16);
    return this.length > 0 ? this.heap[0]! : null;
  }

  private removeFirst(): void {
    const last = this.heap[--this.length]!;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      if (left >= this.length) break;
      const right = left + 1;
      const child = right < this.length && this.heap[right]! < this.heap[left]! ? right : left;
      if (this.heap[child]! >= last) break;
      this.heap[index] = this.heap[child]!;
      index = child;
    }
    this.heap[index] = last;
  }
}
