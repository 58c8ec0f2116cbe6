/** Batches of one kind on their way at once: a caller waits for a batch to return only when this many are. */
const IN_FLIGHT = 2;

/**
 * A read by key that many requests make (every authenticated request reads
 * its user and its token's revocation, every publish its workspace and
 * subscriptions), sent for many callers at once: the keys asked for in one
 * turn of the event loop, or while IN_FLIGHT reads of the kind run, go
 * together in the next, one round trip for all of them. Each caller's read
 * is sent after it asked, so it sees every commit that came before its call,
 * as a read of its own would. Bounded by the requests in flight.
 */
export class BatchedRead<K, V> {
  private queued = new Map<string, { key: K; callers: Array<{ resolve: (value: V | undefined) => void; reject: (error: unknown) => void }> }>();
  private inFlight = 0;
  private scheduled = false;

  constructor(
    /** Equal keys are read once per batch. */
    private readonly keyText: (key: K) => string,
    /** What the database holds for these keys, by keyText; a key absent from the map has nothing. */
    private readonly readMany: (keys: K[]) => Promise<Map<string, V>>,
  ) {}

  read(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const text = this.keyText(key);
      const entry = this.queued.get(text);
      if (entry) entry.callers.push({ resolve, reject });
      else this.queued.set(text, { key, callers: [{ resolve, reject }] });
      if (!this.scheduled && this.inFlight < IN_FLIGHT) {
        // After the other callbacks of this turn (requests that arrived together), not one round trip later.
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          void this.readQueued();
        });
      }
    });
  }

  private async readQueued(): Promise<void> {
    this.inFlight += 1;
    while (this.queued.size > 0) {
      const batch = this.queued;
      this.queued = new Map();
      try {
        const found = await this.readMany([...batch.values()].map((entry) => entry.key));
        for (const [text, { callers }] of batch) for (const caller of callers) caller.resolve(found.get(text));
      } catch (error) {
        for (const { callers } of batch.values()) for (const caller of callers) caller.reject(error);
      }
    }
    this.inFlight -= 1;
  }
}
