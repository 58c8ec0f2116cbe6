import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { DomainError, StartupError } from '../errors.js';
import { isMissing, writeFileDurably } from '../files.js';
import type { AuthService } from './service.js';
import { Email, NewPassword } from '../../contract/schemas.js';

const INITIAL_PASSWORD_FILE = 'initial-admin-password';
const GENERATED_ADMIN = 'admin@localhost';

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
  if ((await auth.users.count()) > 0) return null;
  if (credentials) {
    const email = v.safeParse(Email, credentials.email);
    if (!email.success) throw new StartupError(`PLATFORM_ADMIN_EMAIL ${email.issues[0].message}`);
    const password = v.safeParse(NewPassword, credentials.password);
    if (!password.success) throw new StartupError(`PLATFORM_ADMIN_PASSWORD ${password.issues[0].message}`);
    if (!(await createdUnlessTaken(auth, email.output, password.output))) return null;
    return { email: email.output, generatedPassword: null, passwordFile: null };
  }
  const generatedPassword = randomBytes(18).toString('base64url');
  const passwordFile = join(dataDir, INITIAL_PASSWORD_FILE);
  await writeFileDurably(passwordFile, `${generatedPassword}\n`);
  if (!(await createdUnlessTaken(auth, GENERATED_ADMIN, generatedPassword))) {
    await rm(passwordFile, { force: true });
    return null;
  }
  return { email: GENERATED_ADMIN, generatedPassword, passwordFile };
}

/**
 * Daemons started together on one empty database all find no users; the
 * store's unique e-mail lets one create the administrator, and to the others
 * it is then already there.
 */
async function createdUnlessTaken(auth: AuthService, email: string, password: string): Promise<boolean> {
  try {
    await auth.createUser({ email, fullName: 'Administrator', password, roles: ['ADMIN'] });
    return true;
  } catch (error) {
    if (error instanceof DomainError && error.code === 'CONFLICT') return false;
    throw error;
  }
}

/**
 * A warning when <data-dir>/initial-admin-password is left over: its password
 * no longer opens the account (another one was set, or the account is gone),
 * so the file only lies around. Null while it is still the way in.
 */
export async function leftoverPasswordFile(auth: AuthService, dataDir: string): Promise<string | null> {
  const file = join(dataDir, INITIAL_PASSWORD_FILE);
  let password: string;
  try {
    password = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
  const admin = await auth.users.findByEmail(GENERATED_ADMIN);
  if (admin && (await auth.passwordMatches(admin, password))) return null;
  return `${file} is left over: the password in it no longer works (another one was set); delete it with: rm ${file}`;
}
