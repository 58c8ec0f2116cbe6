import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupError } from '../errors.js';
import { isMissing, writeFileDurably } from '../files.js';

const ALGORITHM = 'aes-256-gcm';
const PREFIX = 'enc:v1:';
export const MASTER_KEY_FILE = 'master.key';

/** Names a key without giving it away: the start of its SHA-256. */
export const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);

function decodeKey(text: string, source: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new StartupError(`${source} must hold base64 encodings of 32-byte keys`);
  return key;
}

/**
 * Encrypts secrets kept at rest (SECRET configuration values, subscription
 * signing secrets) with AES-256-GCM: a random 96-bit IV per value, the
 * authentication tag checked on every decryption. A sealed value names its
 * key: enc:v1:<key id>:<iv>:<tag>:<ciphertext>.
 *
 * The box is a keyring: it seals with the first key and opens with any of
 * them, which is what makes key rotation safe to interrupt.
 */
export class SecretBox {
  private readonly byId: Map<string, Buffer>;

  private constructor(readonly keys: readonly Buffer[]) {
    this.byId = new Map(keys.map((key) => [keyId(key), key]));
  }

  /** The key that seals new values (the first given); the others only open older ones. */
  get currentKey(): Buffer {
    return this.keys[0]!;
  }

  static fromKeys(keys: readonly Buffer[]): SecretBox {
    if (keys.length === 0 || keys.some((key) => key.length !== 32)) throw new Error('a master key is 32 bytes');
    return new SecretBox(keys);
  }

  /**
   * PLATFORM_MASTER_KEY if given (base64; a comma-separated list during a
   * rotation, the new key first), else <data-dir>/master.key (one base64 key
   * per line, the current one first), created on first start.
   */
  static async open(dataDir: string, fromEnvironment: string | null): Promise<SecretBox> {
    if (fromEnvironment) return SecretBox.fromEnvironment(fromEnvironment);
    try {
      return await SecretBox.fromKeyringFile(join(dataDir, MASTER_KEY_FILE));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    const box = new SecretBox([randomBytes(32)]);
    await box.saveKeyring(dataDir);
    return box;
  }

  /** PLATFORM_MASTER_KEY: base64 keys, comma-separated, the current one first. */
  static fromEnvironment(text: string): SecretBox {
    return new SecretBox(text.split(',').map((key) => decodeKey(key, 'PLATFORM_MASTER_KEY')));
  }

  /** A master.key file: one base64 key per line, the current one first. Rejects with ENOENT when it is missing. */
  static async fromKeyringFile(file: string): Promise<SecretBox> {
    const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line.trim() !== '');
    if (lines.length === 0) throw new StartupError(`${file} is empty`);
    return new SecretBox(lines.map((line) => decodeKey(line, file)));
  }

  /** Whether both hold the same keys in the same order. */
  sameKeysAs(other: SecretBox): boolean {
    return this.keys.length === other.keys.length && this.keys.every((key, index) => key.equals(other.keys[index]!));
  }

  static isSealed(value: unknown): value is string {
    return typeof value === 'string' && value.startsWith(PREFIX);
  }

  /** A box that seals with a fresh key and still opens everything this one can. */
  withNewKey(): SecretBox {
    return new SecretBox([randomBytes(32), ...this.keys]);
  }

  /** A box holding only the current key. */
  currentOnly(): SecretBox {
    return new SecretBox([this.currentKey]);
  }

  /** Writes the keyring to <data-dir>/master.key (mode 0600), atomically. */
  saveKeyring(dataDir: string): Promise<void> {
    return writeFileDurably(join(dataDir, MASTER_KEY_FILE), this.keys.map((key) => key.toString('base64')).join('\n') + '\n');
  }

  seal(plaintext: string): string {
    const key = this.currentKey;
    const iv = randomBytes(12);
    const cipher = createCipheriv(ALGORITHM, key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const parts = [keyId(key), iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')];
    return PREFIX + parts.join(':');
  }

  /** Throws when the value was sealed under a key this box does not hold, or was tampered with. */
  open(sealed: string): string {
    if (!SecretBox.isSealed(sealed)) throw new Error('not a sealed secret');
    const [id, iv, tag, ciphertext] = sealed.slice(PREFIX.length).split(':');
    const key = id === undefined ? undefined : this.byId.get(id);
    if (!key || iv === undefined || tag === undefined || ciphertext === undefined) {
      throw new Error('a secret is sealed under a master key this daemon does not have');
    }
    const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
  }

  /** Re-seals a value with the current key (no-op when it already is). */
  reseal(sealed: string): string {
    const [id] = sealed.slice(PREFIX.length).split(':', 1);
    return id === keyId(this.currentKey) ? sealed : this.seal(this.open(sealed));
  }
}
