import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { StartupError } from '../errors.js';
import { isMissing, writeFileDurably } from '../files.js';

/**
 * Reads a random secret kept in the data directory (base64, mode 0600),
 * generating it on first start.
 */
export async function readOrCreateSecret(file: string, bytes: number): Promise<Buffer> {
  try {
    const secret = Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
    if (secret.length < bytes) throw new StartupError(`secret file ${file} is shorter than ${bytes} bytes`);
    return secret;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  const secret = randomBytes(bytes);
  await writeFileDurably(file, secret.toString('base64') + '\n');
  return secret;
}
