import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DaemonConfig } from '../config.js';
import { StartupError } from '../errors.js';
import { isMissing, writeFileDurably } from '../store/files.js';
import { assertPlatformDataDir, lockDataDir } from '../store/lock.js';
import { SecretBox } from './box.js';

/** The data files that hold sealed secrets. */
const FILES_WITH_SECRETS = ['workspaces.json', 'extension-config.json'];

/**
 * Re-encrypts every sealed secret of the data directory under a new master
 * key. Run with the daemon stopped (it takes the data-directory lock).
 *
 * With a key file, the keyring is written as [new, old] first, then every
 * file is re-sealed, then the keyring is cut to [new]: interrupted anywhere,
 * the daemon still opens every secret, and running the rotation again
 * finishes it. With PLATFORM_MASTER_KEY, give the new key first and the old
 * one after a comma; the files are re-sealed under the first.
 */
export async function rotateMasterKey(config: DaemonConfig): Promise<{ resealed: number }> {
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
