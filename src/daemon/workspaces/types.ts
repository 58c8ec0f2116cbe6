import type { Manifest } from '../../contract/manifest.js';
import type { Subscription as ContractSubscription } from '../../contract/types.js';

export type { Installation, InstalledExtension, Workspace } from '../../contract/types.js';

/** An installation as stored; what it misses of its configuration is worked out when it is shown. */
export interface StoredInstallation {
  workspaceId: string;
  extensionKey: string;
  version: string;
  enabled: boolean;
  installedAt: string;
  /** The manifest's permissions an ADMIN granted; absent in data written before manifests: none. */
  grantedPermissions?: string[];
  /** SHA-256 of the installation token, while the extension has one (its manifest publishes events, and it is enabled). */
  tokenHash?: string;
}

export const SUBSCRIBER_KINDS = ['EXTERNAL_SERVICE', 'IN_PROCESS'] as const;
export type SubscriberKind = (typeof SUBSCRIBER_KINDS)[number];

/** A subscription as the API shows it: never with its secret. */
export interface Subscription {
  id: string;
  workspaceId: string;
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  /** With credentials masked: `https://****@host/...`. */
  serviceBaseUrl: string | null;
  createdAt: string;
  /** Absent in data written before subscriptions could be disabled: enabled. */
  enabled?: boolean;
  /** Why it is disabled (by an administrator, or after failing too long); null when enabled. */
  disabledReason?: string | null;
  /** Where below serviceBaseUrl deliveries go, as a manifest declared it; absent: /events. */
  deliveryPath?: string;
}

/** As the API shows it: with the URL deliveries are POSTed to (`{serviceBaseUrl}/events`). */
export type PublicSubscription = ContractSubscription;

export interface StoredSubscription extends Subscription {
  /** The whsec_ signing secret, sealed with the master key. */
  sealedSigningSecret: string;
  /** The serviceBaseUrl with its credentials, sealed; only when it has credentials. */
  sealedServiceBaseUrl?: string;
  /** After a rotation: the previous secret, still signing until previousSecretUntil (epoch ms). */
  sealedPreviousSigningSecret?: string;
  previousSecretUntil?: number;
  /** Epoch ms of the first failed attempt since the last success: the start of the way to automatic disabling. */
  failingSince?: number;
}

/** Why a subscriber gets no delivery right now, or null when it is active. */
export type Inactivity = 'subscription deleted' | 'subscription disabled' | 'extension not installed' | 'extension disabled' | null;

/**
 * The one rule of who receives deliveries: the subscription exists and is
 * enabled, and its extension is installed in the workspace and enabled.
 * Publishing picks receivers by it (in each store), and each attempt and
 * replay checks it again.
 */
export function inactivityOf(subscription: Pick<Subscription, 'enabled'> | undefined, installation: { enabled: boolean } | undefined): Inactivity {
  if (!subscription) return 'subscription deleted';
  if (subscription.enabled === false) return 'subscription disabled';
  if (!installation) return 'extension not installed';
  return installation.enabled ? null : 'extension disabled';
}

/** What a catalog version must tell an installation. */
export interface InstallableVersion {
  version: string;
  yanked: boolean;
  requiresPlatform: string | null;
  requiresSdk: string | null;
  manifest: Manifest | null;
}

/** The part of the catalog that workspaces rely on. */
export interface CatalogReader {
  has(extensionKey: string): boolean;
  /** Throws NOT_FOUND for an unknown extension or version. */
  versionRecord(extensionKey: string, version: string): InstallableVersion;
  /** Throws NOT_FOUND for an unknown extension; newest first. */
  versions(extensionKey: string): readonly InstallableVersion[];
}

/** The part of the plugin registry that subscriptions rely on. */
export interface HandlerDirectory {
  declares(extensionKey: string, eventKey: string): boolean;
}
