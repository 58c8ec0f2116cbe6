import { randomUUID } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** A probe result is reused this long: a public endpoint must not cost an fsync per call. */
const PROBE_REUSE_MS = 1_000;

const REASONS: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the data directory is on a read-only file system',
  EACCES: 'the data directory is not writable (permission denied)',
  EPERM: 'the data directory is not writable (permission denied)',
};

/**
 * Ready: storage takes writes (a small file is written, synced and removed in
 * the data directory; on PostgreSQL the database also answers a query) and the
 * dispatcher runs. Probes are shared: concurrent callers wait for the same one,
 * and a result is reused for a second.
 */
export class Readiness {
  private probing: Promise<string | null> | null = null;
  private probedAt = Number.NEGATIVE_INFINITY;
  private storageFault: string | null = null;

  constructor(
    private readonly dataDir: string,
    private readonly dispatcher: { readonly isRunning: boolean },
    /** Why the database cannot serve now; null on files. */
    private readonly databaseFault: (() => Promise<string | null>) | null = null,
  ) {}

  /** Why the daemon is not ready; empty when it is. */
  async reasons(): Promise<string[]> {
    const reasons: string[] = [];
    const storage = await this.storage();
    if (storage !== null) reasons.push(storage);
    if (!this.dispatcher.isRunning) reasons.push('the dispatcher is not running');
    return reasons;
  }

  private storage(): Promise<string | null> {
    if (performance.now() - this.probedAt < PROBE_REUSE_MS) return Promise.resolve(this.storageFault);
    this.probing ??= this.probe().then((fault) => {
      this.storageFault = fault;
      this.probedAt = performance.now();
      this.probing = null;
      return fault;
    });
    return this.probing;
  }

  private async probe(): Promise<string | null> {
    const [dataDir, database] = await Promise.all([this.probeDataDir(), this.databaseFault?.() ?? null]);
    return [dataDir, database].filter((fault) => fault !== null).join('; ') || null;
  }

  private async probeDataDir(): Promise<string | null> {
    const file = join(this.dataDir, `.ready-${randomUUID()}`);
    try {
      const handle = await open(file, 'w', 0o600);
      try {
        await handle.writeFile('ready\n');
        await handle.datasync();
      } finally {
        await handle.close();
      }
      return null;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
      return REASONS[code] ?? `storage refused a write (${code})`;
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }
}
