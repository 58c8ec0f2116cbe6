import type { SecretBox } from '../secrets/box.js';
import { ReadBack } from '../read-back.js';
import { InstallationService } from './installations.js';
import { SubscriberRegistry } from './registry.js';
import { WorkspaceService } from './service.js';
import type { WorkspaceStore } from './store.js';
import { SubscriptionService } from './subscriptions.js';
import type { CatalogReader, HandlerDirectory } from './types.js';

export interface WorkspaceServices {
  workspaces: WorkspaceService;
  installations: InstallationService;
  subscriptions: SubscriptionService;
  /** What the dispatcher reads: kept in step with the store by the services above. */
  subscribers: SubscriberRegistry;
  /** Stops read-backs still to be retried: the stores are about to close. */
  close(): void;
}

/**
 * The services of workspaces, on one store, as a daemon builds them.
 *
 * Requests read the store: membership, workspaces, installations,
 * subscriptions, and the subscriptions an event goes to when it is published.
 * The dispatcher asks at every attempt whether a subscriber is still active,
 * how to sign and where to deliver; those answers come from memory, the
 * SubscriberRegistry, which every write of these services reads back from the
 * store (one ReadBack, shared) and which the store's change feed reloads after
 * each change another daemon makes. When publishing finds a subscription that
 * memory does not know as active yet, memory is read back before the event's
 * deliveries are queued.
 */
export async function openWorkspaceServices(
  store: WorkspaceStore,
  dependencies: {
    catalog: CatalogReader;
    handlers: HandlerDirectory;
    box: SecretBox;
    users: { get(id: string): Promise<unknown> };
    denyPrivateTargets: boolean;
    /** The configuration fields set for an extension (an installation reports the required ones missing). */
    configuredNames(extensionKey: string): readonly string[];
    /** An extension's configuration, SECRET values decrypted (what its installation token reads). */
    configurationOf(extensionKey: string): Readonly<Record<string, unknown>>;
  },
): Promise<WorkspaceServices> {
  const { catalog, handlers, box, users, denyPrivateTargets } = dependencies;
  const subscribers = new SubscriberRegistry(store, box);
  const readBack = new ReadBack<string>((workspaceId) => subscribers.reload(workspaceId));
  const workspaces = new WorkspaceService(store, readBack, users);
  const assertWorkspaceExists = (workspaceId: string) => workspaces.assertExists(workspaceId);
  const subscriptions = new SubscriptionService(store, readBack, subscribers, { assertWorkspaceExists, catalog, handlers, box, denyPrivateTargets });
  const installations = new InstallationService(store, readBack, {
    assertWorkspaceExists,
    catalog,
    subscriptions,
    fullUrlOf: (subscription) => subscribers.fullUrl(subscription),
    configuredNames: dependencies.configuredNames,
    configurationOf: dependencies.configurationOf,
  });
  await subscribers.reload(null);
  store.onChange((workspaceId) => void subscribers.reload(workspaceId).catch(() => undefined));
  await subscriptions.sealClearCredentials();
  return { workspaces, installations, subscriptions, subscribers, close: () => readBack.close() };
}
