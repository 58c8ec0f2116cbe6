import { join } from 'node:path';
import type { ExtensionConfigStore, StoredField } from '../../extension-config/store.js';
import { Collection } from '../collection.js';

interface ConfigDocument {
  schemaVersion: 1;
  extensions: Array<{ extensionKey: string; fields: StoredField[] }>;
}

/**
 * extension-config.json: every extension's fields in one document. One daemon
 * owns the data directory, and `update` calls `change` and swaps its result in
 * within one synchronous step, so no lock is needed. Fields are replaced,
 * never changed in place: what a reader was given stays as it was.
 */
export class FileExtensionConfigStore implements ExtensionConfigStore {
  private constructor(private readonly collection: Collection<ConfigDocument>) {}

  static async open(dataDir: string): Promise<FileExtensionConfigStore> {
    const collection = await Collection.open<ConfigDocument>({
      file: join(dataDir, 'extension-config.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, extensions: [] }),
    });
    return new FileExtensionConfigStore(collection);
  }

  async loadAll(): Promise<Map<string, StoredField[]>> {
    return new Map(this.collection.data.extensions.map((entry) => [entry.extensionKey, entry.fields]));
  }

  async fields(extensionKey: string): Promise<StoredField[]> {
    return this.entry(extensionKey)?.fields ?? [];
  }

  update(extensionKey: string, change: (current: readonly StoredField[]) => StoredField[] | null): Promise<StoredField[]> {
    return this.collection.update((data) => {
      const entry = this.entry(extensionKey);
      const current = entry?.fields ?? [];
      const fields = change(current);
      if (!fields) return current;
      if (entry) entry.fields = fields;
      else data.extensions.push({ extensionKey, fields });
      return fields;
    });
  }

  /** The data directory is this daemon's alone: nobody else changes it. */
  onChange(): void {}

  close(): Promise<void> {
    return this.collection.flush();
  }

  private entry(extensionKey: string): ConfigDocument['extensions'][number] | undefined {
    return this.collection.data.extensions.find((candidate) => candidate.extensionKey === extensionKey);
  }
}
