import { randomBytes, randomUUID } from 'node:crypto';
import { invalid, notFound } from '../errors.js';
import type { SecretBox } from '../secrets/box.js';
import { DEFAULT_SUBSCRIPTION_PATH, deliveryUrlOf } from '../../contract/manifest.js';
import { assertPublicTarget } from '../dispatch/targets.js';
import { hasCredentials, maskCredentials, showsCredentials } from '../dispatch/url-credentials.js';
import type { ReadBack } from '../read-back.js';
import type { SubscriberRegistry } from './registry.js';
import { subscriptionNotFound, type WorkspaceStore } from './store.js';
import type { CatalogReader, HandlerDirectory, PublicSubscription, StoredSubscription, SubscriberKind } from './types.js';

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
 * Which extension receives which events of a workspace, and how: creating,
 * listing, moving, enabling and disabling subscriptions, rotating their
 * signing secrets, and disabling one whose deliveries keep failing. Every
 * write is read back into the SubscriberRegistry, which the dispatcher reads.
 */
export class SubscriptionService {
  /** What shows subscriptions live (the activity feed) hears of each one enabled or disabled here. */
  private readonly toggleListeners: Array<(subscription: PublicSubscription) => void> = [];

  constructor(
    private readonly store: WorkspaceStore,
    private readonly readBack: ReadBack<string>,
    private readonly subscribers: SubscriberRegistry,
    private readonly dependencies: {
      assertWorkspaceExists(workspaceId: string): Promise<void>;
      catalog: CatalogReader;
      handlers: HandlerDirectory;
      box: SecretBox;
      denyPrivateTargets: boolean;
    },
  ) {}

  /** A subscription was enabled or disabled by this daemon: by hand, or automatically (recordHealth). */
  onSubscriptionToggled(listener: (subscription: PublicSubscription) => void): void {
    this.toggleListeners.push(listener);
  }

  /** Data written before URL credentials (user information, then query strings) were sealed: sealed at open, so they are in clear nowhere after a start. */
  async sealClearCredentials(): Promise<void> {
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
    return { serviceBaseUrl: maskCredentials(url), sealedServiceBaseUrl: this.dependencies.box.seal(url) };
  }


  async listSubscriptions(workspaceId: string): Promise<PublicSubscription[]> {
    await this.dependencies.assertWorkspaceExists(workspaceId);
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
    await this.dependencies.assertWorkspaceExists(workspaceId);
    if (!this.dependencies.catalog.has(input.extensionKey)) throw notFound(`extension ${input.extensionKey} not found`);
    const { subscription, signingSecret } = await this.draft(workspaceId, input);
    const serviceBaseUrl = subscription.kind === 'EXTERNAL_SERVICE' ? input.serviceBaseUrl : null;
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

  /**
   * A new subscription, not yet stored, and its signing secret: the URL
   * checked (an http(s) URL, and a public one unless private targets are
   * allowed) and sealed when it has credentials; an in-process one only for
   * an event a plugin of the extension handles. Install wires a manifest's
   * subscriptions with it too.
   */
  async draft(workspaceId: string, input: NewSubscription & { deliveryPath?: string }): Promise<{ subscription: StoredSubscription; signingSecret: string }> {
    const serviceBaseUrl = input.kind === 'EXTERNAL_SERVICE' ? (input.serviceBaseUrl ?? null) : null;
    if (input.kind === 'EXTERNAL_SERVICE' && serviceBaseUrl === null) {
      throw invalid('serviceBaseUrl', `an EXTERNAL_SERVICE subscription (${input.extensionKey} to ${input.eventKey}) needs an http(s) serviceBaseUrl`);
    }
    if (serviceBaseUrl !== null && this.dependencies.denyPrivateTargets) {
      await assertPublicTarget(serviceBaseUrl).catch((error: Error) => {
        throw invalid('serviceBaseUrl', error.message);
      });
    }
    if (input.kind === 'IN_PROCESS' && !this.dependencies.handlers.declares(input.extensionKey, input.eventKey)) {
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
      sealedSigningSecret: this.dependencies.box.seal(signingSecret),
      ...(input.deliveryPath === undefined || input.deliveryPath === DEFAULT_SUBSCRIPTION_PATH ? {} : { deliveryPath: input.deliveryPath }),
    };
    return { subscription, signingSecret };
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
    await this.dependencies.assertWorkspaceExists(workspaceId);
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
      if (this.dependencies.denyPrivateTargets) {
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
    const sealed = this.dependencies.box.seal(signingSecret);
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
}

/** Shown with credentials: written before they were sealed, or (a query string) before they were masked. */
const hasClearCredentials = (subscription: StoredSubscription): boolean => showsCredentials(subscription.serviceBaseUrl);

export function toPublicSubscription(subscription: StoredSubscription): PublicSubscription {
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
    deliveryUrl: visible.serviceBaseUrl === null ? null : deliveryUrlOf(visible.serviceBaseUrl, visible.deliveryPath),
  };
}
