import type { LoginAttemptStore } from '../auth/throttle.js';
import type { RevocationStore } from '../auth/tokens.js';
import type { ApiTokenStore } from '../auth/api-tokens.js';
import type { UserStore } from '../auth/users.js';
import type { CatalogStore } from '../catalog/store.js';
import { DEFAULT_CHAT_LIMITS, type ChatLimits, type ChatStore } from '../chat/store.js';
import type { DeadLetterStore, DeliveryStore } from '../dispatch/store.js';
import { describeFault } from '../errors.js';
import type { ActivityLog } from '../events/activity.js';
import { DEFAULT_MAX_KEPT_KEYS, type IdempotencyKeyStore } from '../events/idempotency.js';
import type { EventStore } from '../events/store.js';
import type { ExtensionConfigStore } from '../extension-config/store.js';
import type { JobLock } from '../jobs.js';
import type { WebhookReplayStore } from '../webhooks/replays.js';
import type { WebhookRequestStore } from '../webhooks/request-log.js';
import type { WorkspaceStore } from '../workspaces/store.js';
import { MemoryActivityLog } from './file/activity.js';
import { FileCatalogStore } from './file/catalog.js';
import { FileChatStore } from './file/chat.js';
import { openFileDispatch, type FileDispatchOptions } from './file/dispatch.js';
import { FileExtensionConfigStore } from './file/extension-config.js';
import { FileIdempotencyKeyStore } from './file/idempotency-keys.js';
import { MemoryLoginAttemptStore } from './file/login-attempts.js';
import { FileRevocationStore } from './file/revocations.js';
import { FileApiTokenStore } from './file/api-tokens.js';
import { FileUserStore } from './file/users.js';
import { MemoryWebhookReplayStore } from './file/webhook-replays.js';
import { FileWebhookRequestStore } from './file/webhook-requests.js';
import { FileWorkspaceStore } from './file/workspaces.js';

/**
 * The persistence of every converted domain, from one backend. Domain services
 * receive these interfaces and never learn which backend is behind them. This
 * file opens the data directory's; postgres/stores.ts opens PostgreSQL's, and
 * is loaded only when a database is configured: a daemon on files has no use
 * for the pg driver and the PostgreSQL stores.
 */
export interface Stores {
  users: UserStore;
  revocations: RevocationStore;
  apiTokens: ApiTokenStore;
  loginAttempts: LoginAttemptStore;
  catalog: CatalogStore;
  chat: ChatStore;
  webhookRequests: WebhookRequestStore;
  webhookReplays: WebhookReplayStore;
  workspaces: WorkspaceStore;
  extensionConfig: ExtensionConfigStore;
  /** The event log; publishing makes an event and its pending deliveries durable together. */
  events: EventStore;
  /** Pending deliveries (the outbox) and every delivery's record. */
  deliveries: DeliveryStore;
  deadLetters: DeadLetterStore;
  /** The `Idempotency-Key`s of publishes, claimed and kept. */
  idempotencyKeys: IdempotencyKeyStore;
  /** What a scheduled job runs under, so that one daemon at a time runs it. */
  jobLock: JobLock;
  /** What live streams show and resume from: ids, and the kept history, shared by every daemon on the backend. */
  activity: ActivityLog;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}

/** Tests run time forward with `now`; the daemon uses the wall clock. */
export interface StoreOptions {
  now?: () => number;
  /** Where a store reports a write that failed with no request waiting for it (a webhook request log entry); the daemon logs it. */
  logError?: (message: string) => void;
  /** Files: what the event log keeps in memory, and whether deliveries are recorded (the bench turns it off). */
  events?: Omit<FileDispatchOptions, 'reportError'>;
  /** What chat keeps (default DEFAULT_CHAT_LIMITS). */
  chat?: ChatLimits;
  /** PostgreSQL: PLATFORM_DELIVERY_LEASE in ms (default 30 s); also the lease of an idempotency key's claim. */
  deliveryLeaseMs?: number;
  /** Files: PLATFORM_IDEMPOTENCY_MAX_KEYS (default DEFAULT_MAX_KEPT_KEYS). */
  idempotencyMaxKeys?: number;
  /** PostgreSQL: external deliveries a daemon keeps for itself as it publishes them (default 256); more go to the shared queue for any daemon. */
  holdDeliveriesAtMost?: number;
}

/** The daemon holds the data directory's lock: no other runs a job on it. */
const ALONE_ON_FILES: JobLock = {
  async runAlone(_jobName, work) {
    await work();
    return true;
  },
};

/** The stores of the data directory, with what only files have. */
export interface FileStores extends Stores {
  /** Bytes of event JSON the event log keeps in memory for listing (bounded by the recent-events budget). */
  recentEventBytes(): number;
}

/** The data directory's stores (the default backend). */
export async function openFileStores(dataDir: string, options: StoreOptions = {}): Promise<FileStores> {
  const logError = options.logError ?? console.error;
  // Closed last first, on close or when a later store refuses to open: a start that fails leaves no file open.
  const opened: Array<{ close(): Promise<void> }> = [];
  const closeOpened = async () => {
    for (const store of opened.reverse()) await store.close();
  };
  const open = async <T extends { close(): Promise<void> }>(store: Promise<T>): Promise<T> => {
    const ready = await store;
    opened.push(ready);
    return ready;
  };
  try {
    const users = await open(FileUserStore.open(dataDir));
    const revocations = await open(FileRevocationStore.open(dataDir));
    const apiTokens = await open(FileApiTokenStore.open(dataDir));
    const catalog = await open(FileCatalogStore.open(dataDir));
    const chat = await open(FileChatStore.open(dataDir, options.chat ?? DEFAULT_CHAT_LIMITS));
    const webhookRequests = await open(FileWebhookRequestStore.open(dataDir, logError));
    const workspaces = await open(FileWorkspaceStore.open(dataDir));
    const extensionConfig = await open(FileExtensionConfigStore.open(dataDir));
    const dispatch = await openFileDispatch(dataDir, { ...options.events, reportError: (error) => logError(describeFault(error)) });
    opened.push(dispatch.events);
    const idempotencyKeys = await open(
      FileIdempotencyKeyStore.open(dataDir, {
        maxKeys: options.idempotencyMaxKeys ?? DEFAULT_MAX_KEPT_KEYS,
        eventRecorded: async (workspaceId, eventId) => (await dispatch.events.find(workspaceId, eventId)) !== undefined,
        reportError: (error) => logError(describeFault(error)),
        ...(options.now ? { now: options.now } : {}),
      }),
    );
    return {
      users,
      revocations,
      apiTokens,
      loginAttempts: new MemoryLoginAttemptStore(options.now),
      catalog,
      chat,
      webhookRequests,
      webhookReplays: new MemoryWebhookReplayStore(options.now),
      workspaces,
      extensionConfig,
      events: dispatch.events,
      deliveries: dispatch.deliveries,
      deadLetters: dispatch.deadLetters,
      idempotencyKeys,
      recentEventBytes: dispatch.recentEventBytes,
      jobLock: ALONE_ON_FILES,
      activity: new MemoryActivityLog(options.now),
      close: closeOpened,
    };
  } catch (error) {
    await closeOpened().catch(() => undefined);
    throw error;
  }
}
