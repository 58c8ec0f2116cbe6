import semver from 'semver';

/**
 * SemVer 2.0.0 as the `semver` package reads it, strictly: no leading `v` or
 * `=`, no surrounding spaces, no leading zeros. Build metadata is allowed and kept.
 */
export function isStrictSemver(text: string): boolean {
  const parsed = semver.parse(text, { loose: false });
  if (!parsed) return false;
  const canonical = parsed.build.length > 0 ? `${parsed.version}+${parsed.build.join('.')}` : parsed.version;
  return canonical === text;
}

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
