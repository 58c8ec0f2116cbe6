import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { extract, list, type ReadEntry } from 'tar';
import { keyId, MASTER_KEY_FILE, SecretBox } from '../secrets/box.js';
import { ensurePrivateDir, isMissing } from '../files.js';
import { checkManifestSignature } from './signature.js';
import { BACKUP_SCHEMA_VERSION, MANIFEST_FILE, digestFile, type Manifest, type ManifestFile, type SignedManifest } from './snapshot.js';

/** A refused archive or target; the message is for the operator, as is. */
export class RestoreError extends Error {
  override name = 'RestoreError';
}

export interface Progress {
  (done: number, total: number, what: string): void;
}

/**
 * The master key the restored daemon will use, given from outside the
 * archive: a master.key inside it cannot vouch for the archive, since whoever
 * altered the archive could have replaced it and signed with it.
 */
export interface TrustedKeyring {
  box: SecretBox;
  /** Where it came from, for messages: PLATFORM_MASTER_KEY or the file given. */
  source: string;
  /**
   * The restored daemon reads its key from the data directory (no
   * PLATFORM_MASTER_KEY): a master.key in the archive must then be this
   * keyring, and without one this keyring is written there.
   */
  inDataDir: boolean;
}

const SAFE_PATH = /^(?!\/)(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9._\-/]+$/;

function parseManifest(text: string, file: string): Manifest {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(text) as Manifest;
  } catch {
    throw new RestoreError(`${file}: the manifest is not valid JSON`);
  }
  if (manifest?.format !== 'platform-backup' || !Array.isArray(manifest.files) || typeof manifest.schemaVersion !== 'number') {
    throw new RestoreError(`${file} is not a platform backup (its manifest is not one)`);
  }
  if (manifest.schemaVersion > BACKUP_SCHEMA_VERSION) {
    throw new RestoreError(
      `${file} holds data of schema version ${manifest.schemaVersion} (platform ${manifest.platformVersion}); ` +
        `this platform reads up to ${BACKUP_SCHEMA_VERSION}: upgrade platform before restoring it`,
    );
  }
  for (const entry of manifest.files) {
    if (typeof entry?.path !== 'string' || !SAFE_PATH.test(entry.path) || entry.path === MANIFEST_FILE) {
      throw new RestoreError(`${file}: the manifest names an unsafe path`);
    }
  }
  return manifest;
}

/**
 * Reads the whole archive once, hashing every file, and checks it against its
 * manifest: every file listed is there with its size and sha256, and nothing
 * else is. Writes nothing.
 */
export async function verifyArchive(file: string, progress?: Progress): Promise<Manifest> {
  const seen = new Map<string, { size: number; sha256: string }>();
  const unexpected: string[] = [];
  let manifestText: string | null = null;
  let bytes = 0;
  const total = await stat(file).then(
    (info) => info.size,
    (error) => {
      throw new RestoreError(isMissing(error) ? `${file} does not exist` : `cannot read ${file}: ${(error as Error).message}`);
    },
  );
  try {
    await list({
      file,
      strict: true,
      onReadEntry: (entry: ReadEntry) => {
        const hash = createHash('sha256');
        const chunks: Buffer[] = [];
        let size = 0;
        const isManifest = entry.path === MANIFEST_FILE;
        entry.on('data', (chunk: Buffer) => {
          size += chunk.length;
          bytes += chunk.length;
          hash.update(chunk);
          if (isManifest && size <= 16 * 1024 * 1024) chunks.push(chunk);
        });
        entry.on('end', () => {
          if (isManifest) manifestText = Buffer.concat(chunks).toString('utf8');
          else if (entry.type === 'File') seen.set(entry.path, { size, sha256: hash.digest('hex') });
          else if (entry.type !== 'Directory') unexpected.push(entry.path);
          progress?.(Math.min(bytes, total), total, 'verifying');
        });
      },
    });
  } catch (error) {
    throw new RestoreError(`${file} is not a readable platform backup archive (${(error as Error).message})`);
  }
  if (manifestText === null) throw new RestoreError(`${file} is not a platform backup (no ${MANIFEST_FILE} in it)`);
  const manifest = parseManifest(manifestText, file);
  const listed = new Set(manifest.files.map((entry) => entry.path));
  for (const entry of manifest.files) {
    const found = seen.get(entry.path);
    if (!found) throw new RestoreError(`${file} is incomplete: ${entry.path} is missing (truncated archive?)`);
    if (found.size !== entry.size || found.sha256 !== entry.sha256) {
      throw new RestoreError(`${file} has been altered: ${entry.path} does not match its checksum`);
    }
  }
  const extra = [...seen.keys(), ...unexpected].filter((path) => !listed.has(path));
  if (extra.length > 0) throw new RestoreError(`${file} has been altered: ${extra[0]} is not in its manifest`);
  return manifest;
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (error) {
    if (isMissing(error)) return true;
    throw new RestoreError(`cannot read ${dir}: ${(error as Error).message}`);
  }
}

/** Refuses a manifest not signed under a key of the trusted keyring. */
function assertSigned(manifest: Manifest, trusted: TrustedKeyring, file: string): void {
  const signed = manifest as Partial<SignedManifest>;
  switch (checkManifestSignature(signed, trusted.box.keys)) {
    case 'valid':
      return;
    case 'unsigned':
      throw new RestoreError(`${file} is not signed (made before backups were signed, or its signature was removed): it cannot be authenticated and is not restored`);
    case 'other-key':
      throw new RestoreError(
        `${file} was made by a daemon with another master key (key ${String(signed.keyId)}; ${trusted.source} holds ${trusted.box.keys.map(keyId).join(', ')}): ` +
          'give the master key of the daemon that made it',
      );
    case 'invalid':
      throw new RestoreError(`${file} has been altered: its manifest does not match its signature`);
  }
}

/**
 * Restores an archive into an empty (or missing) data directory, offline.
 * Everything is verified (checksums, and the manifest's signature under the
 * trusted keyring), then extracted into a staging directory beside the
 * target and checked again; only then is it moved into place. A refusal
 * leaves the target as it was.
 */
export async function restoreArchive(file: string, dataDir: string, trusted: TrustedKeyring, progress?: Progress): Promise<Manifest> {
  if (!(await isEmptyDir(dataDir))) {
    throw new RestoreError(`${dataDir} is not empty; restore only into an empty or new directory`);
  }
  const manifest = await verifyArchive(file, progress);
  assertSigned(manifest, trusted, file);
  await ensurePrivateDir(dirname(dataDir), 'folder of the data directory').catch((error: unknown) => {
    throw new RestoreError((error as Error).message);
  });
  const staging = await mkdtemp(join(dirname(dataDir), `.${basename(dataDir)}.restore-`));
  try {
    // The file is read again: should it have changed since it was verified, only what the signed manifest lists comes out.
    const listed = new Set(manifest.files.map((entry) => entry.path));
    const isListed = (path: string, entry: { type?: string }) => entry.type === 'Directory' || (entry.type === 'File' && listed.has(path));
    await extract({ file, cwd: staging, strict: true, preservePaths: false, filter: (path, entry) => isListed(path, entry as { type?: string }) });
    let done = 0;
    for (const entry of manifest.files) {
      await checkExtracted(staging, entry, file);
      progress?.((done += 1), manifest.files.length, 'restoring');
    }
    if (trusted.inDataDir) await placeKeyring(staging, trusted, file);
    await moveInto(staging, dataDir);
  } catch (error) {
    throw error instanceof RestoreError ? error : new RestoreError(`restoring ${file} failed: ${(error as Error).message}`);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return manifest;
}

/** The restored daemon will read its key from master.key: it must be the keyring the archive was checked with. */
async function placeKeyring(staging: string, trusted: TrustedKeyring, file: string): Promise<void> {
  let archived: SecretBox;
  try {
    archived = await SecretBox.fromKeyringFile(join(staging, MASTER_KEY_FILE));
  } catch (error) {
    if (!isMissing(error)) throw new RestoreError(`${file} holds a master.key that cannot be read: ${(error as Error).message}`);
    await trusted.box.saveKeyring(staging);
    return;
  }
  if (!archived.sameKeysAs(trusted.box)) {
    throw new RestoreError(`${file} holds a master.key that differs from the one given (${trusted.source}); nothing was restored`);
  }
}

/** The archive could have changed since it was verified: what was extracted is checked too. */
async function checkExtracted(staging: string, entry: ManifestFile, file: string): Promise<void> {
  const found = await digestFile(join(staging, entry.path));
  if (found.size !== entry.size || found.sha256 !== entry.sha256) {
    throw new RestoreError(`${file} has been altered: ${entry.path} does not match its checksum`);
  }
}

async function moveInto(staging: string, dataDir: string): Promise<void> {
  try {
    await rmdir(dataDir);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  await rename(staging, dataDir);
  await chmod(dataDir, 0o700);
}
