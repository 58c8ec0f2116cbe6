import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import semver from 'semver';
import { SDK_VERSION } from '../../handlers/sdk.js';
import { DomainError, conflict, forbidden, invalid, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { Collection } from '../store/collection.js';
import { PLATFORM_VERSION } from '../version.js';
import { isAdmin, type UserRecord } from '../auth/users.js';
import { assertPublicTarget } from '../dispatch/targets.js';
import type {
  CatalogReader,
  HandlerDirectory,
  Installation,
  StoredSubscription,
  SubscriberKind,
  Subscription,
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
export type Inactivity = 'subscription deleted' | 'extension not installed' | 'extension disabled' | null;

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
  private readonly signingKeys = new Map<string, Buffer>();

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
    return new WorkspaceService(collection, catalog, handlers, box, users, denyPrivateTargets);
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
  }

  // Installations

  listInstallations(workspaceId: string): Installation[] {
    this.get(workspaceId);
    return [...this.installations.values()].filter((installation) => installation.workspaceId === workspaceId);
  }

  async install(workspaceId: string, input: { extensionKey: string; version?: string | undefined }): Promise<Installation> {
    this.get(workspaceId);
    if (!this.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const version = input.version ?? this.catalog.latestVersion(input.extensionKey);
    if (version === null) throw conflict(`extension ${input.extensionKey} has no published version to install`);
    this.assertInstallable(input.extensionKey, version);
    const key = installationKey(workspaceId, input.extensionKey);
    const installation: Installation = {
      workspaceId,
      extensionKey: input.extensionKey,
      version,
      enabled: true,
      installedAt: new Date().toISOString(),
    };
    await this.collection.update((data) => {
      if (this.installations.has(key)) throw conflict(`${input.extensionKey} is already installed in ${workspaceId}`);
      data.installations.push(installation);
      this.installations.set(key, installation);
    });
    return installation;
  }

  /** Enable, disable, or move to another version (same rules as installing it). */
  async updateInstallation(
    workspaceId: string,
    extensionKey: string,
    change: { enabled?: boolean | undefined; version?: string | undefined },
  ): Promise<Installation> {
    const installation = this.installation(workspaceId, extensionKey);
    if (change.version !== undefined && change.version !== installation.version) {
      this.assertInstallable(extensionKey, change.version);
    }
    await this.collection.update(() => {
      if (change.version !== undefined) installation.version = change.version;
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

  /** Yanked versions cannot be newly installed; nor can versions needing a newer platform or SDK. */
  private assertInstallable(extensionKey: string, version: string): void {
    const record = this.catalog.versionRecord(extensionKey, version);
    if (record.yanked) {
      throw new DomainError('VERSION_YANKED', `${extensionKey}@${version} has been yanked and cannot be installed`);
    }
    for (const [requirement, required, ours] of [
      ['platform', record.requiresPlatform, PLATFORM_VERSION],
      ['plugin SDK', record.requiresSdk, SDK_VERSION],
    ] as const) {
      if (required !== null && semver.gt(required, ours)) {
        throw new DomainError(
          'INCOMPATIBLE_VERSION',
          `${extensionKey}@${version} requires ${requirement} ${required}; this daemon has ${ours}`,
        );
      }
    }
  }

  // Subscriptions

  listSubscriptions(workspaceId: string): Subscription[] {
    this.get(workspaceId);
    return [...this.subscriptions.values()].filter((s) => s.workspaceId === workspaceId).map(toPublicSubscription);
  }

  /** Returns the subscription with its signing secret: the only time the secret is shown. */
  async subscribe(workspaceId: string, input: NewSubscription): Promise<Subscription & { signingSecret: string }> {
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
      serviceBaseUrl,
      createdAt: new Date().toISOString(),
      sealedSigningSecret: this.box.seal(signingSecret),
    };
    await this.collection.update((data) => {
      const duplicate = (this.byTopic.get(topic(workspaceId, input.eventKey)) ?? []).some(
        (s) => s.extensionKey === input.extensionKey && s.kind === input.kind && s.serviceBaseUrl === serviceBaseUrl,
      );
      if (duplicate) throw conflict(`${input.extensionKey} is already subscribed to ${input.eventKey} in ${workspaceId}`);
      data.subscriptions.push(subscription);
      this.indexSubscription(subscription);
    });
    return { ...toPublicSubscription(subscription), signingSecret };
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
    const installation = this.installations.get(installationKey(subscription.workspaceId, subscription.extensionKey));
    if (!installation) return 'extension not installed';
    return installation.enabled ? null : 'extension disabled';
  }

  /** The HMAC key of a subscription: the base64-decoded part of its whsec_ secret. */
  signingKey(subscriptionId: string): Buffer | null {
    const cached = this.signingKeys.get(subscriptionId);
    if (cached) return cached;
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) return null;
    const key = Buffer.from(this.box.open(subscription.sealedSigningSecret).slice('whsec_'.length), 'base64');
    this.signingKeys.set(subscriptionId, key);
    return key;
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
    this.signingKeys.clear();
    for (const subscription of this.collection.data.subscriptions) this.indexSubscription(subscription);
  }

  private reindex(): void {
    const data = this.collection.data;
    this.workspaces = new Map(data.workspaces.map((workspace) => [workspace.id, workspace]));
    this.installations = new Map(data.installations.map((i) => [installationKey(i.workspaceId, i.extensionKey), i]));
    this.reindexSubscriptions();
  }
}

function toPublicSubscription(subscription: StoredSubscription): Subscription {
  const { sealedSigningSecret: _secret, ...visible } = subscription;
  return visible;
}
