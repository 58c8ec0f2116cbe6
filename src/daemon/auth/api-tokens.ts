import { randomUUID } from 'node:crypto';
import type { Scope } from '../../contract/requests.js';
import type { ApiToken, CreatedApiToken } from '../../contract/types.js';
import { conflict, notFound, unauthorized } from '../errors.js';
import { isBearerSecret, newBearerSecret, secretHashOf } from '../secrets/bearer.js';

/** A personal API token as stored: its secret only as a hash. */
export interface StoredApiToken {
  id: string;
  userId: string;
  name: string;
  scopes: Scope[];
  workspaces: string[] | null;
  createdAt: string;
  expiresAt: string;
  lastUsedAt: string | null;
  /** SHA-256 of the token, hex: the token is found by it, never compared. */
  secretHash: string;
}

export interface NewApiToken {
  name: string;
  scopes: Scope[];
  workspaces?: string[] | undefined;
  expiresInDays: number;
}

/**
 * Where personal API tokens are kept (store/file/api-tokens.ts,
 * store/postgres/api-tokens.ts). A lookup by hash reads the store itself, so
 * a revocation on one daemon is seen by the next request to any other.
 */
export interface ApiTokenStore {
  /** Throws CONFLICT when the user has `maxPerUser` tokens already, however many are made at once. */
  insert(token: StoredApiToken, maxPerUser: number): Promise<void>;
  findBySecretHash(secretHash: string): Promise<StoredApiToken | undefined>;
  /** Oldest first. */
  listByUser(userId: string): Promise<StoredApiToken[]>;
  /** Every user's, oldest first. */
  listAll(): Promise<StoredApiToken[]>;
  /** Removes the token (of that user, unless null); false when there is none. */
  remove(id: string, userId: string | null): Promise<boolean>;
  /** Sets lastUsedAt of each token id that still exists. */
  recordUses(uses: ReadonlyMap<string, string>): Promise<void>;
  /** A deleted user's tokens go with the account. */
  removeUser(userId: string): Promise<void>;
  close(): Promise<void>;
}

export const API_TOKEN_PREFIX = 'plt_';

const DAY_MS = 86_400_000;
/** lastUsedAt is kept to the minute: a token used all the time writes once a minute, not once a request. */
const USE_PRECISION_MS = 60_000;

export const toApiToken = (stored: StoredApiToken): ApiToken => ({
  id: stored.id,
  userId: stored.userId,
  name: stored.name,
  scopes: [...stored.scopes],
  workspaces: stored.workspaces && [...stored.workspaces],
  createdAt: stored.createdAt,
  expiresAt: stored.expiresAt,
  lastUsedAt: stored.lastUsedAt,
});

const invalidToken = () => unauthorized('the API token is invalid, expired or revoked');

/**
 * Personal API tokens: made for a user with scopes, optionally limited to
 * workspaces, expiring; shown once and kept as a SHA-256 hash (see
 * secrets/bearer.ts). A request's token is found by its hash, never
 * compared, so no timing tells how much of a guess was right.
 */
export class ApiTokenService {
  /** Uses not yet written: token id → minute of its last use. */
  private readonly uses = new Map<string, string>();
  private readonly written = new Map<string, string>();
  private flushing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: ApiTokenStore,
    private readonly maxPerUser: number,
    private readonly now: () => number = Date.now,
  ) {
    this.timer = setInterval(() => void this.flushUses(), USE_PRECISION_MS);
    this.timer.unref();
  }

  async create(userId: string, input: NewApiToken): Promise<CreatedApiToken> {
    const token = newBearerSecret(API_TOKEN_PREFIX);
    const createdAt = this.now();
    const stored: StoredApiToken = {
      id: randomUUID(),
      userId,
      name: input.name,
      scopes: input.scopes,
      workspaces: input.workspaces ?? null,
      createdAt: new Date(createdAt).toISOString(),
      expiresAt: new Date(createdAt + input.expiresInDays * DAY_MS).toISOString(),
      lastUsedAt: null,
      secretHash: secretHashOf(token),
    };
    await this.store.insert(stored, this.maxPerUser);
    return { ...toApiToken(stored), token };
  }

  async list(userId: string): Promise<ApiToken[]> {
    return (await this.store.listByUser(userId)).map((stored) => this.shown(stored));
  }

  async listAll(): Promise<ApiToken[]> {
    return (await this.store.listAll()).map((stored) => this.shown(stored));
  }

  /** A user revokes their own (userId), an ADMIN anyone's (null). */
  async revoke(id: string, userId: string | null): Promise<void> {
    if (!(await this.store.remove(id, userId))) throw notFound(`API token ${id} not found`);
  }

  /** The token a request carries, or 401: unknown, revoked or expired alike. */
  async resolve(secret: string): Promise<StoredApiToken> {
    if (!isBearerSecret(API_TOKEN_PREFIX, secret)) throw invalidToken();
    const stored = await this.store.findBySecretHash(secretHashOf(secret));
    if (!stored || Date.parse(stored.expiresAt) <= this.now()) throw invalidToken();
    const minute = new Date(Math.floor(this.now() / USE_PRECISION_MS) * USE_PRECISION_MS).toISOString();
    if ((this.written.get(stored.id) ?? stored.lastUsedAt) !== minute) this.uses.set(stored.id, minute);
    return stored;
  }

  forgetUser(userId: string): Promise<void> {
    return this.store.removeUser(userId);
  }

  /** Writes the uses noted since the last flush (once a minute, and at close). */
  flushUses(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.uses.size === 0) return;
      const batch = new Map(this.uses);
      this.uses.clear();
      try {
        await this.store.recordUses(batch);
        for (const [id, minute] of batch) this.written.set(id, minute);
        // Bounded by the tokens in use: entries of tokens gone are dropped as they are seen.
        if (this.written.size > 100_000) this.written.clear();
      } catch {
        // Kept for the next flush: lastUsedAt is informative, never worth failing a request for.
        for (const [id, minute] of batch) if (!this.uses.has(id)) this.uses.set(id, minute);
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flushUses();
  }

  /** As listed: with a use not yet written. */
  private shown(stored: StoredApiToken): ApiToken {
    const pending = this.uses.get(stored.id);
    return toApiToken(pending === undefined ? stored : { ...stored, lastUsedAt: pending });
  }
}

export const tooManyTokens = (max: number) => conflict(`a user has at most ${max} API tokens; revoke one first`);
