import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, linkSync, mkdirSync, readdirSync, statSync, type Dirent } from 'node:fs';
import { open, readdir, rename, rm, truncate, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Readable } from 'node:stream';
import { PLATFORM_VERSION } from '../version.js';
import { signManifest, type SignedFields } from './signature.js';

/** The layout of the data directory an archive holds; a restore refuses anything newer. */
export const BACKUP_SCHEMA_VERSION = 1;
export const MANIFEST_FILE = 'manifest.json';
/** Files that decrypt secrets (master.key) and sign sessions (jwt-secret): only with --include-keys. */
export const KEY_FILES = ['master.key', 'jwt-secret'];

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  format: 'platform-backup';
  schemaVersion: number;
  platformVersion: string;
  createdAt: string;
  includesKeys: boolean;
  files: ManifestFile[];
}

/** As written: signed (archives of earlier versions are not, and are refused). */
export type SignedManifest = Manifest & SignedFields;

const SNAPSHOT_PREFIX = '.backup-';

/**
 * Not state: the lock, temp files of atomic writes, readiness probes, other
 * snapshots in progress, and the first admin's password shown once (it is a
 * plaintext password; the user store has its hash).
 */
function isState(name: string): boolean {
  return !(
    name === 'daemon.lock' ||
    name === 'initial-admin-password' ||
    name.endsWith('.tmp') ||
    name.startsWith(SNAPSHOT_PREFIX) ||
    name.startsWith('.ready-')
  );
}

/** Append-only logs (events, outbox, audit, chat) grow in place; everything else is replaced by rename. */
const isAppendLog = (name: string) => name.endsWith('.log');

/** Snapshots left by a daemon that stopped mid-backup. Called at start, under the data directory's lock. */
export async function removeStaleSnapshots(dataDir: string): Promise<void> {
  for (const name of await readdir(dataDir)) {
    if (name.startsWith(SNAPSHOT_PREFIX)) await rm(join(dataDir, name), { recursive: true, force: true });
  }
}

/**
 * A consistent archive of a running daemon's data directory, as a gzipped tar stream.
 *
 * The snapshot point is one synchronous pass over the directory: no request
 * runs during it, so every write acknowledged before it is in the files it
 * sees. Each file is hard-linked into a snapshot directory: stores replace
 * their JSON files and rewrite their logs by rename, which leaves the linked
 * inode as it was. Append logs keep growing in place, so for them only the
 * bytes present at the snapshot point are copied, cut back to the last whole
 * record. Writes go on meanwhile; the snapshot directory is removed at the end.
 * The manifest is signed under the current master key (see signature.ts).
 */
export async function streamBackup(
  dataDir: string,
  options: { includeKeys: boolean; masterKey: Buffer },
): Promise<{ stream: Readable; done: Promise<void> }> {
  const snapshotDir = join(dataDir, `${SNAPSHOT_PREFIX}${randomUUID()}`);
  try {
    const logs = linkState(dataDir, snapshotDir, options.includeKeys);
    for (const [path, size] of logs) await keepWholeRecords(join(snapshotDir, path), size);
    const files = await describeFiles(snapshotDir);
    const manifest: SignedManifest = signManifest(
      {
        format: 'platform-backup',
        schemaVersion: BACKUP_SCHEMA_VERSION,
        platformVersion: PLATFORM_VERSION,
        createdAt: new Date().toISOString(),
        includesKeys: options.includeKeys,
        files,
      } satisfies Manifest,
      options.masterKey,
    );
    await writeFile(join(snapshotDir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
    // Loaded when a backup is taken, the only time a daemon needs tar.
    const { create: createTar } = await import('tar');
    const pack = createTar({ gzip: true, cwd: snapshotDir, portable: true }, [MANIFEST_FILE, ...files.map((file) => file.path)]);
    const stream = Readable.from(pack);
    const done = new Promise<void>((resolve) => {
      stream.once('end', resolve);
      stream.once('error', resolve);
      stream.once('close', resolve);
    }).finally(() => rm(snapshotDir, { recursive: true, force: true }));
    return { stream, done };
  } catch (error) {
    await rm(snapshotDir, { recursive: true, force: true });
    throw error;
  }
}

/** Synchronous on purpose (see streamBackup). Returns the append logs and their sizes at the snapshot point. */
function linkState(dataDir: string, snapshotDir: string, includeKeys: boolean): Map<string, number> {
  const logs = new Map<string, number>();
  mkdirSync(snapshotDir, { mode: 0o700 });
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }) as Dirent[]) {
      if (!isState(entry.name)) continue;
      const source = join(dir, entry.name);
      const path = relative(dataDir, source);
      if (dir === dataDir && !includeKeys && KEY_FILES.includes(entry.name)) continue;
      if (entry.isDirectory()) {
        mkdirSync(join(snapshotDir, path), { mode: 0o700 });
        walk(source);
      } else if (entry.isFile()) {
        linkSync(source, join(snapshotDir, path));
        if (isAppendLog(entry.name)) logs.set(path, statSync(source).size);
      }
    }
  };
  walk(dataDir);
  return logs;
}

/**
 * Replaces the link to a live log by a copy of its first `size` bytes, cut
 * after the last newline: a group being written at the snapshot point was not
 * acknowledged yet, and only whole records go into the archive.
 */
async function keepWholeRecords(link: string, size: number): Promise<void> {
  const copy = `${link}.copy`;
  const output = await open(copy, 'w', 0o600);
  let written = 0;
  let wholeUpTo = 0;
  try {
    if (size > 0) {
      for await (const chunk of createReadStream(link, { start: 0, end: size - 1 }) as AsyncIterable<Buffer>) {
        await output.write(chunk);
        const newline = chunk.lastIndexOf(0x0a);
        if (newline >= 0) wholeUpTo = written + newline + 1;
        written += chunk.length;
      }
    }
  } finally {
    await output.close();
  }
  await truncate(copy, wholeUpTo);
  await rename(copy, link);
}

async function describeFiles(snapshotDir: string): Promise<ManifestFile[]> {
  const files: ManifestFile[] = [];
  const walk = async (dir: string) => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else files.push({ path: relative(snapshotDir, full).split('\\').join('/'), ...(await digestFile(full)) });
    }
  };
  await walk(snapshotDir);
  return files;
}

export async function digestFile(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest('hex') };
}
