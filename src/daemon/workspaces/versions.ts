import semver from 'semver';
import { SDK_VERSION } from '../../handlers/sdk.js';
import { VERSION_REQUEST_RULE } from '../../contract/requests.js';
import { DomainError, invalid } from '../errors.js';
import { compatibleVersionOf, isStrictSemver, unmetRequirement, type Runtime } from '../catalog/versions.js';
import { PLATFORM_VERSION } from '../version.js';
import type { CatalogReader, InstallableVersion } from './types.js';

/** What an install or upgrade may ask for: an exact version, `latest`, or a semver range (`^1.2`, `~1.4`, `1.x`). */
export function isVersionRequest(text: string): boolean {
  return text === 'latest' || isStrictSemver(text) || semver.validRange(text) !== null;
}

/** What this daemon runs: the versions a version's requirements are checked against. */
const THIS_DAEMON: Runtime = { platformVersion: PLATFORM_VERSION, sdkVersion: SDK_VERSION };

/** An exact version as asked: yanked or needing a newer platform or SDK is refused. */
function assertInstallable(extensionKey: string, record: InstallableVersion): void {
  if (record.yanked) {
    throw new DomainError('VERSION_YANKED', `${extensionKey}@${record.version} has been yanked and cannot be installed`);
  }
  const unmet = unmetRequirement(record, THIS_DAEMON);
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
  const versions = catalog.versions(extensionKey);
  if (versions.length === 0) throw new DomainError('CONFLICT', `extension ${extensionKey} has no published version to install`);
  const compatible = compatibleVersionOf(versions, THIS_DAEMON, range);
  if (compatible !== null) return compatible;
  const wanted = range === null ? 'version' : `version matching ${range}`;
  throw new DomainError(
    'INCOMPATIBLE_VERSION',
    `no non-yanked ${wanted} of ${extensionKey} runs on this daemon (platform ${PLATFORM_VERSION}, plugin SDK ${SDK_VERSION})`,
  );
}
