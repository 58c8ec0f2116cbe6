import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { keyId } from '../secrets/box.js';

/**
 * A backup's manifest is signed with HMAC-SHA256 under a key derived (HKDF)
 * from the daemon's current master key. The manifest lists every file with
 * its sha256, so the signature covers every byte of the archive: whoever
 * changes a file and recomputes the checksums cannot sign again without the
 * master key.
 */
const INFO = 'platform backup manifest signing key';

export interface SignedFields {
  /** The master key it was signed under, named (see keyId): tells "another key" from "altered". */
  keyId: string;
  /** Hex HMAC-SHA256 of the manifest without this field. */
  hmac: string;
}

export type SignatureCheck = 'valid' | 'unsigned' | 'other-key' | 'invalid';

const signingKey = (masterKey: Buffer) => Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), INFO, 32));

/** What the HMAC covers: the manifest's JSON without its hmac, keys in the order written. */
function signedBytes(manifest: object): Buffer {
  const { hmac: _hmac, ...signed } = manifest as { hmac?: unknown };
  return Buffer.from(JSON.stringify(signed));
}

const hmacOf = (masterKey: Buffer, manifest: object) => createHmac('sha256', signingKey(masterKey)).update(signedBytes(manifest)).digest();

export function signManifest<M extends object>(manifest: M, masterKey: Buffer): M & SignedFields {
  const named = { ...manifest, keyId: keyId(masterKey) };
  return { ...named, hmac: hmacOf(masterKey, named).toString('hex') };
}

/** Checks a parsed manifest against the keys of a keyring (any of them: an archive made before a rotation verifies too). */
export function checkManifestSignature(manifest: Partial<SignedFields>, masterKeys: readonly Buffer[]): SignatureCheck {
  if (typeof manifest.hmac !== 'string' || typeof manifest.keyId !== 'string') return 'unsigned';
  const key = masterKeys.find((candidate) => keyId(candidate) === manifest.keyId);
  if (!key) return 'other-key';
  const given = Buffer.from(manifest.hmac, 'hex');
  const expected = hmacOf(key, manifest);
  return given.length === expected.length && timingSafeEqual(given, expected) ? 'valid' : 'invalid';
}
