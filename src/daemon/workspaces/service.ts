import { randomBytes, randomUUID } from 'node:crypto';
import semver from 'semver';
import { conflict, forbidden, invalid, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { isAdmin, type UserRecord } from '../auth/users.js';
import { eventsUrl } from '../dispatch/external.js';
import { assertPublicTarget } from '../dispatch/targets.js';
import { hasCredentials, maskCredentials, showsCredentials } from '../dispatch/url-credentials.js';
import {
  alreadyInstalled,
  subscriptionNotFound,
  userNotFound,
  workspaceNotFound,
  type WorkspaceStore,
} from './store.js';
import { resolveVersion } from './versions.js';
import { ReadBack } from '../read-back.js';
import { SubscriberRegistry } from './registry.js';
import type { CatalogReader, HandlerDirectory, Installation, PublicSubscription, StoredSubscription, SubscriberKind, Workspace } from './types.js';

export interface NewSubscription {
  eventKey: string;
  extensionKey: string;
  kind: SubscriberKind;
  serviceBaseUrl?: string | undefined;
}

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

/**
 * Workspaces, their members, installed extensions and event subscriptions.
 *
 * Requests read the store: membership (checked on every request to a
 * workspace), workspaces, installations, subscriptions, and the subscriptions
 * an event goes to when it is published. So a change acknowledged by one
 * daemon holds for the next request to any other.
 *
 * The dispatcher asks at every attempt whether a subscriber is still active,
 * how to sign, and where to deliver; those answers come from memory, the
 * SubscriberRegistry (registry.ts), which this service reads back from the
 * store after each change this daemon makes and, through the store's change
 * feed, after each change another daemon makes. When publishing finds a
 * subscription that memory does not know as active yet, memory is read back
 * before the event's deliveries are queued.
 */
export class WorkspaceService {
  /** Every write goes through it, so that memory shows what the store holds. */
  private readonly readBack = new ReadBack<string>((key) => this.subscribers.reload(key));
  /** What else keeps records by workspace (dead letters) forgets a deleted one. */
  private readonly deletionListeners: Array<(workspaceId: string) => Promise<void>> = [];
  /** What holds on to a membership (live streams) checks it again at once. */
  private readonly accessListeners: Array<(userId: string | null) => void> = [];
  /** What shows subscriptions live (the activity feed) hears of each one enabled or disabled here. */
  private readonly toggleListeners: Array<(subscription: PublicSubscription) => void> = [];

  private constructor(
    private readonly store: WorkspaceStore,
    /** What the dispatcher reads: this service keeps it in step with the store. */
    readonly subscribers: SubscriberRegistry,
    private readonly catalog: CatalogReader,
    private readonly handlers: HandlerDirectory,
    private readonly box: SecretBox,
    private readonly users: { get(id: string): Promise<unknown> },
    private readonly denyPrivateTargets: boolean,
  ) {}

  static async open(
    store: WorkspaceStore,
    dependencies: {
      catalog: CatalogReader;
      handlers: HandlerDirectory;
      box: SecretBox;
      users: { get(id: string): Promise<unknown> };
      denyPrivateTargets: boolean;
    },
  ): Promise<WorkspaceService> {
    const { catalog, handlers, box, users, denyPrivateTargets } = dependencies;
    const subscribers = new SubscriberRegistry(store, box);
    const service = new WorkspaceService(store, subscribers, catalog, handlers, box, users, denyPrivateTargets);
    await subscribers.reload(null);
    store.onChange((workspaceId) => void subscribers.reload(workspaceId).catch(() => undefined));
    await service.sealClearCredentials();
    return service;
  }

  /** Data written before URL credentials (user information, then query strings) were sealed: sealed at open, so they are in clear nowhere after a start. */
  private async sealClearCredentials(): Promise<void> {
    const clear = [...this.subscribers.all()].filter(hasClearCredentials);
    await Promise.all(
      clear.map(({ workspaceId, id }) =>
        this.readBack.storing(
          workspaceId,
          this.store.updateSubscription(workspaceId, id, (current) =>
            hasClearCredentials(current) ? { ...current, ...this.storedUrl(this.subscribers.fullUrl(current)!) } : null,
          ),
        ),
      ),
    );
  }

  /** How a subscriber URL is stored: masked for display, sealed in full when it has credentials. */
  private storedUrl(url: string): Pick<StoredSubscription, 'serviceBaseUrl' | 'sealedServiceBaseUrl'> {
    if (!hasCredentials(url)) return { serviceBaseUrl: url };
    return { serviceBaseUrl: maskCredentials(url), sealedServiceBaseUrl: this.box.seal(url) };
  }

  // Workspaces and members

  async create(input: { id: string; name: string }): Promise<Workspace> {
    const workspace: Workspace = { id: input.id, name: input.name, members: [], createdAt: new Date().toISOString() };
    await this.store.createWorkspace(workspace);
    return workspace;
  }

  async get(id: string): Promise<Workspace> {
    const workspace = await this.store.getWorkspace(id);
    if (!workspace) throw workspaceNotFound(id);
    return workspace;
  }

  /** 404 unless the workspace exists. */
  async assertExists(id: string): Promise<void> {
    if (!(await this.store.hasWorkspace(id))) throw workspaceNotFound(id);
  }

  exists(id: string): Promise<boolean> {
    return this.store.hasWorkspace(id);
  }

  rename(id: string, name: string): Promise<Workspace> {
    return this.store.renameWorkspace(id, name);
  }

  /**
   * Refused while extensions are installed, unless forced: then its
   * installations and subscriptions go with it (pending deliveries to them end
   * as for a deleted subscription), and the deletion listeners (dead letters)
   * run. Recorded events stay in the event log until retention removes them.
   */
  async delete(id: string, force: boolean): Promise<void> {
    await this.readBack.storing(id, this.store.deleteWorkspace(id, force));
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

  /** A subscription was enabled or disabled by this daemon: by hand, or automatically (recordHealth). */
  onSubscriptionToggled(listener: (subscription: PublicSubscription) => void): void {
    this.toggleListeners.push(listener);
  }

  /** ADMIN: every workspace; anyone else: those they are a member of. */
  visibleTo(user: UserRecord): Promise<Workspace[]> {
    return isAdmin(user) ? this.store.listWorkspaces() : this.store.listWorkspaces(user.id);
  }

  /** 403 unless ADMIN or a member. Runs before validation, so the id may be anything. */
  async assertMember(user: UserRecord, workspaceId: string | undefined): Promise<void> {
    if (isAdmin(user)) return;
    if (workspaceId === undefined || !(await this.store.isMember(workspaceId, user.id))) {
      throw forbidden('this needs the ADMIN role or membership of the workspace');
    }
  }

  async addMember(workspaceId: string, userId: string): Promise<Workspace> {
    await this.assertExists(workspaceId); // an unknown workspace is the 404 first
    if (!(await this.users.get(userId))) throw userNotFound(userId);
    return this.store.addMember(workspaceId, userId);
  }

  async removeMember(workspaceId: string, userId: string): Promise<void> {
    await this.store.removeMember(workspaceId, userId);
    for (const listener of this.accessListeners) listener(userId);
  }

  /** A deleted user leaves every workspace. */
  forgetMember(userId: string): Promise<void> {
    return this.store.removeMemberEverywhere(userId);
  }

  // Installations

  async listInstallations(workspaceId: string): Promise<Installation[]> {
    await this.assertExists(workspaceId);
    return this.store.listInstallations(workspaceId);
  }

  async install(workspaceId: string, input: { extensionKey: string; version?: string | undefined }): Promise<Installation> {
    await this.assertExists(workspaceId);
    if (await this.store.getInstallation(workspaceId, input.extensionKey)) throw alreadyInstalled(workspaceId, input.extensionKey);
    if (!this.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const version = resolveVersion(this.catalog, input.extensionKey, input.version);
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
    await this.assertExists(workspaceId);
    const updating = this.store.updateInstallation(workspaceId, extensionKey, (current) => {
      const version =
        change.version === undefined || change.version === current.version ? current.version : resolveVersion(this.catalog, extensionKey, change.version);
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
    await this.assertExists(workspaceId);
    await this.readBack.storing(workspaceId, this.store.uninstall(workspaceId, extensionKey));
  }

  // Subscriptions

  async listSubscriptions(workspaceId: string): Promise<PublicSubscription[]> {
    await this.assertExists(workspaceId);
    return (await this.store.listSubscriptions(workspaceId)).map(toPublicSubscription);
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
    await this.assertExists(workspaceId);
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
      enabled: true,
      disabledReason: null,
      sealedSigningSecret: this.box.seal(signingSecret),
    };
    // The same subscriber once; URLs compare with their credentials.
    const isDuplicate = (other: StoredSubscription) =>
      other.extensionKey === input.extensionKey && other.kind === input.kind && this.subscribers.fullUrl(other) === serviceBaseUrl;
    // Read before the write: once the subscription is stored, no failure may answer as if it were not.
    const warnings = (await this.store.getInstallation(workspaceId, input.extensionKey))
      ? []
      : [`${input.extensionKey} is not installed in ${workspaceId}: nothing is delivered to this subscription until it is`];
    await this.readBack.storing(workspaceId, this.store.subscribe(subscription, isDuplicate));
    return { subscription: { ...toPublicSubscription(subscription), signingSecret }, warnings };
  }

  async unsubscribe(workspaceId: string, subscriptionId: string): Promise<void> {
    await this.readBack.storing(workspaceId, this.store.unsubscribe(workspaceId, subscriptionId));
  }

  /** Subscriptions for (workspace, event key) whose extension is installed and enabled: the dispatch list. */
  async activeSubscriptions(workspaceId: string, eventKey: string): Promise<readonly StoredSubscription[]> {
    const active = await this.store.activeSubscriptions(workspaceId, eventKey);
    // Their attempts ask memory, which may not have heard yet of a change another daemon made a moment ago.
    if (active.some((subscription) => this.subscribers.inactivity(subscription.id) !== null)) await this.subscribers.reload(workspaceId);
    return active;
  }

  /** A subscription of this workspace, read from the store, or 404. */
  private async subscriptionOf(workspaceId: string, subscriptionId: string): Promise<StoredSubscription> {
    await this.assertExists(workspaceId);
    const subscription = await this.store.getSubscription(workspaceId, subscriptionId);
    if (!subscription) throw subscriptionNotFound(workspaceId, subscriptionId);
    return subscription;
  }

  /** Public view of one subscription of the workspace (404 otherwise). */
  async subscription(workspaceId: string, subscriptionId: string): Promise<PublicSubscription> {
    const subscription = await this.subscriptionOf(workspaceId, subscriptionId);
    // A test delivery to it is attempted with what memory knows: one created a moment ago on another daemon is read back first.
    if (!this.subscribers.get(subscriptionId)) await this.subscribers.reload(workspaceId);
    return toPublicSubscription(subscription);
  }

  /** Enables or disables (re-enabling clears the reason and the failure streak), or moves the subscriber. */
  async updateSubscription(workspaceId: string, subscriptionId: string, change: SubscriptionChange): Promise<PublicSubscription> {
    const subscription = await this.subscriptionOf(workspaceId, subscriptionId);
    const url = change.serviceBaseUrl;
    if (url !== undefined) {
      if (subscription.kind !== 'EXTERNAL_SERVICE') throw invalid('serviceBaseUrl', 'only an EXTERNAL_SERVICE subscription has a serviceBaseUrl');
      if (this.denyPrivateTargets) {
        await assertPublicTarget(url).catch((error: Error) => {
          throw invalid('serviceBaseUrl', error.message);
        });
      }
    }
    let toggled = false;
    const updating = this.store.updateSubscription(workspaceId, subscriptionId, (current) => {
      let next = current;
      toggled = change.enabled !== undefined && change.enabled !== (current.enabled !== false);
      if (url !== undefined) {
        const { sealedServiceBaseUrl: _replaced, ...rest } = next;
        next = { ...rest, ...this.storedUrl(url) };
      }
      if (change.enabled === true) {
        const { failingSince: _forgiven, ...rest } = next;
        next = { ...rest, enabled: true, disabledReason: null };
      } else if (change.enabled === false && next.enabled !== false) {
        next = { ...next, enabled: false, disabledReason: 'disabled by an administrator' };
      }
      return next === current ? null : next;
    });
    const updated = toPublicSubscription(await this.readBack.storing(workspaceId, updating));
    if (toggled) this.toggled(updated);
    return updated;
  }

  /** A new signing secret; the previous one keeps signing for `overlapMs`. Returns the new secret (shown once). */
  async rotateSecret(workspaceId: string, subscriptionId: string, overlapMs: number, now: number): Promise<{ signingSecret: string }> {
    await this.subscriptionOf(workspaceId, subscriptionId);
    const signingSecret = `whsec_${randomBytes(32).toString('base64')}`;
    const sealed = this.box.seal(signingSecret);
    const rotating = this.store.updateSubscription(workspaceId, subscriptionId, (current) => ({
      ...current,
      sealedPreviousSigningSecret: current.sealedSigningSecret,
      previousSecretUntil: now + overlapMs,
      sealedSigningSecret: sealed,
    }));
    await this.readBack.storing(workspaceId, rotating);
    return { signingSecret };
  }

  /**
   * An attempt's result for automatic disabling: a failure starts (or continues)
   * a streak, a success ends it. Returns the reason when this failure disabled
   * the subscription: its streak has lasted `disableAfterMs`. Memory answers
   * when nothing changes (most attempts); a change is decided again on the
   * stored subscription, so that of several daemons failing at once one
   * disables it.
   */
  async recordHealth(subscriptionId: string, succeeded: boolean, now: number, disableAfterMs: number): Promise<DisabledSubscription | null> {
    const known = this.subscribers.get(subscriptionId);
    if (!known || known.enabled === false) return null;
    if (succeeded ? known.failingSince === undefined : known.failingSince !== undefined && now - known.failingSince < disableAfterMs) return null;
    let disabled: DisabledSubscription | null = null;
    const recording = this.store.updateSubscription(known.workspaceId, subscriptionId, (current) => {
      if (current.enabled === false) return null;
      if (succeeded) {
        if (current.failingSince === undefined) return null;
        const { failingSince: _ended, ...rest } = current;
        return rest;
      }
      if (current.failingSince === undefined) return { ...current, failingSince: now };
      if (now - current.failingSince < disableAfterMs) return null;
      const reason = `every delivery failed since ${new Date(current.failingSince).toISOString()}`;
      disabled = { subscriptionId, workspaceId: current.workspaceId, extensionKey: current.extensionKey, reason };
      return { ...current, enabled: false, disabledReason: reason };
    });
    let stored: StoredSubscription;
    try {
      stored = await this.readBack.storing(known.workspaceId, recording);
    } catch (error) {
      // Deleted meanwhile: nothing to record.
      if ((error as { code?: unknown }).code === 'NOT_FOUND') return null;
      throw error;
    }
    if (disabled) this.toggled(toPublicSubscription(stored));
    return disabled;
  }

  private toggled(subscription: PublicSubscription): void {
    for (const listener of this.toggleListeners) listener(subscription);
  }

  /** Stops read-backs still to be retried: the stores are about to close. */
  close(): void {
    this.readBack.close();
  }

}

/** Shown with credentials: written before they were sealed, or (a query string) before they were masked. */
const hasClearCredentials = (subscription: StoredSubscription): boolean => showsCredentials(subscription.serviceBaseUrl);

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
