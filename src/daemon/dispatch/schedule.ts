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
