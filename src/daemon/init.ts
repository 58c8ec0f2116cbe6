import * as v from 'valibot';
import type { DaemonConfig } from './config.js';
import { NewPassword } from '../contract/schemas.js';
import { ensureFirstAdmin, type FirstAdmin } from './auth/bootstrap.js';
import { PasswordHasher } from './auth/passwords.js';
import { toPublicUser, type PublicUser } from './auth/users.js';
import { StartupError } from './errors.js';
import { createLogger } from './log.js';
import { openServices } from './services.js';
import { FileUserStore } from './store/file/users.js';
import { openDataDir } from './store/data-dir.js';
import { assertPlatformDataDir, lockDataDir } from './store/lock.js';

/**
 * `platform init`: creates the data directory and its stores and the first
 * administrator with the given credentials. Returns null when the directory
 * already has users (nothing changed). Refuses while a daemon holds the directory.
 */
export async function initDataDir(
  config: DaemonConfig,
  credentials: { email: string; password: string },
): Promise<FirstAdmin | null> {
  await openDataDir(config.dataDir, config.pluginsDir);
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

/**
 * `platform users reset-password EMAIL --data-dir D`: for a locked-out sole
 * administrator, with the daemon stopped (the lock refuses a live one). Every
 * session of the user ends, as with any password change.
 */
export async function resetPasswordOffline(config: DaemonConfig, email: string, password: string): Promise<PublicUser> {
  const checked = v.safeParse(NewPassword, password);
  if (!checked.success) throw new StartupError(`the password ${checked.issues[0].message}`);
  assertPlatformDataDir(config.dataDir);
  const lock = lockDataDir(config.dataDir);
  try {
    const users = await FileUserStore.open(config.dataDir);
    const hasher = new PasswordHasher(config.bcryptCost);
    try {
      const user = await users.findByEmail(email.trim());
      if (!user) throw new StartupError(`there is no user ${email} in ${config.dataDir}`);
      const passwordHash = await hasher.hash(password);
      const updated = await users.modify(user.id, (record) => {
        record.passwordHash = passwordHash;
        record.tokenVersion += 1;
      });
      return toPublicUser(updated);
    } finally {
      await hasher.close();
      await users.close();
    }
  } finally {
    lock.release();
  }
}
