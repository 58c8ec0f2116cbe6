import semver from 'semver';
import { conflict, notFound } from '../errors.js';
import type { ReadBack } from '../read-back.js';
import { alreadyInstalled, type WorkspaceStore } from './store.js';
import type { CatalogReader, Installation } from './types.js';
import { resolveVersion } from './versions.js';

/** The extensions installed in each workspace: install, enable or disable, upgrade or downgrade, uninstall. */
export class InstallationService {
  constructor(
    private readonly store: WorkspaceStore,
    private readonly readBack: ReadBack<string>,
    private readonly dependencies: { assertWorkspaceExists(workspaceId: string): Promise<void>; catalog: CatalogReader },
  ) {}


  async listInstallations(workspaceId: string): Promise<Installation[]> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    return this.store.listInstallations(workspaceId);
  }

  async install(workspaceId: string, input: { extensionKey: string; version?: string | undefined }): Promise<Installation> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    if (await this.store.getInstallation(workspaceId, input.extensionKey)) throw alreadyInstalled(workspaceId, input.extensionKey);
    if (!this.dependencies.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const version = resolveVersion(this.dependencies.catalog, input.extensionKey, input.version);
    const installation: Installation = {
      workspaceId,
      extensionKey: input.extensionKey,
      version,
      enabled: true,
      installedAt: new Date().toISOString(),
    };
    await this.readBack.storing(workspaceId, this.store.install(installation));
    return installation;
  }

  /**
   * Enable, disable, or move to another version (resolved as for an install).
   * Moving to a lower version than the one installed needs allowDowngrade.
   */
  async updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: { enabled?: boolean | undefined; version?: string | undefined; allowDowngrade?: boolean | undefined },
  ): Promise<Installation> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    const updating = this.store.updateInstallation(workspaceId, extensionKey, (current) => {
      const version =
        change.version === undefined || change.version === current.version ? current.version : resolveVersion(this.dependencies.catalog, extensionKey, change.version);
      if (semver.lt(version, current.version) && change.allowDowngrade !== true) {
        throw conflict(
          `${extensionKey}@${version} is lower than the installed ${current.version}; send allowDowngrade: true to downgrade`,
        );
      }
      const enabled = change.enabled ?? current.enabled;
      return version === current.version && enabled === current.enabled ? null : { ...current, version, enabled };
    });
    return this.readBack.storing(workspaceId, updating);
  }

  async uninstall(workspaceId: string, extensionKey: string): Promise<void> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    await this.readBack.storing(workspaceId, this.store.uninstall(workspaceId, extensionKey));
  }
}
