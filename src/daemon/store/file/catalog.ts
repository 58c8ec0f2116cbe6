import { join } from 'node:path';
import { extensionExists, type AuditFilter, type CatalogChange, type CatalogStore } from '../../catalog/store.js';
import type { AuditRecord, StoredExtension } from '../../catalog/types.js';
import { notFound } from '../../errors.js';
import { ensurePrivateDir } from '../../files.js';
import { AuditTrail } from './audit-trail.js';
import { createShard, openShards, type Shard } from './catalog-shards.js';

/**
 * One JSON file per extension under `<data-dir>/catalog/` and the audit trail
 * in `<data-dir>/audit.log`. A change writes its extension's file and its
 * audit line concurrently and resolves once both are on disk. The daemon
 * owns the directory, and `update` calls `change` and swaps its result in
 * within one synchronous step, so no lock is needed.
 */
export class FileCatalogStore implements CatalogStore {
  private readonly shards = new Map<string, Shard>();
  /** Keys whose creation is being written, so that a concurrent duplicate is refused. */
  private readonly creating = new Set<string>();

  private constructor(
    private readonly dir: string,
    private readonly audit: AuditTrail,
  ) {}

  static async open(dataDir: string): Promise<FileCatalogStore> {
    const dir = join(dataDir, 'catalog');
    await ensurePrivateDir(dir);
    const shards = await openShards(dir);
    const store = new FileCatalogStore(dir, await AuditTrail.open(join(dataDir, 'audit.log')));
    for (const shard of shards) store.shards.set(shard.data.extension.extensionKey, shard);
    return store;
  }

  async loadAll(): Promise<StoredExtension[]> {
    return Array.from(this.shards.values(), (shard) => shard.data.extension);
  }

  async get(extensionKey: string): Promise<StoredExtension | undefined> {
    return this.shards.get(extensionKey)?.data.extension;
  }

  async create(extension: StoredExtension, record: AuditRecord): Promise<void> {
    const key = extension.extensionKey;
    if (this.shards.has(key) || this.creating.has(key)) throw extensionExists(key);
    this.creating.add(key);
    try {
      const [shard, audited] = await Promise.allSettled([createShard(this.dir, extension), this.audit.append(record)]);
      // A file on disk is part of the catalog, even if its audit line failed.
      if (shard.status === 'rejected') throw shard.reason;
      this.shards.set(key, shard.value);
      if (audited.status === 'rejected') throw audited.reason;
    } finally {
      this.creating.delete(key);
    }
  }

  async update(extensionKey: string, change: (current: StoredExtension) => CatalogChange | null): Promise<StoredExtension> {
    const shard = this.shards.get(extensionKey);
    if (!shard) throw notFound(`extension ${extensionKey} not found`);
    const outcome = change(shard.data.extension);
    if (!outcome) return shard.data.extension;
    // A failed write reverts the shard to what is on disk (Collection); the audit line may stay (decisions.md).
    await Promise.all([
      shard.update((document) => {
        document.extension = outcome.next;
      }),
      this.audit.append(outcome.record),
    ]);
    return outcome.next;
  }

  auditTrail(filter: AuditFilter): Promise<AuditRecord[]> {
    return this.audit.read(filter);
  }

  /** The data directory is this daemon's alone: nobody else changes it. */
  onChange(): void {}

  async close(): Promise<void> {
    await Promise.all(Array.from(this.shards.values(), (shard) => shard.flush()));
    await this.audit.close();
  }
}
