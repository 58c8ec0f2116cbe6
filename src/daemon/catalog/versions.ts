import semver from 'semver';

/** Strict SemVer 2.0.0, as the API validates it. */
export { isStrictSemver } from '../../contract/schemas.js';

/** Newest first by precedence; build metadata only breaks ties (the catalog never stores precedence-equal versions). */
export const newestFirst = (a: string, b: string): number => semver.compareBuild(b, a);

/** Versions that differ only in build metadata have the same precedence, so one reserves the other. */
export const samePrecedence = (a: string, b: string): boolean => semver.eq(a, b);

const isPrerelease = (version: string): boolean => semver.prerelease(version) !== null;

/**
 * The contract's latestVersion: the highest non-yanked stable version; else the
 * highest non-yanked prerelease; else (every version yanked) the highest; null
 * without versions. `versions` must be newest first.
 */
export function latestVersionOf(versions: ReadonlyArray<{ version: string; yanked: boolean }>): string | null {
  let highestAvailable: string | null = null;
  for (const { version, yanked } of versions) {
    if (yanked) continue;
    if (!isPrerelease(version)) return version;
    highestAvailable ??= version;
  }
  return highestAvailable ?? versions[0]?.version ?? null;
}
