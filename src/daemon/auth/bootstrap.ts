import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import * as v from 'valibot';
import { StartupError } from '../errors.js';
import { writeFileDurably } from '../store/files.js';
import type { AuthService } from './service.js';
import { Email, Password } from './schemas.js';

const INITIAL_PASSWORD_FILE = 'initial-admin-password';

export interface FirstAdmin {
  email: string;
  /** Set only when the password was generated; shown once, and kept in the data directory. */
  generatedPassword: string | null;
  passwordFile: string | null;
}

/**
 * On a data directory without users, creates the first ADMIN: from the given
 * credentials (environment variables or `platform init`), or admin@localhost
 * with a random password written to <data-dir>/initial-admin-password.
 */
export async function ensureFirstAdmin(
  auth: AuthService,
  dataDir: string,
  credentials: { email: string; password: string } | null,
): Promise<FirstAdmin | null> {
  if (auth.users.count > 0) return null;
  if (credentials) {
    const email = v.safeParse(Email, credentials.email);
    if (!email.success) throw new StartupError(`PLATFORM_ADMIN_EMAIL ${email.issues[0].message}`);
    const password = v.safeParse(Password, credentials.password);
    if (!password.success) throw new StartupError(`PLATFORM_ADMIN_PASSWORD ${password.issues[0].message}`);
    await auth.createUser({ email: email.output, fullName: 'Administrator', password: password.output, roles: ['ADMIN'] });
    return { email: email.output, generatedPassword: null, passwordFile: null };
  }
  const generatedPassword = randomBytes(18).toString('base64url');
  const passwordFile = join(dataDir, INITIAL_PASSWORD_FILE);
  await writeFileDurably(passwordFile, `${generatedPassword}\n`);
  await auth.createUser({ email: 'admin@localhost', fullName: 'Administrator', password: generatedPassword, roles: ['ADMIN'] });
  return { email: 'admin@localhost', generatedPassword, passwordFile };
}
