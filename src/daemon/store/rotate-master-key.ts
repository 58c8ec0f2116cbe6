import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DaemonConfig } from '../config.js';
import { describeFault, DomainError, StartupError } from '../errors.js';
import { isMissing, writeFileDurably } from '../files.js';
import { assertPlatformDataDir, lockDataDir } from './lock.js';
import type { DatabaseSettings } from '../database-settings.js';
import type { Stores } from './stores.js';
import { MASTER_KEY_FILE, SecretBox } from '../secrets/box.js';

/*
 * `platform keys rotate`, run without a daemon. It lives in store/ because it
 * works on storage itself: it locks the data directory, rewrites the file
 * backend's data files as JSON and opens the database, as no domain code does.
 */

/** The data files that hold sealed secrets. */
const FILES_WITH_SECRETS = ['workspaces.json', 'extension-config.json'];

/** First key of the advisory lock a rotation takes (the second is the schema's hash): two rotations at once take turns. */
const ROTATION_LOCK = 0x6b657973; // "keys"

/**
 * Re-encrypts every sealed secret of the data directory (or, with a database,
 * of the database) under a new master key. Run with the daemon stopped (it
 * takes the data-directory lock).
 *
 * With a key file, the keyring is written as [new, old] first, then every
 * file is re-sealed, then the keyring is cut to [new]: interrupted anywhere,
 * the daemon still opens every secret, and running the rotation again
 * finishes it. With PLATFORM_MASTER_KEY, give the new key first and the old
 * one after a comma; the files are re-sealed under the first.
 */
export async function rotateMasterKey(config: DaemonConfig): Promise<{ resealed: number }> {
  if (config.database) return rotateInDatabase(config, config.database);
  // A mistyped --data-dir must not become a new directory with a new key and a report of success.
  assertPlatformDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  try {
    const current = await SecretBox.open(config.dataDir, config.masterKey);
    if (config.masterKey) return { resealed: await resealFiles(config.dataDir, current) };
    const next = current.withNewKey();
    await next.saveKeyring(config.dataDir);
    const resealed = await resealFiles(config.dataDir, next);
    await next.currentOnly().saveKeyring(config.dataDir);
    return { resealed };
  } finally {
    lock.release();
  }
}

/**
 * The same on PostgreSQL: the key is PLATFORM_MASTER_KEY or the data
 * directory's master.key as on files (the directory then locked, its keyring
 * written as [new, old] first and cut to [new] last), and every sealed value
 * of the database is re-sealed in one transaction, through the stores, under
 * an advisory lock. Each value's row or extension is locked as the stores lock
 * it for any change, so a change made at once on a running daemon is neither
 * lost nor left under the old key; running daemons hear of each re-sealed
 * value when the transaction commits, as of any change.
 */
async function rotateInDatabase(config: DaemonConfig, settings: DatabaseSettings): Promise<{ resealed: number }> {
  if (config.masterKey) return { resealed: await resealDatabase(settings, await SecretBox.open(config.dataDir, config.masterKey)) };
  // Never a new key where a path was mistyped: the database's secrets are sealed under the one in this file.
  if (!existsSync(join(config.dataDir, MASTER_KEY_FILE))) {
    throw new StartupError(
      `${join(config.dataDir, MASTER_KEY_FILE)} does not exist; give the data directory holding the master key with --data-dir, or the key as PLATFORM_MASTER_KEY`,
    );
  }
  const lock = lockDataDir(config.dataDir);
  try {
    const next = (await SecretBox.open(config.dataDir, null)).withNewKey();
    await next.saveKeyring(config.dataDir);
    const resealed = await resealDatabase(settings, next);
    await next.currentOnly().saveKeyring(config.dataDir);
    return { resealed };
  } finally {
    lock.release();
  }
}

async function resealDatabase(settings: DatabaseSettings, box: SecretBox): Promise<number> {
  const { openMigratedDatabase } = await import('./postgres/connect.js');
  const { inOneTransaction } = await import('./postgres/in-transaction.js');
  const { database } = await openMigratedDatabase(settings, () => undefined);
  try {
    return await inOneTransaction(database, async (stores, tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ROTATION_LOCK, settings.schema]);
      return resealStores(stores, box);
    });
  } catch (error) {
    const cause = error instanceof DomainError && error.cause instanceof Error ? error.cause : error;
    throw new StartupError(
      `re-encrypting the secrets of schema ${settings.schema} failed: ${describeFault(cause)}; none was changed (run the rotation again)`,
    );
  } finally {
    await database.close();
  }
}

/** Every sealed value the stores hold (what the data files of FILES_WITH_SECRETS hold on files), each re-read under its lock. */
async function resealStores(stores: Pick<Stores, 'workspaces' | 'extensionConfig'>, box: SecretBox): Promise<number> {
  let resealed = 0;
  const resealing = <T>(current: T): T | null => {
    const count = { value: 0 };
    const next = reseal(current, box, count);
    resealed += count.value;
    return count.value > 0 ? (next as T) : null;
  };
  for (const { workspaceId, id } of (await stores.workspaces.contents(null)).subscriptions) {
    try {
      await stores.workspaces.updateSubscription(workspaceId, id, resealing);
    } catch (error) {
      // Deleted since it was listed: nothing left to re-seal.
      if (!(error instanceof DomainError && error.code === 'NOT_FOUND')) throw error;
    }
  }
  for (const extensionKey of (await stores.extensionConfig.loadAll()).keys()) {
    await stores.extensionConfig.update(extensionKey, (fields) => resealing([...fields]));
  }
  return resealed;
}

async function resealFiles(dataDir: string, box: SecretBox): Promise<number> {
  let resealed = 0;
  for (const name of FILES_WITH_SECRETS) {
    const file = join(dataDir, name);
    let document: unknown;
    try {
      document = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      if (isMissing(error)) continue;
      throw new StartupError(`data file ${file} cannot be read as JSON; nothing was rotated in it`);
    }
    const count = { value: 0 };
    const updated = reseal(document, box, count);
    if (count.value > 0) await writeFileDurably(file, JSON.stringify(updated));
    resealed += count.value;
  }
  return resealed;
}

/** Every sealed string anywhere in the document, re-sealed with the box's current key. */
function reseal(value: unknown, box: SecretBox, count: { value: number }): unknown {
  if (SecretBox.isSealed(value)) {
    count.value += 1;
    return box.reseal(value);
  }
  if (Array.isArray(value)) return value.map((item) => reseal(item, box, count));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, reseal(item, box, count)]));
  }
  return value;
}
