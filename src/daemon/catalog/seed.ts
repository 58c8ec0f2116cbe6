import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isAdmin, type UserRecord } from '../auth/users.js';
import { DomainError, StartupError } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import { checkPermissions } from './permissions.js';
import { SeedFile, type SeedInput } from './schemas.js';
import type { CatalogService } from './service.js';
import { samePrecedence } from './versions.js';

// src/daemon/catalog and dist/daemon/catalog are both three levels below the repository root.
export const SEED_FILE = fileURLToPath(new URL('../../../data/seed/catalog.json', import.meta.url));

/**
 * `platform serve --seed`: loads the development catalog into an empty catalog,
 * through the same validation and domain operations as the API, attributed to
 * the first active administrator. Returns how many extensions were loaded, or
 * null when the catalog already had entries (then nothing is done). The whole
 * file is checked before anything is written.
 */
export async function seedCatalog(
  catalog: CatalogService,
  users: { list(): UserRecord[] },
  file = SEED_FILE,
): Promise<number | null> {
  if (catalog.size > 0) return null;
  const actor = users.list().find((user) => user.active && isAdmin(user));
  if (!actor) throw new StartupError('cannot seed the catalog: there is no active administrator to attribute it to');
  const seed = await readSeed(file);
  try {
    for (const extension of seed.extensions) await loadExtension(catalog, actor, extension);
  } catch (error) {
    if (error instanceof DomainError) throw new StartupError(`seed file ${file}: ${error.message}`);
    throw error;
  }
  return seed.extensions.length;
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
