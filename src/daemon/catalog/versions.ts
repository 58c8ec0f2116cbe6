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

/** The platform and plugin SDK versions a caller runs; a requirement on one not given is not checked. */
export interface Runtime {
  platformVersion?: string | undefined;
  sdkVersion?: string | undefined;
}

interface Requirements {
  requiresPlatform: string | null;
  requiresSdk: string | null;
}

/** The requirement `runs` does not meet, said for a message about this daemon, or null. */
export function unmetRequirement(record: Requirements, runs: Runtime): string | null {
  const { platformVersion, sdkVersion } = runs;
  if (record.requiresPlatform !== null && platformVersion !== undefined && semver.gt(record.requiresPlatform, platformVersion)) {
    return `platform ${record.requiresPlatform} (this daemon runs ${platformVersion})`;
  }
  if (record.requiresSdk !== null && sdkVersion !== undefined && semver.gt(record.requiresSdk, sdkVersion)) {
    return `plugin SDK ${record.requiresSdk} (this daemon runs ${sdkVersion})`;
  }
  return null;
}

/**
 * The highest non-yanked version (within `range`, when given) whose
 * requirements `runs` meets: stable before prerelease, as for latestVersion.
 * Null when none. `versions` must be newest first.
 */
export function compatibleVersionOf(
  versions: ReadonlyArray<Requirements & { version: string; yanked: boolean }>,
  runs: Runtime,
  range: string | null = null,
): string | null {
  let prerelease: string | null = null;
  for (const record of versions) {
    if (record.yanked) continue;
    if (range !== null && !semver.satisfies(record.version, range)) continue;
    if (unmetRequirement(record, runs) !== null) continue;
    if (!isPrerelease(record.version)) return record.version;
    prerelease ??= record.version;
  }
  return prerelease;
}
