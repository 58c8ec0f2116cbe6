import { join } from 'node:path';
import { extensionExists, type AuditFilter, type CatalogChange, type CatalogStore } from '../../catalog/store.js';
import type { AuditRecord, StoredExtension } from '../../catalog/types.js';
import { notFound } from '../../errors.js';
import { ensurePrivateDir } from '../../files.js';
import { AuditTrail } from './audit-trail.js';
import { createShard, openShard, readShards, type Shard } from './catalog-shards.js';

/**
 * One JSON file per extension under `<data-dir>/catalog/` and the audit trail
 * in `<data-dir>/audit.log`. A change writes its extension's file and its
 * audit line concurrently and resolves once both are on disk. The daemon
 * owns the directory, and `update` calls `change` and swaps its result in
 * within one synchronous step, so no lock is needed.
 */
export class FileCatalogStore implements CatalogStore {
  /** Every extension as read at start, or as last stored. */
  private readonly extensions = new Map<string, StoredExtension>();
  /** The shards opened to be changed (or made): each the extension's document from then on. */
  private readonly shards = new Map<string, Shard>();
  private readonly opening = new Map<string, Promise<Shard>>();
  /** Keys whose creation is being written, so that a concurrent duplicate is refused. */
  private readonly creating = new Set<string>();

  private constructor(
    private readonly dir: string,
    private readonly audit: AuditTrail,
  ) {}

  static async open(dataDir: string): Promise<FileCatalogStore> {
    const dir = join(dataDir, 'catalog');
    await ensurePrivateDir(dir);
    const extensions = await readShards(dir);
    const store = new FileCatalogStore(dir, await AuditTrail.open(join(dataDir, 'audit.log')));
    for (const extension of extensions) store.extensions.set(extension.extensionKey, extension);
    return store;
  }

  async loadAll(): Promise<StoredExtension[]> {
    return Array.from(this.extensions.keys(), (key) => this.current(key)!);
  }

  async get(extensionKey: string): Promise<StoredExtension | undefined> {
    return this.current(extensionKey);
  }

  async create(extension: StoredExtension, record: AuditRecord): Promise<void> {
    const key = extension.extensionKey;
    if (this.extensions.has(key) || this.creating.has(key)) throw extensionExists(key);
    this.creating.add(key);
    try {
      const [shard, audited] = await Promise.allSettled([createShard(this.dir, extension), this.audit.append(record)]);
      // A file on disk is part of the catalog, even if its audit line failed.
      if (shard.status === 'rejected') throw shard.reason;
      this.shards.set(key, shard.value);
      this.extensions.set(key, extension);
      if (audited.status === 'rejected') throw audited.reason;
    } finally {
      this.creating.delete(key);
    }
  }

  async update(extensionKey: string, change: (current: StoredExtension) => CatalogChange | null): Promise<StoredExtension> {
    if (!this.extensions.has(extensionKey)) throw notFound(`extension ${extensionKey} not found`);
    const shard = await this.shardOf(extensionKey);
    // From the shard's document, in the same synchronous step as the swap below: changes at once see each other.
    const outcome = change(shard.data.extension);
    if (!outcome) return shard.data.extension;
    // A failed write reverts the shard to what is on disk (Collection); the audit line may stay (decisions.md).
    await Promise.all([
      shard.update((document) => {
        document.extension = outcome.next;
      }),
      this.audit.append(outcome.record),
    ]);
    this.extensions.set(extensionKey, outcome.next);
    return outcome.next;
  }

  /** The extension as stored: its open shard's document, else as read at start. */
  private current(extensionKey: string): StoredExtension | undefined {
    return this.shards.get(extensionKey)?.data.extension ?? this.extensions.get(extensionKey);
  }

  /** The extension's shard, opened on its first change (once, however many changes wait for it). */
  private async shardOf(extensionKey: string): Promise<Shard> {
    const open = this.shards.get(extensionKey);
    if (open) return open;
    let opening = this.opening.get(extensionKey);
    if (!opening) {
      opening = openShard(this.dir, extensionKey).finally(() => this.opening.delete(extensionKey));
      this.opening.set(extensionKey, opening);
    }
    const shard = await opening;
    this.shards.set(extensionKey, shard);
    return shard;
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
