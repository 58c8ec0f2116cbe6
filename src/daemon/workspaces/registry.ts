import type { SecretBox } from '../secrets/box.js';
import { credentialsOf, redactSecrets } from '../dispatch/url-credentials.js';
import { deliveryUrlOf } from '../../contract/manifest.js';
import type { WorkspaceContents, WorkspaceStore } from './store.js';
import { inactivityOf, type Inactivity, type StoredInstallation, type StoredSubscription } from './types.js';

/** What memory holds of one workspace for the dispatcher. */
interface Held {
  /** By extension key. */
  installations: Map<string, StoredInstallation>;
  subscriptions: StoredSubscription[];
}

/**
 * The installations and subscriptions of every workspace, in memory, for the
 * dispatcher: whether a subscriber is active, how to sign its deliveries,
 * where they go, and what of its credentials to mask in what it answers. The
 * workspace service reads it back from the store after each change it makes,
 * and after each change another daemon makes (the store's change feed).
 * Secrets are decrypted once and cached while their sealed values stay.
 */
export class SubscriberRegistry {
  private readonly held = new Map<string, Held>();
  /** Every held subscription by id. */
  private readonly subscriptions = new Map<string, StoredSubscription>();
  /** Read-backs from the store, one at a time, in the order asked for. */
  private reloads: Promise<void> = Promise.resolve();
  /** Decrypted signing keys, so that signing a delivery never decrypts; valid while the sealed secrets are the ones decrypted. */
  private readonly keyCache = new Map<string, { sealed: string; sealedPrevious: string | undefined; current: Buffer; previous: Buffer | null }>();
  /** Decrypted subscriber URLs that carry credentials (user information or a query string), with the sealed URL they came from. */
  private readonly deliveryUrls = new Map<string, { sealed: string; url: string }>();
  private readonly fullDeliveryUrls = new Map<string, { of: StoredSubscription; url: string }>();
  /** What a subscriber could echo of its subscription's credentials, valid while its sealed values are the ones decrypted. */
  private readonly credentialCache = new Map<string, { sealed: string[]; credentials: string[] }>();

  constructor(
    private readonly store: Pick<WorkspaceStore, 'contents'>,
    private readonly box: SecretBox,
  ) {}

  /** A held subscription by id. */
  get(subscriptionId: string): StoredSubscription | undefined {
    return this.subscriptions.get(subscriptionId);
  }

  /** Every held subscription. */
  all(): IterableIterator<StoredSubscription> {
    return this.subscriptions.values();
  }

  /** Why deliveries to this subscription are refused now (null: active); checked before every attempt and replay. */
  inactivity(subscriptionId: string): Inactivity {
    const subscription = this.subscriptions.get(subscriptionId);
    return inactivityOf(subscription, subscription && this.held.get(subscription.workspaceId)?.installations.get(subscription.extensionKey));
  }

  /**
   * The HMAC keys a delivery is signed with (the base64-decoded part of the
   * whsec_ secret): the current one, and the previous one during the overlap
   * after a rotation. Empty for a deleted subscription.
   */
  signingKeys(subscriptionId: string, now: number): Buffer[] {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) return [];
    const { sealedSigningSecret: sealed, sealedPreviousSigningSecret: sealedPrevious } = subscription;
    let cached = this.keyCache.get(subscriptionId);
    if (!cached || cached.sealed !== sealed || cached.sealedPrevious !== sealedPrevious) {
      const decode = (secret: string) => Buffer.from(this.box.open(secret).slice('whsec_'.length), 'base64');
      cached = { sealed, sealedPrevious, current: decode(sealed), previous: sealedPrevious ? decode(sealedPrevious) : null };
      this.keyCache.set(subscriptionId, cached);
    }
    const overlapping = cached.previous !== null && (subscription.previousSecretUntil ?? 0) > now;
    return overlapping ? [cached.current, cached.previous!] : [cached.current];
  }

  /** Where deliveries of a subscription go (its URL and delivery path), credentials included; null for a deleted or in-process one. */
  deliveryUrl(subscriptionId: string): string | null {
    const subscription = this.subscriptions.get(subscriptionId);
    if (!subscription) return null;
    const cached = this.fullDeliveryUrls.get(subscriptionId);
    // Subscriptions are replaced, never changed in place: the same object has the same URL.
    if (cached?.of === subscription) return cached.url;
    const base = this.fullUrl(subscription);
    if (base === null) return null;
    const url = deliveryUrlOf(base, subscription.deliveryPath);
    this.fullDeliveryUrls.set(subscriptionId, { of: subscription, url });
    return url;
  }

  /** A subscription's URL with its credentials (decrypted once, while its sealed URL stays the same). */
  fullUrl(subscription: StoredSubscription): string | null {
    const sealed = subscription.sealedServiceBaseUrl;
    if (!sealed) return subscription.serviceBaseUrl;
    const cached = this.deliveryUrls.get(subscription.id);
    if (cached?.sealed === sealed) return cached.url;
    const url = this.box.open(sealed);
    if (this.subscriptions.get(subscription.id)?.sealedServiceBaseUrl === sealed) this.deliveryUrls.set(subscription.id, { sealed, url });
    return url;
  }

  /**
   * Masks texts the subscriber sent (a response excerpt, its headers): the
   * credentials of its subscription, the user information and query string
   * of its URL and its signing secrets, current and previous, become `****`.
   * Made once per attempt and applied to each text. A subscription this
   * daemon does not hold (deleted) leaves texts as they are.
   */
  credentialMaskOf(subscriptionId: string | null): (text: string) => string {
    const subscription = subscriptionId === null ? undefined : this.subscriptions.get(subscriptionId);
    if (!subscription) return (text) => text;
    const { sealedServiceBaseUrl, sealedSigningSecret, sealedPreviousSigningSecret } = subscription;
    const sealed = [sealedServiceBaseUrl ?? '', sealedSigningSecret, sealedPreviousSigningSecret ?? ''];
    let cached = this.credentialCache.get(subscription.id);
    if (!cached || cached.sealed.some((value, index) => value !== sealed[index])) {
      const signingSecrets = [sealedSigningSecret, sealedPreviousSigningSecret].flatMap((secret) => (secret ? [this.box.open(secret)] : []));
      cached = { sealed, credentials: credentialsOf(this.fullUrl(subscription), signingSecrets) };
      this.credentialCache.set(subscription.id, cached);
    }
    const { credentials } = cached;
    return (text) => redactSecrets(text, credentials);
  }

  /**
   * Brings one workspace's installations and subscriptions (null: every
   * workspace's) in memory up to the store. Read-backs run one after the
   * other, each reading after the previous one finished, so the last one asked
   * for leaves the latest state.
   */
  reload(workspaceId: string | null): Promise<void> {
    const next = this.reloads.then(async () => this.hold(workspaceId, await this.store.contents(workspaceId)));
    // One failed read (the database away) must not stop the read-backs after it.
    this.reloads = next.catch(() => undefined);
    return next;
  }

  /** Replaces what memory holds of one workspace (null: of every workspace) with `contents`. */
  private hold(workspaceId: string | null, contents: WorkspaceContents): void {
    const replaced: string[] = [];
    for (const id of workspaceId === null ? [...this.held.keys()] : [workspaceId]) {
      for (const subscription of this.held.get(id)?.subscriptions ?? []) {
        this.subscriptions.delete(subscription.id);
        replaced.push(subscription.id);
      }
      this.held.delete(id);
    }
    const heldOf = (id: string) => {
      let held = this.held.get(id);
      if (!held) this.held.set(id, (held = { installations: new Map(), subscriptions: [] }));
      return held;
    };
    for (const installation of contents.installations) heldOf(installation.workspaceId).installations.set(installation.extensionKey, installation);
    for (const subscription of contents.subscriptions) {
      heldOf(subscription.workspaceId).subscriptions.push(subscription);
      this.subscriptions.set(subscription.id, subscription);
    }
    // Decrypted values of subscriptions that are gone go with them.
    for (const id of replaced) {
      if (this.subscriptions.has(id)) continue;
      this.keyCache.delete(id);
      this.deliveryUrls.delete(id);
      this.fullDeliveryUrls.delete(id);
      this.credentialCache.delete(id);
    }
  }
}
