/** How long a failed read-back after a write waits before it is tried again, and how many times it is. */
const RETRY_MS = 1_000;
const RETRIES = 60;

/**
 * A service's memory kept in step with its store around each write: after a
 * write, failed or not, the written key is read back into memory, since
 * memory must show what the store holds. A write that was made is answered as
 * made even when the read-back fails (the database lost a moment after the
 * commit): that read is tried again every RETRY_MS, RETRIES times at most, as
 * an error would tell the client that nothing changed. A daemon that stopped
 * meanwhile stops trying; a database away for longer is read back in full
 * when the change feed reconnects.
 */
export class ReadBack<K> {
  private readonly retries = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly reload: (key: K) => Promise<unknown>) {}

  /** Waits for `write`, reads `key` back, and resolves with what the write resolved with (or rejects as it did). */
  async storing<T>(key: K, write: Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await write;
    } catch (error) {
      await this.reload(key).catch(() => undefined);
      throw error;
    }
    await this.reload(key).catch(() => this.later(key, RETRIES));
    return result;
  }

  /** Stops read-backs still to be retried: the stores are about to close. */
  close(): void {
    this.closed = true;
    for (const retry of this.retries) clearTimeout(retry);
    this.retries.clear();
  }

  private later(key: K, retries: number): void {
    if (retries === 0 || this.closed) return;
    const retry = setTimeout(() => {
      this.retries.delete(retry);
      void this.reload(key).catch(() => this.later(key, retries - 1));
    }, RETRY_MS);
    retry.unref();
    this.retries.add(retry);
  }
}
