import { mkdirSync, readFileSync, rmSync, writeFileSync, renameSync, chmodSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { usageError } from './errors.js';

const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface SavedSession {
  url: string;
  token: string;
  email: string;
}

function configDir(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'platform');
}

const sessionFile = () => join(configDir(), 'session.json');

export function readSession(): SavedSession | null {
  try {
    const parsed = JSON.parse(readFileSync(sessionFile(), 'utf8')) as Partial<SavedSession>;
    if (typeof parsed.url === 'string' && typeof parsed.token === 'string' && typeof parsed.email === 'string') {
      return parsed as SavedSession;
    }
  } catch {
    // No session yet, or an unreadable one: treat as logged out.
  }
  return null;
}

/** Written 0600 inside a 0700 directory: the token is a credential. */
export function saveSession(session: SavedSession): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const file = sessionFile();
  writeFileSync(`${file}.tmp`, JSON.stringify(session, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export function clearSession(): void {
  rmSync(sessionFile(), { force: true });
}

/** --url, then PLATFORM_URL, then the URL of the saved session, then the default; a malformed one is a usage error. */
export function resolveUrl(flag: string | undefined): string {
  const [source, value] =
    flag !== undefined ? ['--url', flag] : process.env.PLATFORM_URL ? ['PLATFORM_URL', process.env.PLATFORM_URL] : ['the saved session', readSession()?.url ?? DEFAULT_URL];
  let parsed: URL | null = null;
  try {
    parsed = new URL(value);
  } catch {
    // reported below
  }
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.search || parsed.hash) {
    throw usageError(`${source} must be an http(s) URL such as http://127.0.0.1:8080, not ${JSON.stringify(value)}`);
  }
  return value.replace(/\/+$/, '');
}

/**
 * PLATFORM_TOKEN, else the saved token, but only for the URL it was issued by:
 * a token is never sent to another server.
 */
export function resolveToken(url: string): string | null {
  if (process.env.PLATFORM_TOKEN) return process.env.PLATFORM_TOKEN;
  const session = readSession();
  return session && session.url === url ? session.token : null;
}
