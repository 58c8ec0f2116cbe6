/**
 * A read by key that many requests make (every authenticated request reads
 * its user and its token's revocation, every publish its workspace and
 * subscriptions), sent for many callers at once: the keys asked for while one
 * read runs go together in the next, one round trip for all of them. When the
 * database is idle nobody waits, and each caller's read is sent after it
 * asked, so it sees every commit that came before its call, as a read of its
 * own would. Bounded by the requests in flight.
 */
export class BatchedRead<K, V> {
  private queued = new Map<string, { key: K; callers: Array<{ resolve: (value: V | undefined) => void; reject: (error: unknown) => void }> }>();
  private running: Promise<void> | null = null;

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
      this.running ??= this.readQueued();
    });
  }

  private async readQueued(): Promise<void> {
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
    this.running = null;
  }
}
