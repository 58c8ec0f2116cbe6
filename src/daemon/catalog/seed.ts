import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isAdmin, type UserRecord } from '../auth/users.js';
import { DomainError, StartupError } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import { checkPermissions } from './permissions.js';
import { SeedFile, type SeedInput } from './schemas.js';
import type { CatalogService } from './service.js';
import { samePrecedence } from './versions.js';

// src/daemon/catalog and dist/daemon/catalog are both three levels below the package root, in a
// clone and in an installed package alike; outside the default data directory, so `rm -rf data` keeps it.
export const SEED_FILE = fileURLToPath(new URL('../../../seed/catalog.json', import.meta.url));

export interface SeedResult {
  added: string[];
  /** Already in the catalog: left exactly as they are. */
  skipped: string[];
}

/**
 * `platform serve --seed`: adds the development catalog's extensions that the
 * catalog lacks, through the same validation and domain operations as the
 * API, attributed to the first active administrator. Extensions already there
 * (seeded earlier, or published by hand under the same key) are not touched.
 * The whole file is checked before anything is written.
 */
export async function seedCatalog(
  catalog: CatalogService,
  users: { list(): Promise<UserRecord[]> },
  file = SEED_FILE,
): Promise<SeedResult> {
  const seed = await readSeed(file);
  const missing = seed.extensions.filter((extension) => !catalog.has(extension.extensionKey));
  const skipped = seed.extensions.filter((extension) => catalog.has(extension.extensionKey)).map((extension) => extension.extensionKey);
  if (missing.length === 0) return { added: [], skipped };
  const actor = (await users.list()).find((user) => user.active && isAdmin(user));
  if (!actor) throw new StartupError('cannot seed the catalog: there is no active administrator to attribute it to');
  try {
    for (const extension of missing) await loadExtension(catalog, actor, extension);
  } catch (error) {
    if (error instanceof DomainError) throw new StartupError(`seed file ${file}: ${error.message}`);
    throw error;
  }
  return { added: missing.map((extension) => extension.extensionKey), skipped };
}

/** The one start-up line of `--seed`. */
export function describeSeeding({ added, skipped }: SeedResult, file: string): string {
  const list = (keys: string[]) => (keys.length > 0 ? ` (${keys.join(', ')})` : '');
  const already = skipped.length > 0 ? `; skipped ${skipped.length} already in the catalog${list(skipped)}` : '';
  return `seed: added ${added.length} extensions from ${file}${list(added)}${already}`;
}

async function readSeed(file: string): Promise<SeedInput> {
  let seed: SeedInput;
  try {
    seed = parseOrThrow(SeedFile, JSON.parse(await readFile(file, 'utf8')));
    const keys = new Set<string>();
    seed.extensions.forEach((extension, index) => {
      if (keys.has(extension.extensionKey)) {
        throw new Error(`extensions.${index}: extension ${extension.extensionKey} appears twice`);
      }
      keys.add(extension.extensionKey);
      checkPermissions(extension.extensionKey, extension.permissions ?? []);
      extension.versions.forEach((entry, position) => {
        const earlier = extension.versions.slice(0, position).find((other) => samePrecedence(other.version, entry.version));
        if (earlier) throw new Error(`${extension.extensionKey}: version ${entry.version} appears twice (as ${earlier.version})`);
      });
    });
  } catch (error) {
    throw new StartupError(`seed file ${file} is not a valid catalog: ${error instanceof Error ? error.message : String(error)}`);
  }
  return seed;
}

async function loadExtension(catalog: CatalogService, actor: UserRecord, seeded: SeedInput['extensions'][number]): Promise<void> {
  const { versions, ...extension } = seeded;
  await catalog.create(actor, extension);
  for (const { releaseDate, yanked, yankReason, ...version } of versions) {
    const publishedAt = releaseDate ? new Date(`${releaseDate}T12:00:00Z`) : undefined;
    await catalog.publishVersion(actor, extension.extensionKey, version, publishedAt);
    if (yanked) await catalog.yank(actor, extension.extensionKey, version.version, yankReason);
  }
}
