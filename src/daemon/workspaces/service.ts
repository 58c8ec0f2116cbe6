import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import semver from 'semver';
import { conflict, forbidden, invalid, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { Collection } from '../store/collection.js';
import { isAdmin, type UserRecord } from '../auth/users.js';
import { eventsUrl } from '../dispatch/external.js';
import { assertPublicTarget } from '../dispatch/targets.js';
import { hasCredentials, maskCredentials } from '../dispatch/url-credentials.js';
import { resolveVersion } from './versions.js';
import type {
  CatalogReader,
  HandlerDirectory,
  Installation,
  PublicSubscription,
  StoredSubscription,
  SubscriberKind,
  Workspace,
} from './types.js';

interface WorkspacesDocument {
  schemaVersion: 1;
  workspaces: Workspace[];
  installations: Installation[];
  subscriptions: StoredSubscription[];
}

export interface NewSubscription {
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  serviceBaseUrl?: string | undefined;
}

/** Why a subscriber gets no delivery right now, or null when it is active. */
export type Inactivity = 'subscription deleted' | 'subscription disabled' | 'extension not installed' | 'extension disabled' | null;

export interface DisabledSubscription {
  subscriptionId: string;
  workspaceId: string;
  extensionKey: string;
  reason: string;
}

export interface SubscriptionChange {
  enabled?: boolean | undefined;
  serviceBaseUrl?: string | undefined;
}

const topic = (workspaceId: string, eventKey: string) => `${workspaceId}\u0000${eventKey}`;
const installationKey = (workspaceId: string, extensionKey: string) => `${workspaceId}\u0000${extensionKey}`;

/**
 * Workspaces, their members, installed extensions and event subscriptions, in
 * one collection (workspaces.json): all of it changes rarely. Publishing reads
 * it through in-memory indexes only.
 */
export class WorkspaceService {
  private workspaces = new Map<string, Workspace>();
  private installations = new Map<string, Installation>();
  private subscriptions = new Map<string, StoredSubscription>();
  private byTopic = new Map<string, StoredSubscription[]>();
  /** Decrypted signing keys, so that signing a delivery never decrypts. */
  private readonly keyCache = new Map<string, { current: Buffer; previous: Buffer | null }>();
  /** What else keeps records by workspace (dead letters) forgets a deleted one. */
  private readonly deletionListeners: Array<(workspaceId: string) => Promise<void>> = [];
  /** What holds on to a membership (live streams) checks it again at once. */
  private readonly accessListeners: Array<(userId: string | null) => void> = [];
  /** Decrypted subscriber URLs that carry credentials. */
  private readonly deliveryUrls = new Map<string, string>();

  private constructor(
    private readonly collection: Collection<WorkspacesDocument>,
    private readonly catalog: CatalogReader,
    private readonly handlers: HandlerDirectory,
    private readonly box: SecretBox,
    private readonly users: { get(id: string): unknown },
    private readonly denyPrivateTargets: boolean,
  ) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(
    dataDir: string,
    dependencies: {
      catalog: CatalogReader;
      handlers: HandlerDirectory;
      box: SecretBox;
      users: { get(id: string): unknown };
      denyPrivateTargets: boolean;
    },
  ): Promise<WorkspaceService> {
    const collection = await Collection.open<WorkspacesDocument>({
      file: join(dataDir, 'workspaces.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, workspaces: [], installations: [], subscriptions: [] }),
    });
    const { catalog, handlers, box, users, denyPrivateTargets } = dependencies;
    const service = new WorkspaceService(collection, catalog, handlers, box, users, denyPrivateTargets);
    await service.sealClearCredentials();
    return service;
  }

  /** Data written before URL credentials were sealed: sealed at open, so they are in clear nowhere after a start. */
  private async sealClearCredentials(): Promise<void> {
    const clear = this.collection.data.subscriptions.filter(
      (s) => s.serviceBaseUrl !== null && s.sealedServiceBaseUrl === undefined && hasCredentials(s.serviceBaseUrl),
    );
    if (clear.length === 0) return;
    await this.collection.update(() => {
      for (const subscription of clear) Object.assign(subscription, this.storedUrl(subscription.serviceBaseUrl!));
      this.reindexSubscriptions();
    });
  }

  /** How a subscriber URL is stored: masked for display, sealed in full when it has credentials. */
  private storedUrl(url: string): Pick<StoredSubscription, 'serviceBaseUrl' | 'sealedServiceBaseUrl'> {
    if (!hasCredentials(url)) return { serviceBaseUrl: url };
    return { serviceBaseUrl: maskCredentials(url), sealedServiceBaseUrl: this.box.seal(url) };
  }

  // Workspaces and members

  async create(input: { id: string; name: string }): Promise<Workspace> {
    const workspace: Workspace = { id: input.id, name: input.name, members: [], createdAt: new Date().toISOString() };
    // Checked and indexed inside the (synchronous) mutation, so concurrent creates cannot both pass.
    await this.collection.update((data) => {
      if (this.workspaces.has(input.id)) throw conflict(`workspace ${input.id} already exists`);
      data.workspaces.push(workspace);
      this.workspaces.set(workspace.id, workspace);
    });
    return workspace;
  }

  get(id: string): Workspace {
    const workspace = this.workspaces.get(id);
    if (!workspace) throw notFound(`workspace ${id} not found`);
    return workspace;
  }

  async rename(id: string, name: string): Promise<Workspace> {
    const workspace = this.get(id);
    await this.collection.update(() => {
      workspace.name = name;
    });
    return workspace;
  }

  /**
   * Refused while extensions are installed, unless forced: then its
   * installations and subscriptions go with it (pending deliveries to them end
   * as for a deleted subscription), and the deletion listeners (dead letters)
   * run. Recorded events stay in the event log until retention removes them.
   */
  async delete(id: string, force: boolean): Promise<void> {
    const workspace = this.get(id);
    const installed = [...this.installations.values()].filter((installation) => installation.workspaceId === id);
    if (installed.length > 0 && !force) {
      throw conflict(
        `workspace ${id} has ${installed.length} installed extensions (${installed.map((i) => i.extensionKey).join(', ')}); ` +
          'uninstall them first, or delete with force',
      );
    }
    await this.collection.update((data) => {
      data.workspaces = data.workspaces.filter((candidate) => candidate !== workspace);
      data.installations = data.installations.filter((installation) => installation.workspaceId !== id);
      data.subscriptions = data.subscriptions.filter((subscription) => subscription.workspaceId !== id);
      this.reindex();
    });
    for (const listener of this.deletionListeners) await listener(id);
    for (const listener of this.accessListeners) listener(null);
  }

  onWorkspaceDeleted(listener: (workspaceId: string) => Promise<void>): void {
    this.deletionListeners.push(listener);
  }

  /** A member left (the user's id), or a workspace went (null: anyone may have lost access). */
  onAccessChanged(listener: (userId: string | null) => void): void {
    this.accessListeners.push(listener);
  }

  exists(id: string): boolean {
    return this.workspaces.has(id);
  }

  /** ADMIN: every workspace; anyone else: those they are a member of. */
  visibleTo(user: UserRecord): Workspace[] {
    const all = [...this.workspaces.values()];
    return isAdmin(user) ? all : all.filter((workspace) => workspace.members.includes(user.id));
  }

  /** 403 unless ADMIN or a member. Runs before validation, so the id may be anything. */
  assertMember(user: UserRecord, workspaceId: string | undefined): void {
    if (isAdmin(user)) return;
    const workspace = workspaceId === undefined ? undefined : this.workspaces.get(workspaceId);
    if (!workspace || !workspace.members.includes(user.id)) {
      throw forbidden('this needs the ADMIN role or membership of the workspace');
    }
  }

  async addMember(workspaceId: string, userId: string): Promise<Workspace> {
    const workspace = this.get(workspaceId);
    if (!this.users.get(userId)) throw notFound(`user ${userId} not found`);
    if (workspace.members.includes(userId)) return workspace;
    await this.collection.update(() => {
      workspace.members.push(userId);
    });
    return workspace;
  }

  async removeMember(workspaceId: string, userId: string): Promise<void> {
    const workspace = this.get(workspaceId);
    if (!workspace.members.includes(userId)) return;
    await this.collection.update(() => {
      workspace.members = workspace.members.filter((member) => member !== userId);
    });
    for (const listener of this.accessListeners) listener(userId);
  }

  /** A deleted user leaves every workspace. */
  async forgetMember(userId: string): Promise<void> {
    const memberOf = [...this.workspaces.values()].filter((workspace) => workspace.members.includes(userId));
    if (memberOf.length === 0) return;
    await this.collection.update(() => {
      for (const workspace of memberOf) workspace.members = workspace.members.filter((member) => member !== userId);
    });
  }

  // Installations

  listInstallations(workspaceId: string): Installation[] {
    this.get(workspaceId);
    return [...this.installations.values()].filter((installation) => installation.workspaceId === workspaceId);
  }

  async install(workspaceId: string, input: { extensionKey: string; version?: string | undefined }): Promise<Installation> {
    this.get(workspaceId);
    const key = installationKey(workspaceId, input.extensionKey);
    if (this.installations.has(key)) throw alreadyInstalled(workspaceId, input.extensionKey);
    if (!this.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const version = resolveVersion(this.catalog, input.extensionKey, input.version);
    const installation: Installation = {
      workspaceId,
      extensionKey: input.extensionKey,
      version,
      enabled: true,
      installedAt: new Date().toISOString(),
    };
    await this.collection.update((data) => {
      if (this.installations.has(key)) throw alreadyInstalled(workspaceId, input.extensionKey);
      data.installations.push(installation);
      this.installations.set(key, installation);
    });
    return installation;
  }

  /**
   * Enable, disable, or move to another version (resolved as for an install).
   * Moving to a lower version needs allowDowngrade.
   */
  async updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: { enabled?: boolean | undefined; version?: string | undefined; allowDowngrade?: boolean | undefined },
  ): Promise<Installation> {
    const installation = this.installation(workspaceId, extensionKey);
    let version: string | undefined;
    if (change.version !== undefined && change.version !== installation.version) {
      version = resolveVersion(this.catalog, extensionKey, change.version);
      if (semver.lt(version, installation.version) && change.allowDowngrade !== true) {
        throw conflict(
          `${extensionKey}@${version} is lower than the installed ${installation.version}; send allowDowngrade: true to downgrade`,
        );
      }
    }
    await this.collection.update(() => {
      if (version !== undefined) installation.version = version;
      if (change.enabled !== undefined) installation.enabled = change.enabled;
    });
    return installation;
  }

  async uninstall(workspaceId: string, extensionKey: string): Promise<void> {
    const installation = this.installation(workspaceId, extensionKey);
    await this.collection.update((data) => {
      data.installations = data.installations.filter((candidate) => candidate !== installation);
      this.installations.delete(installationKey(workspaceId, extensionKey));
    });
  }

  private installation(workspaceId: string, extensionKey: string): Installation {
    this.get(workspaceId);
    const installation = this.installations.get(installationKey(workspaceId, extensionKey));
    if (!installation) throw notFound(`installation of ${extensionKey} in ${workspaceId} not found`);
    return installation;
  }

  // Subscriptions

  listSubscriptions(workspaceId: string): PublicSubscription[] {
    this.get(workspaceId);
    return [...this.subscriptions.values()].filter((s) => s.workspaceId === workspaceId).map(toPublicSubscription);
  }

  /**
   * Returns the subscription with its signing secret (the only time the secret
   * is shown), and warnings: an extension not installed in the workspace gets
   * nothing until it is.
   */
  async subscribe(
    workspaceId: string,
    input: NewSubscription,
  ): Promise<{ subscription: PublicSubscription & { signingSecret: string }; warnings: string[] }> {
    this.get(workspaceId);
    if (!this.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const serviceBaseUrl = input.kind === 'EXTERNAL_SERVICE' ? (input.serviceBaseUrl ?? null) : null;
    if (input.kind === 'EXTERNAL_SERVICE' && serviceBaseUrl === null) {
      throw invalid('serviceBaseUrl', 'an EXTERNAL_SERVICE subscription needs an http(s) serviceBaseUrl');
    }
    if (serviceBaseUrl !== null && this.denyPrivateTargets) {
      await assertPublicTarget(serviceBaseUrl).catch((error: Error) => {
        throw invalid('serviceBaseUrl', error.message);
      });
    }
    if (input.kind === 'IN_PROCESS' && !this.handlers.declares(input.extensionKey, input.eventKey)) {
      throw invalid('extensionKey', `no in-process plugin of ${input.extensionKey} handles ${input.eventKey}`);
    }
    const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const subscription: StoredSubscription = {
      id: randomUUID(),
      workspaceId,
      eventKey: input.eventKey,
      extensionKey: input.extensionKey,
      kind: input.kind,
      serviceBaseUrl: null,
      ...(serviceBaseUrl === null ? {} : this.storedUrl(serviceBaseUrl)),
      createdAt: new Date().toISOString(),
      sealedSigningSecret: this.box.seal(signingSecret),
    };
    await this.collection.update((data) => {
      const duplicate = (this.byTopic.get(topic(workspaceId, input.eventKey)) ?? []).some(
        (s) => s.extensionKey === input.extensionKey && s.kind === input.kind && this.deliveryUrl(s.id) === serviceBaseUrl,
      );
      if (duplicate) throw conflict(`${input.extensionKey} is already subscribed to ${input.eventKey} in ${workspaceId}`);
      data.subscriptions.push(subscription);
      this.indexSubscription(subscription);
    });
    const warnings = this.installations.has(installationKey(workspaceId, input.extensionKey))
      ? []
      : [`${input.extensionKey} is not installed in ${workspaceId}: nothing is delivered to this subscription until it is`];
    return { subscription: { ...toPublicSubscription(subscription), signingSecret }, warnings };
  }

  async unsubscribe(workspaceId: string, subscriptionId: string): Promise<void> {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription || subscription.workspaceId !== workspaceId) {
      throw notFound(`subscription ${subscriptionId} not found in ${workspaceId}`);
    }
    await this.collection.update((data) => {
      data.subscriptions = data.subscriptions.filter((candidate) => candidate.id !== subscriptionId);
      this.reindexSubscriptions();
    });
  }

  /** Subscriptions for (workspace, event key) whose extension is installed and enabled: the dispatch list. */
  activeSubscriptions(workspaceId: string, eventKey: string): readonly StoredSubscription[] {
    const candidates = this.byTopic.get(topic(workspaceId, eventKey));
    if (!candidates) return [];
    return candidates.filter((subscription) => this.inactivity(subscription.id) === null);
  }

  /** Checked again before every delivery attempt and replay. */
  inactivity(subscriptionId: string): Inactivity {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) return 'subscription deleted';
    if (subscription.enabled === false) return 'subscription disabled';
    const installation = this.installations.get(installationKey(subscription.workspaceId, subscription.extensionKey));
    if (!installation) return 'extension not installed';
    return installation.enabled ? null : 'extension disabled';
  }

  /**
   * The HMAC keys a delivery is signed with (the base64-decoded part of the
   * whsec_ secret): the current one, and the previous one during the overlap
   * after a rotation. Empty for a deleted subscription.
   */
  signingKeys(subscriptionId: string, now: number): Buffer[] {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) return [];
    let cached = this.keyCache.get(subscriptionId);
    if (!cached) {
      const decode = (sealed: string) => Buffer.from(this.box.open(sealed).slice('whsec_'.length), 'base64');
      cached = { current: decode(subscription.sealedSigningSecret), previous: subscription.sealedPreviousSigningSecret ? decode(subscription.sealedPreviousSigningSecret) : null };
      this.keyCache.set(subscriptionId, cached);
    }
    const overlapping = cached.previous !== null && (subscription.previousSecretUntil ?? 0) > now;
    return overlapping ? [cached.current, cached.previous!] : [cached.current];
  }

  /** A subscription of this workspace, or 404. */
  private subscriptionOf(workspaceId: string, subscriptionId: string): StoredSubscription {
    this.get(workspaceId);
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription || subscription.workspaceId !== workspaceId) throw notFound(`subscription ${subscriptionId} not found in ${workspaceId}`);
    return subscription;
  }

  /** Public view of one subscription of the workspace (404 otherwise). */
  subscription(workspaceId: string, subscriptionId: string): PublicSubscription {
    return toPublicSubscription(this.subscriptionOf(workspaceId, subscriptionId));
  }

  /** Enables or disables (re-enabling clears the reason and the failure streak), or moves the subscriber. */
  async updateSubscription(workspaceId: string, subscriptionId: string, change: SubscriptionChange): Promise<PublicSubscription> {
    const subscription = this.subscriptionOf(workspaceId, subscriptionId);
    const url = change.serviceBaseUrl;
    if (url !== undefined) {
      if (subscription.kind !== 'EXTERNAL_SERVICE') throw invalid('serviceBaseUrl', 'only an EXTERNAL_SERVICE subscription has a serviceBaseUrl');
      if (this.denyPrivateTargets) {
        await assertPublicTarget(url).catch((error: Error) => {
          throw invalid('serviceBaseUrl', error.message);
        });
      }
    }
    await this.collection.update(() => {
      if (url !== undefined) {
        delete subscription.sealedServiceBaseUrl;
        Object.assign(subscription, this.storedUrl(url));
        this.deliveryUrls.delete(subscriptionId);
      }
      if (change.enabled === true) {
        subscription.enabled = true;
        subscription.disabledReason = null;
        delete subscription.failingSince;
      } else if (change.enabled === false && subscription.enabled !== false) {
        subscription.enabled = false;
        subscription.disabledReason = 'disabled by an administrator';
      }
    });
    return toPublicSubscription(subscription);
  }

  /** A new signing secret; the previous one keeps signing for `overlapMs`. Returns the new secret (shown once). */
  async rotateSecret(workspaceId: string, subscriptionId: string, overlapMs: number, now: number): Promise<{ signingSecret: string }> {
    const subscription = this.subscriptionOf(workspaceId, subscriptionId);
    const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
    await this.collection.update(() => {
      subscription.sealedPreviousSigningSecret = subscription.sealedSigningSecret;
      subscription.previousSecretUntil = now + overlapMs;
      subscription.sealedSigningSecret = this.box.seal(signingSecret);
      this.keyCache.delete(subscriptionId);
    });
    return { signingSecret };
  }

  /**
   * An attempt's result for automatic disabling: a failure starts (or continues)
   * a streak, a success ends it. Returns the reason when this failure disabled
   * the subscription: its streak has lasted `disableAfterMs`.
   */
  async recordHealth(subscriptionId: string, succeeded: boolean, now: number, disableAfterMs: number): Promise<DisabledSubscription | null> {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription || subscription.enabled === false) return null;
    if (succeeded) {
      if (subscription.failingSince !== undefined) await this.collection.update(() => delete subscription.failingSince);
      return null;
    }
    if (subscription.failingSince === undefined) {
      await this.collection.update(() => (subscription.failingSince ??= now));
      return null;
    }
    if (now - subscription.failingSince < disableAfterMs) return null;
    const reason = `every delivery failed since ${new Date(subscription.failingSince).toISOString()}`;
    await this.collection.update(() => {
      subscription.enabled = false;
      subscription.disabledReason = reason;
    });
    return { subscriptionId, workspaceId: subscription.workspaceId, extensionKey: subscription.extensionKey, reason };
  }

  /** Where deliveries of a subscription go, credentials included; null for a deleted or in-process one. */
  deliveryUrl(subscriptionId: string): string | null {
    const cached = this.deliveryUrls.get(subscriptionId);
    if (cached) return cached;
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription?.sealedServiceBaseUrl) return subscription?.serviceBaseUrl ?? null;
    const url = this.box.open(subscription.sealedServiceBaseUrl);
    this.deliveryUrls.set(subscriptionId, url);
    return url;
  }

  flush(): Promise<void> {
    return this.collection.flush();
  }

  private indexSubscription(subscription: StoredSubscription): void {
    this.subscriptions.set(subscription.id, subscription);
    const key = topic(subscription.workspaceId, subscription.eventKey);
    this.byTopic.set(key, [...(this.byTopic.get(key) ?? []), subscription]);
  }

  private reindexSubscriptions(): void {
    this.subscriptions = new Map();
    this.byTopic = new Map();
    this.keyCache.clear();
    this.deliveryUrls.clear();
    for (const subscription of this.collection.data.subscriptions) this.indexSubscription(subscription);
  }

  private reindex(): void {
    const data = this.collection.data;
    this.workspaces = new Map(data.workspaces.map((workspace) => [workspace.id, workspace]));
    this.installations = new Map(data.installations.map((i) => [installationKey(i.workspaceId, i.extensionKey), i]));
    this.reindexSubscriptions();
  }
}

const alreadyInstalled = (workspaceId: string, extensionKey: string) =>
  conflict(`${extensionKey} is already installed in ${workspaceId}`);

function toPublicSubscription(subscription: StoredSubscription): PublicSubscription {
  const {
    sealedSigningSecret: _secret,
    sealedServiceBaseUrl: _url,
    sealedPreviousSigningSecret: _previous,
    previousSecretUntil: _until,
    failingSince: _failing,
    ...visible
  } = subscription;
  return {
    ...visible,
    enabled: visible.enabled !== false,
    disabledReason: visible.enabled === false ? (visible.disabledReason ?? null) : null,
    deliveryUrl: visible.serviceBaseUrl === null ? null : eventsUrl(visible.serviceBaseUrl),
  };
}
