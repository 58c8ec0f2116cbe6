import type { DaemonConfig } from './config.js';
import { ensureFirstAdmin, type FirstAdmin } from './auth/bootstrap.js';
import { createLogger } from './log.js';
import { openServices } from './services.js';
import { ensurePrivateDir } from './store/files.js';
import { lockDataDir } from './store/lock.js';

/**
 * `platform init`: creates the data directory and its stores and the first
 * administrator with the given credentials. Returns null when the directory
 * already has users (nothing changed). Refuses while a daemon holds the directory.
 */
export async function initDataDir(
  config: DaemonConfig,
  credentials: { email: string; password: string },
): Promise<FirstAdmin | null> {
  await ensurePrivateDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  try {
    const opened = await openServices(config, createLogger());
    try {
      return await ensureFirstAdmin(opened.services.auth, config.dataDir, credentials);
    } finally {
      await opened.close();
    }
  } finally {
    lock.release();
  }
}
