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

/** Opens one extension's shard (its file must exist): to read it at start, or to change it. */
export async function openShard(dir: string, extensionKey: string): Promise<Shard> {
  const file = shardFile(dir, extensionKey);
  const shard = await Collection.open<ExtensionDocument>({
    file,
    schemaVersion: SCHEMA_VERSION,
    // Never used: the file was listed, and the data directory is locked.
    create: () => ({ schemaVersion: SCHEMA_VERSION, extension: null as unknown as StoredExtension }),
  });
  const extension: unknown = shard.data.extension;
  if (!isPlainObject(extension) || extension.extensionKey !== extensionKey || !Array.isArray(extension.versions)) {
    throw new StartupError(
      `data file ${file} is not the catalog entry of extension ${extensionKey}; the daemon will not start and has not modified it`,
    );
  }
  return shard;
}

/**
 * Every extension of the directory (which must exist), read through its
 * shard, which is then let go: a catalog of 10,000 extensions would
 * otherwise keep 10,000 open documents (about 4 MB) for the few that change.
 */
export async function readShards(dir: string): Promise<StoredExtension[]> {
  const extensions: StoredExtension[] = [];
  for (const name of (await readdir(dir)).sort()) {
    const key = keyOfShard(name);
    if (key) extensions.push((await openShard(dir, key)).data.extension);
  }
  return extensions;
}

/** Writes the new extension's file durably and returns its shard. */
export function createShard(dir: string, extension: StoredExtension): Promise<Shard> {
  return Collection.open<ExtensionDocument>({
    file: shardFile(dir, extension.extensionKey),
    schemaVersion: SCHEMA_VERSION,
    create: () => ({ schemaVersion: SCHEMA_VERSION, extension }),
  });
}
