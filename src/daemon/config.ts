import { join, resolve } from 'node:path';
import type { SettleTimes } from './settle.js';
import * as v from 'valibot';
import { DEFAULT_CHAT_LIMITS, type ChatLimits } from './chat/store.js';
import { DEFAULT_RETRY_SCHEDULE } from './dispatch/retry.js';
import { DEFAULT_MAX_KEPT_KEYS } from './events/idempotency.js';
import { redactUrl, type DatabaseSettings } from './database-settings.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './log.js';

export interface DaemonConfig {
  host: string;
  port: number;
  /** Absolute path. */
  dataDir: string;
  /** `--database-url` (PLATFORM_DATABASE_URL) and `--database-schema`: PostgreSQL instead of the data directory; null for files. */
  database: DatabaseSettings | null;
  maxBodyBytes: number;
  /** An event payload is at most this many bytes of JSON (PLATFORM_MAX_PAYLOAD). */
  maxPayloadBytes: number;
  /** A page of any listing holds as many items as fit in this many bytes of JSON, at least one (PLATFORM_MAX_PAGE_BYTES). */
  maxPageBytes: number;
  /** Adds `Secure` to the session cookie; set it when TLS terminates in front of the daemon. */
  secureCookies: boolean;
  tokenTtlSeconds: number;
  /** From PLATFORM_JWT_SECRET; null means: generated into the data directory. */
  jwtSecret: string | null;
  bcryptCost: number;
  /** From PLATFORM_ADMIN_EMAIL / PLATFORM_ADMIN_PASSWORD, used only on an empty user store. */
  bootstrapAdmin: { email: string; password: string } | null;
  loginThrottle: { maxFailures: number; windowSeconds: number };
  /** How long a graceful stop waits for in-flight requests before closing connections. */
  shutdownGraceMs: number;
  /** Load seed/catalog.json into an empty catalog at start (`--seed`, PLATFORM_SEED). */
  seed: boolean;
  /** In-process plugins are loaded from here (`--plugins-dir`; default <data-dir>/plugins). */
  pluginsDir: string;
  /** From PLATFORM_MASTER_KEY (base64, 32 bytes); null means: generated into <data-dir>/master.key. */
  masterKey: string | null;
  dispatch: {
    /** Delays before the 2nd, 3rd, … attempt in ms (`--retry-schedule 50,100,200`: 4 attempts in all). */
    retrySchedule: number[];
    deliveryTimeoutMs: number;
    deliveryConcurrency: number;
    handlerConcurrency: number;
    handlerTimeoutMs: number;
    /** Refuse subscriber URLs that resolve to loopback, private or link-local addresses (`--deny-private-targets`). */
    denyPrivateTargets: boolean;
  };
  /** PLATFORM_DELIVERY_LEASE (seconds): how long another daemon waits before taking over a delivery claimed by one that stopped answering (PostgreSQL). */
  deliveryLeaseMs: number;
  /** Publishing with `Idempotency-Key` (docs/decisions.md, "Idempotent publishing"). */
  idempotency: {
    /** PLATFORM_IDEMPOTENCY_TTL_SECONDS: how long a key answers as its first request did, from that request. */
    ttlMs: number;
    /** PLATFORM_IDEMPOTENCY_MAX_KEYS (files only): keys kept at most; past it the oldest are forgotten before their time. */
    maxKeys: number;
    /** How long a request waits for an unfinished one with its key before it is answered 409 (fixed; tests lower it). */
    waitMs: number;
  };
  retention: { maxAgeMs: number; maxPerWorkspace: number };
  /**
   * PLATFORM_SECRET_OVERLAP and PLATFORM_DISABLE_AFTER are seconds; kept here in
   * milliseconds so that tests can run the schedule in milliseconds.
   */
  subscriptions: { secretOverlapMs: number; disableAfterMs: number };
  /** False only for `npm run bench`, which measures what recording costs (PLATFORM_BENCH_DELIVERY_RECORDS=off). */
  recordDeliveries: boolean;
  /** False only for `npm run bench`, which measures what counting requests costs (PLATFORM_BENCH_METRICS=off). */
  countRequests: boolean;
  /** Bytes of memory the recent events kept for listing may cost, as JSON text (older ones are read from disk); fixed, tests lower them. */
  recentEventsMemory: { bytesTotal: number; bytesPerWorkspace: number };
  /** Events per segment file of the event log (files only): retention deletes or rewrites sealed segments. Fixed; tests lower it. */
  eventSegmentEvents: number;
  /** PLATFORM_JOURNAL_CHECKPOINT_MB: journal growth between two checkpoints of the outbox and of the delivery records, on files. */
  journalCheckpointBytes: number;
  /** How often each scheduled job runs (README, Configuration; docs/decisions.md, "Scheduled jobs"). */
  jobs: JobIntervals;
  /** A live stream sends a comment this often, and checks then that its caller may still read it. */
  streamHeartbeatMs: number;
  /**
   * Full garbage collections once idle (see settle.ts): PLATFORM_SETTLE_AFTER_START (ms), when
   * those after start-up begin; PLATFORM_SETTLE_GROWTH_MB, how much V8's heap (and its buffers) must grow for more;
   * PLATFORM_SETTLE_QUIET (ms) between the two collections of a pair.
   */
  settle: SettleTimes;
  /** Origins allowed to call the API from a browser (`--cors-origin`); none by default: no CORS headers at all. */
  corsOrigins: string[];
  /** Host names requests may name besides loopback ones (`--allowed-hosts`); checked on any address once given. */
  allowedHosts: string[];
  /**
   * Limits on slow and greedy clients (docs/security.md, Limits). One address
   * may take a quarter of all connections: a burst of 50 requests from one
   * fetch client was seen to hold 100 connections at once.
   */
  connections: {
    /** PLATFORM_HEADERS_TIMEOUT: a request's headers are complete within this (counted from the previous answer on a kept-alive connection). */
    headersTimeoutMs: number;
    /** PLATFORM_REQUEST_TIMEOUT: a whole request, body included, arrives within this. */
    requestTimeoutMs: number;
    /** PLATFORM_UNREAD_ANSWER_TIMEOUT: an answer the client takes no byte of for this long is abandoned. */
    unreadAnswerTimeoutMs: number;
    maxTotal: number;
    maxPerClient: number;
  };
  /** What chat keeps: PLATFORM_CHAT_CHANNELS channels per workspace, and the latest messages of each (fixed; tests lower it). */
  chat: ChatLimits;
  /** From PLATFORM_METRICS_TOKEN: a scraper's bearer token for /metrics (besides ADMIN sessions). */
  metricsToken: string | null;
  log: {
    /** Undefined: text on a terminal, JSON lines otherwise. */
    format: LogFormat | undefined;
    level: LogLevel;
    /** `--quiet`: no access lines at all. */
    quiet: boolean;
  };
}

/**
 * Milliseconds between runs of each scheduled job; the environment gives them
 * in seconds (at least 1), tests in milliseconds.
 */
export interface JobIntervals {
  /** PLATFORM_EVENT_RETENTION_INTERVAL: removing expired events and their delivery records. */
  eventRetentionMs: number;
  /** PLATFORM_TOKEN_PRUNE_INTERVAL: forgetting revocations of tokens that have expired anyway. */
  tokenPruneMs: number;
  /** PLATFORM_LOGIN_THROTTLE_PRUNE_INTERVAL: forgetting failed logins older than the throttle's window. */
  loginThrottlePruneMs: number;
  /** PLATFORM_WEBHOOK_REPLAY_PRUNE_INTERVAL: forgetting inbound webhook ids past their 24-hour replay window. */
  webhookReplayPruneMs: number;
  /** PLATFORM_IDEMPOTENCY_PRUNE_INTERVAL: forgetting idempotency keys past their lifetime. */
  idempotencyPruneMs: number;
}

/** Raw `platform serve` flags as commander hands them over. */
export interface ServeFlags {
  host?: string;
  port?: string;
  dataDir?: string;
  databaseUrl?: string;
  databaseSchema?: string;
  maxBody?: string;
  secureCookies?: boolean;
  seed?: boolean;
  pluginsDir?: string;
  retrySchedule?: string;
  corsOrigin?: string;
  allowedHosts?: string;
  denyPrivateTargets?: boolean;
  logFormat?: string;
  logLevel?: string;
  quiet?: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };

const Port = v.pipe(
  v.string(),
  v.regex(/^\d+$/, 'must be a whole number'),
  v.transform(Number),
  v.maxValue(65535, 'must be at most 65535'),
);
const Size = v.pipe(
  v.string(),
  v.regex(/^\d+\s*(b|kb|k|mb|m|gb|g)?$/i, 'must be a size such as 1048576, 512kb or 1mb'),
  v.transform((text) => {
    const [, digits = '0', unit = ''] = /^(\d+)\s*([a-z]*)$/i.exec(text) ?? [];
    return Number(digits) * (SIZE_UNITS[unit.toLowerCase()] ?? 1);
  }),
  v.minValue(1024, 'must be at least 1kb'),
);
/** Above this, building one page would hold the event loop (and memory) for long. */
const PageSize = v.pipe(Size, v.maxValue(64 * 1024 * 1024, 'must be at most 64mb'));
const Count = (min: number, max: number) =>
  v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number), v.minValue(min), v.maxValue(max));

function parseSetting<T>(name: string, schema: v.GenericSchema<string, T>, raw: string | undefined, fallback: T): T {
  if (raw === undefined || raw === '') return fallback;
  const result = v.safeParse(schema, raw);
  if (!result.success) throw new ConfigError(`${name}: ${result.issues[0]?.message ?? 'invalid value'} (got "${raw}")`);
  return result.output;
}

const Schedule = v.pipe(
  v.string(),
  v.regex(/^\d{1,9}(,\d{1,9})*$/, 'must be comma-separated milliseconds such as 1000,5000,30000'),
  v.transform((text) => text.split(',').map(Number)),
);

const Origins = v.pipe(
  v.string(),
  v.transform((text) => text.split(',').map((origin) => origin.trim()).filter(Boolean)),
  v.array(v.pipe(v.string(), v.regex(/^https?:\/\/[^/\s]+$/, 'must be origins such as https://admin.example.com, comma-separated'))),
);

const Hosts = v.pipe(
  v.string(),
  v.transform((text) => text.split(',').map((host) => host.trim().toLowerCase()).filter(Boolean)),
  v.array(
    v.pipe(
      v.string(),
      v.regex(/^(?:[a-z0-9][a-z0-9.-]*|\[[0-9a-f:.]+\])$/, 'must be host names such as platform.example.com, comma-separated, without scheme or port'),
    ),
  ),
);

const DatabaseUrl = v.pipe(
  v.string(),
  v.regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL'),
  v.check((url) => URL.canParse(url), 'must be a valid URL such as postgres://user:password@host:5432/database'),
);
/** Lower-case SQL identifiers only: they need no quoting anywhere, in SQL or in a shell. */
const SchemaName = v.pipe(v.string(), v.regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case name of letters, digits and underscores'));

/** Like parseSetting, but an error shows the URL with its password hidden. */
function parseDatabase(flags: ServeFlags, env: NodeJS.ProcessEnv): DatabaseSettings | null {
  const url = flags.databaseUrl ?? env.PLATFORM_DATABASE_URL;
  if (url === undefined || url === '') return null;
  const checked = v.safeParse(DatabaseUrl, url);
  if (!checked.success) {
    throw new ConfigError(`--database-url / PLATFORM_DATABASE_URL: ${checked.issues[0].message} (got "${redactUrl(url)}")`);
  }
  const schema = parseSetting('--database-schema / PLATFORM_DATABASE_SCHEMA', SchemaName, flags.databaseSchema ?? env.PLATFORM_DATABASE_SCHEMA, 'platform');
  return { url, schema };
}

/** A JavaScript Map holds at most 2^24 entries; ten million kept keys are about 1.5 GB of memory anyway. */
const MAX_IDEMPOTENCY_KEYS = 10_000_000;

/** Seconds between two runs of a scheduled job: at least 1, at most a week. */
const Interval = v.pipe(
  v.string(),
  v.regex(/^\d+$/, 'must be a whole number of seconds'),
  v.transform(Number),
  v.minValue(1, 'must be at least 1 second'),
  v.maxValue(7 * 86_400, 'must be at most 604800 seconds (a week)'),
);

function parseJobIntervals(env: NodeJS.ProcessEnv): JobIntervals {
  const seconds = (name: string, fallback: number) => parseSetting(name, Interval, env[name], fallback) * 1000;
  return {
    eventRetentionMs: seconds('PLATFORM_EVENT_RETENTION_INTERVAL', 600),
    tokenPruneMs: seconds('PLATFORM_TOKEN_PRUNE_INTERVAL', 600),
    loginThrottlePruneMs: seconds('PLATFORM_LOGIN_THROTTLE_PRUNE_INTERVAL', 300),
    webhookReplayPruneMs: seconds('PLATFORM_WEBHOOK_REPLAY_PRUNE_INTERVAL', 600),
    idempotencyPruneMs: seconds('PLATFORM_IDEMPOTENCY_PRUNE_INTERVAL', 600),
  };
}

function connectionLimits(env: NodeJS.ProcessEnv): DaemonConfig['connections'] {
  // Milliseconds, from 0.1 s to an hour.
  const millis = (name: string, fallback: number) => parseSetting(name, Count(100, 3_600_000), env[name], fallback);
  const headersTimeoutMs = millis('PLATFORM_HEADERS_TIMEOUT', 10_000);
  const requestTimeoutMs = millis('PLATFORM_REQUEST_TIMEOUT', 30_000);
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`PLATFORM_HEADERS_TIMEOUT (${headersTimeoutMs}) must not be longer than PLATFORM_REQUEST_TIMEOUT (${requestTimeoutMs})`);
  }
  return {
    headersTimeoutMs,
    requestTimeoutMs,
    unreadAnswerTimeoutMs: millis('PLATFORM_UNREAD_ANSWER_TIMEOUT', 30_000),
    maxTotal: 1024,
    maxPerClient: 256,
  };
}

const isTrue = (raw: string | undefined) => raw !== undefined && /^(1|true|yes|on)$/i.test(raw);

/** An empty one would resolve to the current directory, which is no data directory (a git clone, a home). */
function resolveDataDir(given: string | undefined): string {
  if (given !== undefined && given.trim() === '') {
    throw new ConfigError('--data-dir / PLATFORM_DATA_DIR is empty: give a directory, or leave it unset for ./data');
  }
  return resolve(given ?? './data');
}

/** Both or neither: one alone used to be ignored, and admin@localhost was generated instead of the administrator asked for. */
function resolveBootstrapAdmin(env: NodeJS.ProcessEnv): DaemonConfig['bootstrapAdmin'] {
  const email = env.PLATFORM_ADMIN_EMAIL || null;
  const password = env.PLATFORM_ADMIN_PASSWORD || null;
  if (email !== null && password === null) throw new ConfigError('PLATFORM_ADMIN_EMAIL is set but PLATFORM_ADMIN_PASSWORD is not: set both, or neither');
  if (password !== null && email === null) throw new ConfigError('PLATFORM_ADMIN_PASSWORD is set but PLATFORM_ADMIN_EMAIL is not: set both, or neither');
  return email !== null && password !== null ? { email, password } : null;
}

/** Flags win over environment variables, which win over defaults. */
export function resolveConfig(flags: ServeFlags, env: NodeJS.ProcessEnv = process.env): DaemonConfig {
  const dataDir = resolveDataDir(flags.dataDir ?? env.PLATFORM_DATA_DIR);
  const bootstrapAdmin = resolveBootstrapAdmin(env);
  const jwtSecret = env.PLATFORM_JWT_SECRET || null;
  if (jwtSecret !== null && Buffer.byteLength(jwtSecret) < 32) {
    throw new ConfigError('PLATFORM_JWT_SECRET must be at least 32 bytes long');
  }
  const metricsToken = env.PLATFORM_METRICS_TOKEN || null;
  if (metricsToken !== null && Buffer.byteLength(metricsToken) < 16) {
    throw new ConfigError('PLATFORM_METRICS_TOKEN must be at least 16 bytes long');
  }
  return {
    host: flags.host ?? env.PLATFORM_HOST ?? '127.0.0.1',
    port: parseSetting('--port / PLATFORM_PORT', Port, flags.port ?? env.PLATFORM_PORT, 8080),
    dataDir,
    database: parseDatabase(flags, env),
    maxBodyBytes: parseSetting('--max-body / PLATFORM_MAX_BODY', Size, flags.maxBody ?? env.PLATFORM_MAX_BODY, 1024 * 1024),
    maxPayloadBytes: parseSetting('PLATFORM_MAX_PAYLOAD', Size, env.PLATFORM_MAX_PAYLOAD, 262_144),
    maxPageBytes: parseSetting('PLATFORM_MAX_PAGE_BYTES', PageSize, env.PLATFORM_MAX_PAGE_BYTES, 4 * 1024 * 1024),
    secureCookies: flags.secureCookies ?? isTrue(env.PLATFORM_SECURE_COOKIES),
    tokenTtlSeconds: parseSetting('PLATFORM_TOKEN_TTL', Count(60, 30 * 24 * 3600), env.PLATFORM_TOKEN_TTL, 8 * 3600),
    jwtSecret,
    bcryptCost: parseSetting('PLATFORM_BCRYPT_COST', Count(4, 15), env.PLATFORM_BCRYPT_COST, 10),
    bootstrapAdmin,
    loginThrottle: { maxFailures: 5, windowSeconds: 15 * 60 },
    shutdownGraceMs: 10_000,
    seed: flags.seed ?? isTrue(env.PLATFORM_SEED),
    pluginsDir: resolve(flags.pluginsDir ?? env.PLATFORM_PLUGINS_DIR ?? join(dataDir, 'plugins')),
    masterKey: env.PLATFORM_MASTER_KEY || null,
    dispatch: {
      retrySchedule: parseSetting(
        '--retry-schedule / PLATFORM_RETRY_SCHEDULE',
        Schedule,
        flags.retrySchedule ?? env.PLATFORM_RETRY_SCHEDULE,
        DEFAULT_RETRY_SCHEDULE,
      ),
      deliveryTimeoutMs: parseSetting('PLATFORM_DELIVERY_TIMEOUT', Count(1, 600_000), env.PLATFORM_DELIVERY_TIMEOUT, 10_000),
      deliveryConcurrency: parseSetting('PLATFORM_DELIVERY_CONCURRENCY', Count(1, 1024), env.PLATFORM_DELIVERY_CONCURRENCY, 64),
      handlerConcurrency: parseSetting('PLATFORM_HANDLER_CONCURRENCY', Count(1, 256), env.PLATFORM_HANDLER_CONCURRENCY, 8),
      handlerTimeoutMs: parseSetting('PLATFORM_HANDLER_TIMEOUT', Count(1, 600_000), env.PLATFORM_HANDLER_TIMEOUT, 30_000),
      denyPrivateTargets: flags.denyPrivateTargets ?? isTrue(env.PLATFORM_DENY_PRIVATE_TARGETS),
    },
    deliveryLeaseMs: parseSetting('PLATFORM_DELIVERY_LEASE', Count(1, 3600), env.PLATFORM_DELIVERY_LEASE, 30) * 1000,
    idempotency: {
      ttlMs: parseSetting('PLATFORM_IDEMPOTENCY_TTL_SECONDS', Count(1, 7 * 86_400), env.PLATFORM_IDEMPOTENCY_TTL_SECONDS, 86_400) * 1000,
      maxKeys: parseSetting('PLATFORM_IDEMPOTENCY_MAX_KEYS', Count(1, MAX_IDEMPOTENCY_KEYS), env.PLATFORM_IDEMPOTENCY_MAX_KEYS, DEFAULT_MAX_KEPT_KEYS),
      // Longer than a publish takes with its synchronous handlers' default 30 s timeout.
      waitMs: 60_000,
    },
    retention: {
      maxAgeMs: parseSetting('PLATFORM_EVENT_RETENTION_DAYS', Count(1, 3650), env.PLATFORM_EVENT_RETENTION_DAYS, 7) * 86_400_000,
      maxPerWorkspace: parseSetting('PLATFORM_EVENT_RETENTION_COUNT', Count(1, 100_000_000), env.PLATFORM_EVENT_RETENTION_COUNT, 100_000),
    },
    subscriptions: {
      secretOverlapMs: parseSetting('PLATFORM_SECRET_OVERLAP', Count(0, 365 * 86_400), env.PLATFORM_SECRET_OVERLAP, 86_400) * 1000,
      disableAfterMs: parseSetting('PLATFORM_DISABLE_AFTER', Count(1, 3650 * 86_400), env.PLATFORM_DISABLE_AFTER, 432_000) * 1000,
    },
    recordDeliveries: env.PLATFORM_BENCH_DELIVERY_RECORDS !== 'off',
    countRequests: env.PLATFORM_BENCH_METRICS !== 'off',
    recentEventsMemory: { bytesTotal: 16 * 1024 * 1024, bytesPerWorkspace: 4 * 1024 * 1024 },
    eventSegmentEvents: 100_000,
    journalCheckpointBytes: parseSetting('PLATFORM_JOURNAL_CHECKPOINT_MB', Count(1, 65_536), env.PLATFORM_JOURNAL_CHECKPOINT_MB, 256) * 1024 * 1024,
    jobs: parseJobIntervals(env),
    streamHeartbeatMs: 10_000,
    settle: {
      afterStartMs: parseSetting('PLATFORM_SETTLE_AFTER_START', Count(100, 3_600_000), env.PLATFORM_SETTLE_AFTER_START, 10_000),
      growthBytes: parseSetting('PLATFORM_SETTLE_GROWTH_MB', Count(1, 65_536), env.PLATFORM_SETTLE_GROWTH_MB, 32) * 1024 * 1024,
      quietMs: parseSetting('PLATFORM_SETTLE_QUIET', Count(100, 600_000), env.PLATFORM_SETTLE_QUIET, 5_000),
    },
    corsOrigins: parseSetting('--cors-origin / PLATFORM_CORS_ORIGIN', Origins, flags.corsOrigin ?? env.PLATFORM_CORS_ORIGIN, []),
    allowedHosts: parseSetting('--allowed-hosts / PLATFORM_ALLOWED_HOSTS', Hosts, flags.allowedHosts ?? env.PLATFORM_ALLOWED_HOSTS, []),
    connections: connectionLimits(env),
    chat: {
      channelsPerWorkspace: parseSetting('PLATFORM_CHAT_CHANNELS', Count(1, 1_000_000), env.PLATFORM_CHAT_CHANNELS, DEFAULT_CHAT_LIMITS.channelsPerWorkspace),
      messagesPerChannel: DEFAULT_CHAT_LIMITS.messagesPerChannel,
    },
    metricsToken,
    log: {
      format: parseSetting<LogFormat | undefined>(
        '--log-format / PLATFORM_LOG_FORMAT',
        v.picklist(LOG_FORMATS, 'must be json or text'),
        flags.logFormat ?? env.PLATFORM_LOG_FORMAT,
        undefined,
      ),
      level: parseSetting('--log-level / PLATFORM_LOG_LEVEL', v.picklist(LOG_LEVELS, 'must be debug, info, warn or error'), flags.logLevel ?? env.PLATFORM_LOG_LEVEL, 'info'),
      quiet: flags.quiet ?? false,
    },
  };
}
