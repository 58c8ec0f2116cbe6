import semver from 'semver';
import { DEFAULT_SUBSCRIPTION_PATH, type Manifest, type SubscribedEvent } from '../../contract/manifest.js';
import { conflict, DomainError, forbidden, invalid, notFound, unauthorized } from '../errors.js';
import { isBearerSecret, newBearerSecret, secretHashOf } from '../secrets/bearer.js';
import type { ReadBack } from '../read-back.js';
import { alreadyInstalled, installationNotFound, type InstallationChange, type WorkspaceStore } from './store.js';
import { toPublicSubscription, type SubscriptionService } from './subscriptions.js';
import type { OwnInstallation } from '../../contract/types.js';
import type { CatalogReader, Installation, InstalledExtension, StoredInstallation, StoredSubscription } from './types.js';
import { resolveVersion } from './versions.js';

/** What an install or an installation's change says about the manifest: the consent given, and where external subscriptions deliver. */
export interface Wiring {
  grantPermissions?: string[] | undefined;
  serviceBaseUrl?: string | undefined;
}

export interface InstallInput extends Wiring {
  extensionKey: string;
  version?: string | undefined;
}

export interface InstallationUpdate extends Wiring {
  enabled?: boolean | undefined;
  version?: string | undefined;
  allowDowngrade?: boolean | undefined;
}

export interface InstallationDependencies {
  assertWorkspaceExists(workspaceId: string): Promise<void>;
  catalog: CatalogReader;
  subscriptions: Pick<SubscriptionService, 'draft'>;
  /** The full URL (credentials included) of a stored subscription, to wire new ones to the same service. */
  fullUrlOf(subscription: StoredSubscription): string | null;
  /** The configuration fields set for an extension. */
  configuredNames(extensionKey: string): readonly string[];
  /** An extension's configuration as its handlers see it: SECRET values decrypted. */
  configurationOf(extensionKey: string): Readonly<Record<string, unknown>>;
}

/** An extension's own service, calling with its installation token. */
export interface ExtensionCaller {
  kind: 'extension';
  workspaceId: string;
  extensionKey: string;
}

export const INSTALLATION_TOKEN_PREFIX = 'pli_';

/** An installation token is issued to a version whose manifest publishes events: its service publishes them with it. */
const needsToken = (manifest: Manifest) => (manifest.publishes?.length ?? 0) > 0;

/** A subscription a manifest asks for, made and not yet stored, with its secret to show once. */
interface Drafted {
  subscription: StoredSubscription;
  signingSecret: string;
}

const NO_MANIFEST: Manifest = { manifestVersion: 1, extensionKey: '', version: '' };
const sameEntry = (subscription: StoredSubscription, entry: SubscribedEvent) =>
  subscription.eventKey === entry.eventKey && subscription.kind === entry.kind;
const pathOf = (entry: SubscribedEvent) => (entry.kind === 'EXTERNAL_SERVICE' ? (entry.path ?? DEFAULT_SUBSCRIPTION_PATH) : undefined);

/**
 * The extensions installed in each workspace: install, enable or disable,
 * upgrade or downgrade, uninstall. A version's manifest is applied here: the
 * permissions it asks for need an ADMIN's explicit consent, and each event
 * it subscribes to gets a subscription, made with the installation and
 * stored together with it; a change of version applies the new manifest.
 */
export class InstallationService {
  constructor(
    private readonly store: WorkspaceStore,
    private readonly readBack: ReadBack<string>,
    private readonly dependencies: InstallationDependencies,
  ) {}

  async listInstallations(workspaceId: string): Promise<Installation[]> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    return (await this.store.listInstallations(workspaceId)).map((installation) => this.shown(installation));
  }

  async install(workspaceId: string, input: InstallInput): Promise<InstalledExtension> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    const { extensionKey } = input;
    if (await this.store.getInstallation(workspaceId, extensionKey)) throw alreadyInstalled(workspaceId, extensionKey);
    if (!this.dependencies.catalog.has(extensionKey)) throw notFound(`extension ${extensionKey} not found`);
    const version = resolveVersion(this.dependencies.catalog, extensionKey, input.version);
    const manifest = this.manifestOf(extensionKey, version);
    const grantedPermissions = consent(manifest, [], input.grantPermissions);
    // Subscriptions left from an earlier install of the extension are its wiring again, not made twice.
    const existing = (await this.store.listSubscriptions(workspaceId)).filter((subscription) => subscription.extensionKey === extensionKey);
    const drafted = await this.draftMissing(workspaceId, manifest, existing, input.serviceBaseUrl);
    const token = needsToken(manifest) ? newBearerSecret(INSTALLATION_TOKEN_PREFIX) : null;
    const installation: StoredInstallation = {
      workspaceId,
      extensionKey,
      version,
      enabled: true,
      installedAt: new Date().toISOString(),
      grantedPermissions,
      ...(token === null ? {} : { tokenHash: secretHashOf(token) }),
    };
    await this.readBack.storing(workspaceId, this.store.install(installation, drafted.map(({ subscription }) => subscription)));
    return this.answer(installation, drafted, token);
  }

  /**
   * Enable, disable, or move to another version (resolved as for an install).
   * Moving to a lower version than the one installed needs allowDowngrade.
   * Another version's manifest is applied: consent again when it asks for a
   * permission not granted before, its subscriptions made, and those the old
   * manifest made and the new one does not declare removed.
   */
  async updateInstallation(workspaceId: string, extensionKey: string, change: InstallationUpdate): Promise<InstalledExtension> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    const current = await this.store.getInstallation(workspaceId, extensionKey);
    if (!current) throw installationNotFound(workspaceId, extensionKey);
    const version =
      change.version === undefined || change.version === current.version ? current.version : resolveVersion(this.dependencies.catalog, extensionKey, change.version);
    if (semver.lt(version, current.version) && change.allowDowngrade !== true) {
      throw conflict(`${extensionKey}@${version} is lower than the installed ${current.version}; send allowDowngrade: true to downgrade`);
    }
    const manifest = this.manifestOf(extensionKey, version);
    const grantedPermissions = consent(manifest, current.grantedPermissions ?? [], change.grantPermissions);
    const rewired = version !== current.version;
    const own = (await this.store.listSubscriptions(workspaceId)).filter((subscription) => subscription.extensionKey === extensionKey);
    const drafted = rewired ? await this.draftMissing(workspaceId, manifest, own, change.serviceBaseUrl) : [];
    const previous = rewired ? this.manifestOf(extensionKey, current.version) : NO_MANIFEST;
    let issued: string | null = null;

    const updating = this.store.updateInstallation(workspaceId, extensionKey, (stored, subscriptions): InstallationChange | null => {
      // Planned on what was read before; a change in between is the caller's to retry.
      if (stored.version !== current.version || subscriptions.length !== own.length) {
        throw conflict(`the installation of ${extensionKey} in ${workspaceId} changed meanwhile; try again`);
      }
      const enabled = change.enabled ?? stored.enabled;
      // Disabling ends the token for good (a new one is rotated in after enabling); a version publishing nothing has none;
      // a version that publishes, installed without one, gets one now.
      const keepsToken = enabled && needsToken(manifest);
      issued = keepsToken && (!stored.tokenHash || !stored.enabled) && stored.version !== version ? newBearerSecret(INSTALLATION_TOKEN_PREFIX) : null;
      const tokenHash = !keepsToken ? undefined : issued !== null ? secretHashOf(issued) : stored.tokenHash;
      const unchanged =
        version === stored.version &&
        enabled === stored.enabled &&
        tokenHash === stored.tokenHash &&
        samePermissions(grantedPermissions, stored.grantedPermissions ?? []);
      if (unchanged) return null;
      const declared = manifest.subscribes ?? [];
      const dropped = subscriptions.filter(
        (subscription) => (previous.subscribes ?? []).some((entry) => sameEntry(subscription, entry)) && !declared.some((entry) => sameEntry(subscription, entry)),
      );
      const moved: StoredSubscription[] = [];
      if (rewired) {
        for (const entry of declared) {
          const kept = subscriptions.find((subscription) => sameEntry(subscription, entry));
          const path = pathOf(entry);
          if (kept && path !== undefined && (kept.deliveryPath ?? DEFAULT_SUBSCRIPTION_PATH) !== path) {
            const { deliveryPath: _old, ...rest } = kept;
            moved.push(path === DEFAULT_SUBSCRIPTION_PATH ? rest : { ...rest, deliveryPath: path });
          }
        }
      }
      const { tokenHash: _old, ...rest } = stored;
      return {
        installation: { ...rest, version, enabled, grantedPermissions, ...(tokenHash === undefined ? {} : { tokenHash }) },
        subscribe: drafted.map(({ subscription }) => subscription),
        update: moved,
        unsubscribe: dropped.map((subscription) => subscription.id),
      };
    });
    const installation = await this.readBack.storing(workspaceId, updating);
    return this.answer(installation, drafted, issued);
  }

  /** A new installation token; the old one stops working at once. 409 when the extension is disabled or its version publishes nothing. */
  async rotateToken(workspaceId: string, extensionKey: string): Promise<{ installationToken: string }> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    const token = newBearerSecret(INSTALLATION_TOKEN_PREFIX);
    await this.readBack.storing(
      workspaceId,
      this.store.updateInstallation(workspaceId, extensionKey, (stored) => {
        if (!stored.enabled) throw conflict(`${extensionKey} is disabled in ${workspaceId}: enable it first`);
        if (!needsToken(this.manifestOf(extensionKey, stored.version))) {
          throw conflict(`${extensionKey}@${stored.version} publishes no events: it has no installation token`);
        }
        return { installation: { ...stored, tokenHash: secretHashOf(token) }, subscribe: [], update: [], unsubscribe: [] };
      }),
    );
    return { installationToken: token };
  }

  /** The extension an installation token belongs to, or 401 (unknown, rotated, disabled or uninstalled alike). */
  async authenticate(secret: string): Promise<ExtensionCaller> {
    const installation = isBearerSecret(INSTALLATION_TOKEN_PREFIX, secret) ? await this.store.findInstallationByTokenHash(secretHashOf(secret)) : undefined;
    if (!installation?.enabled) throw unauthorized('the installation token is invalid, rotated, or its extension is disabled or uninstalled');
    return { kind: 'extension', workspaceId: installation.workspaceId, extensionKey: installation.extensionKey };
  }

  /** What the extension's service reads about itself, its configuration's secrets in clear (for it alone). */
  async ownInstallation(caller: ExtensionCaller): Promise<OwnInstallation> {
    const installation = await this.store.getInstallation(caller.workspaceId, caller.extensionKey);
    if (!installation) throw unauthorized('the installation of this token is gone');
    return {
      workspaceId: installation.workspaceId,
      extensionKey: installation.extensionKey,
      version: installation.version,
      grantedPermissions: installation.grantedPermissions ?? [],
      configuration: { ...this.dependencies.configurationOf(installation.extensionKey) },
    };
  }

  /** An extension publishes into its own workspace only the event keys its installed version's manifest publishes (403). */
  async assertMayPublish(caller: ExtensionCaller, workspaceId: string, eventKey: string): Promise<void> {
    const installation = await this.store.getInstallation(caller.workspaceId, caller.extensionKey);
    const publishes = installation ? (this.manifestOf(caller.extensionKey, installation.version).publishes ?? []) : [];
    if (workspaceId !== caller.workspaceId || !publishes.some((type) => type.eventKey === eventKey)) {
      throw forbidden(`${caller.extensionKey} may publish into ${caller.workspaceId} only the events its manifest publishes (${[...new Set(publishes.map((type) => type.eventKey))].join(', ') || 'none'})`);
    }
  }

  /** An extension reads the deliveries of its own subscriptions only (403). */
  async assertOwnSubscription(caller: ExtensionCaller, workspaceId: string, subscriptionId: string | undefined): Promise<void> {
    const own = subscriptionId === undefined ? undefined : await this.store.getSubscription(workspaceId, subscriptionId);
    if (workspaceId !== caller.workspaceId || own?.extensionKey !== caller.extensionKey) {
      throw forbidden(`${caller.extensionKey} reads the deliveries of its own subscriptions only: give the subscriptionId of one of them`);
    }
  }

  async uninstall(workspaceId: string, extensionKey: string): Promise<void> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
    await this.readBack.storing(workspaceId, this.store.uninstall(workspaceId, extensionKey));
  }

  private manifestOf(extensionKey: string, version: string): Manifest {
    return this.dependencies.catalog.versionRecord(extensionKey, version).manifest ?? NO_MANIFEST;
  }

  /**
   * A subscription for each entry of the manifest the extension has none for
   * yet (same event key and kind). External ones deliver to `serviceBaseUrl`,
   * else to the service an existing external subscription of the extension
   * delivers to; the entry's path is appended.
   */
  private async draftMissing(
    workspaceId: string,
    manifest: Manifest,
    existing: readonly StoredSubscription[],
    serviceBaseUrl: string | undefined,
  ): Promise<Drafted[]> {
    const missing = (manifest.subscribes ?? []).filter((entry) => !existing.some((subscription) => sameEntry(subscription, entry)));
    const wiredTo = existing.find((subscription) => subscription.kind === 'EXTERNAL_SERVICE');
    const baseUrl = serviceBaseUrl ?? (wiredTo && this.dependencies.fullUrlOf(wiredTo)) ?? undefined;
    const drafted: Drafted[] = [];
    for (const entry of missing) {
      if (entry.kind === 'EXTERNAL_SERVICE' && baseUrl === undefined) {
        throw invalid('serviceBaseUrl', `${manifest.extensionKey} subscribes to ${entry.eventKey} as an EXTERNAL_SERVICE: give the serviceBaseUrl of its service`);
      }
      const path = pathOf(entry);
      drafted.push(
        await this.dependencies.subscriptions.draft(workspaceId, {
          eventKey: entry.eventKey,
          extensionKey: manifest.extensionKey,
          kind: entry.kind,
          serviceBaseUrl: entry.kind === 'EXTERNAL_SERVICE' ? baseUrl : undefined,
          ...(path === undefined ? {} : { deliveryPath: path }),
        }),
      );
    }
    return drafted;
  }

  private shown(installation: StoredInstallation): Installation {
    const { workspaceId, extensionKey, version, enabled, installedAt } = installation;
    const configured = new Set(this.dependencies.configuredNames(extensionKey));
    const required = (this.manifestOf(extensionKey, version).configuration ?? []).filter((field) => field.required === true);
    return {
      workspaceId,
      extensionKey,
      version,
      enabled,
      installedAt,
      grantedPermissions: installation.grantedPermissions ?? [],
      missingConfiguration: required.filter((field) => !configured.has(field.name)).map((field) => field.name),
    };
  }

  private answer(installation: StoredInstallation, drafted: readonly Drafted[], token: string | null): InstalledExtension {
    return {
      ...this.shown(installation),
      subscriptions: drafted.map(({ subscription, signingSecret }) => ({ ...toPublicSubscription(subscription), signingSecret })),
      ...(token === null ? {} : { installationToken: token }),
    };
  }
}

const samePermissions = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((name, index) => name === [...b].sort()[index]);

/**
 * The permissions granted once this install or change is done. A manifest
 * that asks for permissions needs `grantPermissions` to list exactly them,
 * unless every one was granted before (an installation keeping or moving to
 * a version that asks for nothing new): 409 CONSENT_REQUIRED names them.
 * Granting what the version does not ask for is a mistake in the request.
 */
function consent(manifest: Manifest, grantedBefore: readonly string[], grant: readonly string[] | undefined): string[] {
  const asked = [...(manifest.permissions ?? [])].sort();
  if (grant !== undefined) {
    const unasked = grant.filter((permission) => !asked.includes(permission));
    if (unasked.length > 0) {
      throw invalid('grantPermissions', `${manifest.extensionKey || 'this version'} does not ask for ${unasked.join(', ')}`);
    }
    if (samePermissions(grant, asked)) return asked;
  } else if (asked.every((permission) => grantedBefore.includes(permission))) {
    return asked;
  }
  throw new DomainError(
    'CONSENT_REQUIRED',
    `${manifest.extensionKey}@${manifest.version} asks for ${asked.join(', ')}: grant them by listing exactly these in grantPermissions`,
    { permissions: asked },
  );
}
