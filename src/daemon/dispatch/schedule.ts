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
