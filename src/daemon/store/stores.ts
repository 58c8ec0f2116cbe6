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
import { PostgresActivityLog } from './postgres/activity.js';
import { PostgresCatalogStore } from './postgres/catalog.js';
import { ChangeFeed } from './postgres/change-feed.js';
import { PostgresChatStore } from './postgres/chat.js';
import { openMigratedDatabase } from './postgres/connect.js';
import type { Database } from './postgres/database.js';
import { PostgresDeadLetterStore } from './postgres/dead-letters.js';
import { PostgresDeliveryStore } from './postgres/deliveries.js';
import { PostgresEventStore } from './postgres/events.js';
import { PostgresExtensionConfigStore } from './postgres/extension-config.js';
import { PostgresIdempotencyKeyStore } from './postgres/idempotency-keys.js';
import { PostgresJobLock } from './postgres/job-lock.js';
import { LeaseKeeper } from './postgres/lease-keeper.js';
import { PostgresLoginAttemptStore } from './postgres/login-attempts.js';
import { PostgresRevocationStore } from './postgres/revocations.js';
import { PostgresApiTokenStore } from './postgres/api-tokens.js';
import { PostgresUserStore } from './postgres/users.js';
import { PostgresWebhookReplayStore } from './postgres/webhook-replays.js';
import { PostgresWebhookRequestStore } from './postgres/webhook-requests.js';
import { PostgresWorkspaceStore } from './postgres/workspaces.js';
import { redactUrl, type DatabaseSettings } from '../database-settings.js';
import { StartupError } from '../errors.js';

/**
 * The persistence of every converted domain, from one backend. Domain services
 * receive these interfaces and never learn which backend is behind them; this
 * file is where one is picked.
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

/** The stores of a migrated PostgreSQL schema; closing them leaves the database and its feed open. */
export function postgresStores(database: Database, feed: ChangeFeed, options: StoreOptions = {}): Stores {
  const logError = options.logError ?? console.error;
  // One lease keeper per daemon: what a publish, a claim or a replay leases, it renews until the holder lets go.
  const leases = new LeaseKeeper(database, { leaseMs: options.deliveryLeaseMs ?? 30_000, logError });
  const deadLetters = new PostgresDeadLetterStore(database, leases);
  const deliveries = new PostgresDeliveryStore(database, feed, leases, { logError, deadLettersChanged: () => deadLetters.changed() });
  const events = new PostgresEventStore(database, feed, leases, { holdAtMost: options.holdDeliveriesAtMost ?? 256, logError });
  const activity = new PostgresActivityLog(database, feed, logError);
  const idempotencyKeys = new PostgresIdempotencyKeyStore(database, { leaseMs: options.deliveryLeaseMs ?? 30_000, logError });
  return {
    users: new PostgresUserStore(database, feed),
    revocations: new PostgresRevocationStore(database),
    apiTokens: new PostgresApiTokenStore(database),
    loginAttempts: new PostgresLoginAttemptStore(database, options.now),
    catalog: new PostgresCatalogStore(database, feed),
    chat: new PostgresChatStore(database, options.chat ?? DEFAULT_CHAT_LIMITS),
    webhookRequests: new PostgresWebhookRequestStore(database, logError),
    webhookReplays: new PostgresWebhookReplayStore(database, options.now),
    workspaces: new PostgresWorkspaceStore(database, feed),
    extensionConfig: new PostgresExtensionConfigStore(database, feed),
    events,
    deliveries,
    deadLetters,
    idempotencyKeys,
    jobLock: new PostgresJobLock(database),
    activity,
    async close() {
      leases.close();
      idempotencyKeys.close();
      await events.close();
      await deliveries.close();
      await activity.close();
    },
  };
}

/** A daemon's stores on PostgreSQL, with what the daemon does with the database itself. */
export interface DatabaseStores {
  stores: Stores;
  /** Why the database cannot serve now (null: it answered a query), for readiness. */
  fault(): Promise<string | null>;
  /** Closes the stores, the change feed and the pool. */
  close(): Promise<void>;
}

/**
 * Connects, migrates (under an advisory lock: of daemons starting together one
 * migrates, the others wait and find it done) and connects the change feed
 * before the domains load what they keep in memory: each then LISTENs as soon
 * as it subscribes, right after its load (see docs/decisions.md, Several daemons).
 */
export async function openDatabaseStores(
  settings: DatabaseSettings,
  options: StoreOptions & { logWarning: (message: string) => void },
): Promise<DatabaseStores> {
  const { database } = await openMigratedDatabase(settings, (error) =>
    options.logWarning(`an idle database connection failed (it is replaced when next needed): ${error.message}`),
  );
  const feed = new ChangeFeed(database, (error) =>
    options.logWarning(`the database change feed lost its connection (reconnecting every second): ${error.message}`),
  );
  try {
    await feed.start();
  } catch (error) {
    await database.close().catch(() => undefined);
    throw new StartupError(`database ${redactUrl(settings.url)}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const stores = postgresStores(database, feed, options);
  return {
    stores,
    async fault() {
      try {
        await database.query('SELECT 1');
        return null;
      } catch (error) {
        const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
        return `the database cannot be reached (${cause instanceof Error ? cause.message : String(cause)})`;
      }
    },
    async close() {
      await stores.close();
      await feed.close();
      await database.close();
    },
  };
}
