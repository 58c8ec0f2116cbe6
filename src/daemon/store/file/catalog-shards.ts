import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExtensionDocument, StoredExtension } from '../../catalog/types.js';
import { StartupError } from '../../errors.js';
import { isPlainObject, SLUG_PATTERN } from '../../../contract/schemas.js';
import { Collection } from '../collection.js';

/**
 * The catalog is sharded: one small JSON document per extension under
 * `<data-dir>/catalog/`, so that publishing a version rewrites that
 * extension's file only, whatever the size of the catalog.
 */
export type Shard = Collection<ExtensionDocument>;

const SCHEMA_VERSION = 1;
/** The extension key of a shard's file name; null for any other name (a `.tmp` left by a crash is not a shard). */
const keyOfShard = (name: string): string | null => {
  const key = name.endsWith('.json') ? name.slice(0, -'.json'.length) : '';
  return SLUG_PATTERN.test(key) ? key : null;
};

const shardFile = (dir: string, extensionKey: string) => join(dir, `${extensionKey}.json`);

/** Opens every shard of the directory (which must exist). */
export async function openShards(dir: string): Promise<Shard[]> {
  const shards: Shard[] = [];
  for (const name of (await readdir(dir)).sort()) {
    const key = keyOfShard(name);
    if (!key) continue;
    const file = join(dir, name);
    const shard = await Collection.open<ExtensionDocument>({
      file,
      schemaVersion: SCHEMA_VERSION,
      // Never used: the file was just listed, and the data directory is locked.
      create: () => ({ schemaVersion: SCHEMA_VERSION, extension: null as unknown as StoredExtension }),
    });
    const extension: unknown = shard.data.extension;
    if (!isPlainObject(extension) || extension.extensionKey !== key || !Array.isArray(extension.versions)) {
      throw new StartupError(
        `data file ${file} is not the catalog entry of extension ${key}; the daemon will not start and has not modified it`,
      );
    }
    shards.push(shard);
  }
  return shards;
}

/** Writes the new extension's file durably and returns its shard. */
export function createShard(dir: string, extension: StoredExtension): Promise<Shard> {
  return Collection.open<ExtensionDocument>({
    file: shardFile(dir, extension.extensionKey),
    schemaVersion: SCHEMA_VERSION,
    create: () => ({ schemaVersion: SCHEMA_VERSION, extension }),
  });
}
