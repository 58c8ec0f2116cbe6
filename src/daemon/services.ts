import { hkdfSync } from 'node:crypto';
import { join } from 'node:path';
import type { DaemonConfig } from './config.js';
import { AuthService } from './auth/service.js';
import { PasswordHasher } from './auth/passwords.js';
import { LoginThrottle } from './auth/throttle.js';
import { TokenService } from './auth/tokens.js';
import { UserNames } from './auth/names.js';
import { CatalogService } from './catalog/service.js';
import { admitChatMessage, ChatService, postChatMessage } from './chat/service.js';
import { DeadLetterService } from './dispatch/dead-letter-service.js';
import { Dispatcher } from './dispatch/dispatcher.js';
import { ActivityFeed } from './events/activity.js';
import { IdempotentPublishing } from './events/idempotency.js';
import { EventService } from './events/service.js';
import { ExtensionConfigService } from './extension-config/service.js';
import type { JobLock, ScheduledJob } from './jobs.js';
import type { Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { LiveStreams } from './http/live-streams.js';
import { sessionCookieName } from './http/endpoint.js';
import { PluginRegistry } from './plugins/registry.js';
import { Readiness } from './readiness.js';
import { SecretBox } from './secrets/box.js';
import { readOrCreateSecret } from './store/secret-file.js';
import { openFileStores, type Stores } from './store/stores.js';
import { WebhookService } from './webhooks/service.js';
import type { InstallationService } from './workspaces/installations.js';
import { openWorkspaceServices } from './workspaces/open.js';
import type { WorkspaceService } from './workspaces/service.js';
import type { SubscriptionService } from './workspaces/subscriptions.js';
import { createChatPlugin } from '../handlers/chat/index.js';
import { BUILT_IN_EVENT_TYPES } from './events/built-in-types.js';
import { ApiTokenService } from './auth/api-tokens.js';
import { MAX_TOKENS_PER_USER } from '../contract/requests.js';

/** Every domain service of a running daemon. Route modules take what they need. */
export interface Services {
  auth: AuthService;
  catalog: CatalogService;
  workspaces: WorkspaceService;
  installations: InstallationService;
  subscriptions: SubscriptionService;
  events: EventService;
  /** Publishes that carry an `Idempotency-Key`: the first publishes, the others answer as it did. */
  idempotency: IdempotentPublishing;
  /** Runs deliveries; publishing hands them over, the daemon starts and stops it. */
  dispatcher: Dispatcher;
  deadLetters: DeadLetterService;
  chat: ChatService;
  plugins: PluginRegistry;
  extensionConfig: ExtensionConfigService;
  webhooks: WebhookService;
  metrics: Metrics;
  /** Published events and delivery outcomes as they happen, for live streams. */
  activity: ActivityFeed;
  /** The open live streams (built once: each listens to changes of access). */
  streams: LiveStreams;
  /** Whether storage takes writes and the dispatcher runs, for /api/health/ready. */
  readiness: Readiness;
  /** The master keyring: it seals secrets at rest and signs backup manifests. */
  box: SecretBox;
  /** On files: bytes of event JSON the event log keeps in memory for listing (tests check its budget); null on PostgreSQL, which keeps none. */
  recentEventBytes: (() => number) | null;
  startedAt: number;
}

export interface OpenedServices {
  services: Services;
  jobs: ScheduledJob[];
  /** What each run of a job takes first: on PostgreSQL one daemon at a time runs a job. */
  jobLock: JobLock;
  /** Starts the background loops; answers how many pending deliveries a previous run left to this daemon (PostgreSQL: none, they are the cluster's). */
  start(): Promise<number>;
  /** Stops the background loops; deliveries in flight stay pending for the next start. */
  stop(): Promise<void>;
  /** Flushes every store and stops workers; safe to call once. */
  close(): Promise<void>;
}

export async function openServices(config: DaemonConfig, logger: Logger): Promise<OpenedServices> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer();
  };
  try {
    const box = await SecretBox.open(config.dataDir, config.masterKey);
    // The one place the backend is chosen.
    let stores: Stores;
    /** On PostgreSQL: why the database cannot serve now (null: it can), for readiness; null on files. */
    let databaseFault: (() => Promise<string | null>) | null = null;
    let recentEventBytes: Services['recentEventBytes'] = null;
    const storeOptions = {
      logError: (message: string) => logger.error(message),
      events: { recentMemory: config.recentEventsMemory, recordDeliveries: config.recordDeliveries, segmentEvents: config.eventSegmentEvents, journalCheckpointBytes: config.journalCheckpointBytes },
      deliveryLeaseMs: config.deliveryLeaseMs,
      chat: config.chat,
      idempotencyMaxKeys: config.idempotency.maxKeys,
    };
    if (config.database) {
      const { openDatabaseStores } = await import('./store/postgres/stores.js');
      const opened = await openDatabaseStores(config.database, { ...storeOptions, logWarning: (message) => logger.warn(message) });
      closers.push(() => opened.close());
      stores = opened.stores;
      databaseFault = () => opened.fault();
    } else {
      const fileStores = await openFileStores(config.dataDir, storeOptions);
      stores = fileStores;
      recentEventBytes = () => fileStores.recentEventBytes();
      closers.push(() => stores.close());
    }
    const jwtSecret = config.jwtSecret
      ? Buffer.from(config.jwtSecret)
      : config.database
        ? sessionKeyFrom(box)
        : await readOrCreateSecret(join(config.dataDir, 'jwt-secret'), 32);
    const { users } = stores;
    const tokens = new TokenService(jwtSecret, config.tokenTtlSeconds, stores.revocations);
    const passwords = new PasswordHasher(config.bcryptCost);
    closers.push(() => passwords.close());
    const throttle = new LoginThrottle(stores.loginAttempts, config.loginThrottle.maxFailures, config.loginThrottle.windowSeconds * 1000);
    const names = await UserNames.load(users);
    const apiTokens = new ApiTokenService(stores.apiTokens, MAX_TOKENS_PER_USER);
    // Closed before the stores (closers run last first): the uses noted last are written.
    closers.push(() => apiTokens.close());
    const auth = new AuthService(users, tokens, passwords, throttle, names, apiTokens);
    const catalog = await CatalogService.open(stores.catalog, { fullNameOf: (id) => names.fullNameOf(id), builtInEventTypes: BUILT_IN_EVENT_TYPES });

    const { channelsPerWorkspace } = config.chat;
    const chatPlugin = createChatPlugin({
      post: (workspaceId, input) => postChatMessage(stores.chat, workspaceId, input, channelsPerWorkspace),
      admit: (workspaceId, channel) => admitChatMessage(stores.chat, workspaceId, channel, channelsPerWorkspace),
    });
    const plugins = await PluginRegistry.load(config.pluginsDir, [chatPlugin]);
    const workspaceServices = await openWorkspaceServices(stores.workspaces, {
      catalog,
      handlers: plugins,
      box,
      users,
      denyPrivateTargets: config.dispatch.denyPrivateTargets,
      // Asked only once requests come, when the configuration service below is open.
      configuredNames: (extensionKey) => extensionConfig.configuredNames(extensionKey),
      configurationOf: (extensionKey) => extensionConfig.values(extensionKey),
    });
    const { workspaces, installations, subscriptions } = workspaceServices;
    auth.onUserDeleted((userId) => workspaces.forgetMember(userId));
    const { deadLetters } = stores;
    const idempotency = new IdempotentPublishing(stores.idempotencyKeys, config.idempotency, logger);
    workspaces.onWorkspaceDeleted(async (workspaceId) => {
      await deadLetters.removeWorkspace(workspaceId);
      await stores.deliveries.removeWorkspace(workspaceId);
      await idempotency.forgetWorkspace(workspaceId);
    });
    const extensionConfig = await ExtensionConfigService.open(stores.extensionConfig, { catalog, box, workspaces });
    // Before the stores close (closers run last first): read-backs still to be retried stop.
    closers.push(async () => {
      catalog.close();
      workspaceServices.close();
      extensionConfig.close();
    });
    const metrics = createMetrics({ pendingDeliveries: async () => (await stores.deliveries.pending()).count, deadLetters: () => deadLetters.count() });
    const activity = await ActivityFeed.open(stores.activity);
    subscriptions.onSubscriptionToggled((subscription) => activity.subscriptionChanged(subscription));
    // The dispatcher and publishing are siblings: publishing hands deliveries to the dispatcher, and
    // the dispatcher publishes through the events service (what handlers publish, and the notice of
    // a subscription it disabled).
    const dispatcher: Dispatcher = new Dispatcher({
      deliveries: stores.deliveries,
      subscribers: workspaceServices.subscribers,
      recordHealth: (subscriptionId, succeeded, now, disableAfterMs) => subscriptions.recordHealth(subscriptionId, succeeded, now, disableAfterMs),
      handlerFor: (extensionKey, eventKey) => plugins.handlerFor(extensionKey, eventKey),
      onSubscriptionDisabled: (disabled) => events.subscriptionDisabled(disabled),
      startHandlerRun: (delivery) => events.pluginContext(delivery.subscriber.extensionKey, delivery.depth),
      settings: { ...config.dispatch, disableAfterMs: config.subscriptions.disableAfterMs },
      logger,
      metrics,
      activity,
    });
    const events = new EventService({
      events: stores.events,
      deliveries: stores.deliveries,
      workspaces,
      subscriptions,
      installations,
      subscribers: workspaceServices.subscribers,
      plugins,
      configFor: (extensionKey) => extensionConfig.values(extensionKey),
      fullNameOf: (userId) => names.fullNameOf(userId),
      eventTypes: catalog.eventTypes,
      dispatch: dispatcher,
      retention: config.retention,
      maxPayloadBytes: config.maxPayloadBytes,
      logger,
      metrics,
      activity,
    });
    const deadLetterService = new DeadLetterService({
      deadLetters,
      assertWorkspaceExists: (workspaceId) => workspaces.assertExists(workspaceId),
      extensionExists: (extensionKey) => catalog.has(extensionKey) || plugins.get(extensionKey) !== undefined,
      inactivity: (subscriptionId) => dispatcher.inactivity(subscriptionId),
      enqueue: (deliveries) => dispatcher.enqueue(deliveries),
    });
    const webhooks = new WebhookService({
      plugins,
      config: extensionConfig,
      events,
      catalog,
      requestLog: stores.webhookRequests,
      replays: stores.webhookReplays,
      logger,
      handlerTimeoutMs: config.dispatch.handlerTimeoutMs,
    });

    const intervals = config.jobs;
    const jobs: ScheduledJob[] = [
      { name: 'prune-revoked-tokens', intervalMs: intervals.tokenPruneMs, run: () => tokens.pruneExpired() },
      { name: 'event-retention', intervalMs: intervals.eventRetentionMs, run: () => events.applyRetention() },
      { name: 'prune-login-throttle', intervalMs: intervals.loginThrottlePruneMs, run: () => throttle.prune() },
      { name: 'prune-webhook-replays', intervalMs: intervals.webhookReplayPruneMs, run: () => webhooks.forgetExpiredReplays() },
      { name: 'prune-idempotency-keys', intervalMs: intervals.idempotencyPruneMs, run: () => idempotency.prune() },
    ];
    return {
      services: {
        auth,
        catalog,
        workspaces,
        installations,
        subscriptions,
        events,
        idempotency,
        dispatcher,
        deadLetters: deadLetterService,
        chat: new ChatService(stores.chat, workspaces),
        plugins,
        extensionConfig,
        webhooks,
        metrics,
        activity,
        streams: new LiveStreams({ auth, workspaces, activity, heartbeatMs: config.streamHeartbeatMs, sessionCookie: sessionCookieName(config.secureCookies) }),
        readiness: new Readiness(config.dataDir, dispatcher, databaseFault),
        box,
        recentEventBytes,
        startedAt: Date.now(),
      },
      jobs,
      jobLock: stores.jobLock,
      start: async () => {
        dispatcher.start();
        return stores.deliveries.shared ? 0 : (await stores.deliveries.pending()).count;
      },
      stop: () => dispatcher.stop(5_000),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * On PostgreSQL every daemon must verify the sessions any other one signed, and
 * they share one thing already: the master key (PLATFORM_MASTER_KEY). The
 * signing key is derived from its current key, unless PLATFORM_JWT_SECRET is set.
 */
function sessionKeyFrom(box: SecretBox): Buffer {
  return Buffer.from(hkdfSync('sha256', box.currentKey, Buffer.alloc(0), 'platform session signing key', 32));
}
