import semver from 'semver';
import { SDK_VERSION } from '../../handlers/sdk.js';
import { VERSION_REQUEST_RULE } from '../../contract/requests.js';
import { DomainError, invalid } from '../errors.js';
import { isStrictSemver } from '../catalog/versions.js';
import { PLATFORM_VERSION } from '../version.js';
import type { CatalogReader, InstallableVersion } from './types.js';

/** What an install or upgrade may ask for: an exact version, `latest`, or a semver range (`^1.2`, `~1.4`, `1.x`). */
export function isVersionRequest(text: string): boolean {
  return text === 'latest' || isStrictSemver(text) || semver.validRange(text) !== null;
}

/** The requirement this daemon does not meet, or null. */
function unmetRequirement(record: InstallableVersion): string | null {
  if (record.requiresPlatform !== null && semver.gt(record.requiresPlatform, PLATFORM_VERSION)) {
    return `platform ${record.requiresPlatform}; this daemon has ${PLATFORM_VERSION}`;
  }
  if (record.requiresSdk !== null && semver.gt(record.requiresSdk, SDK_VERSION)) {
    return `plugin SDK ${record.requiresSdk}; this daemon has ${SDK_VERSION}`;
  }
  return null;
}

/** An exact version as asked: yanked or needing a newer platform or SDK is refused. */
function assertInstallable(extensionKey: string, record: InstallableVersion): void {
  if (record.yanked) {
    throw new DomainError('VERSION_YANKED', `${extensionKey}@${record.version} has been yanked and cannot be installed`);
  }
  const unmet = unmetRequirement(record);
  if (unmet) throw new DomainError('INCOMPATIBLE_VERSION', `${extensionKey}@${record.version} requires ${unmet}`);
}

/**
 * The version an install or upgrade gets. An exact version is checked as is.
 * Otherwise (none, `latest` or a range): the highest non-yanked version that
 * satisfies the range and whose requirements this daemon meets, stable before
 * prerelease as for latestVersion; none such is 409 INCOMPATIBLE_VERSION.
 */
export function resolveVersion(catalog: CatalogReader, extensionKey: string, requested: string | undefined): string {
  if (requested !== undefined && !isVersionRequest(requested)) throw invalid('version', VERSION_REQUEST_RULE);
  if (requested !== undefined && isStrictSemver(requested)) {
    assertInstallable(extensionKey, catalog.versionRecord(extensionKey, requested));
    return requested;
  }
  const range = requested === undefined || requested === 'latest' ? null : requested;
  const { versions } = catalog.detail(extensionKey);
  if (versions.length === 0) throw new DomainError('CONFLICT', `extension ${extensionKey} has no published version to install`);
  let prerelease: string | null = null;
  // Newest first: the first stable candidate is the answer.
  for (const { version, yanked } of versions) {
    if (yanked) continue;
    if (range !== null && !semver.satisfies(version, range)) continue;
    if (unmetRequirement(catalog.versionRecord(extensionKey, version)) !== null) continue;
    if (semver.prerelease(version) === null) return version;
    prerelease ??= version;
  }
  if (prerelease !== null) return prerelease;
  const wanted = range === null ? 'version' : `version matching ${range}`;
  throw new DomainError(
    'INCOMPATIBLE_VERSION',
    `no non-yanked ${wanted} of ${extensionKey} runs on this daemon (platform ${PLATFORM_VERSION}, plugin SDK ${SDK_VERSION})`,
  );
}
