import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SignJWT, jwtVerify } from 'jose';
import { AppendLog } from '../store/append-log.js';
import { Collection } from '../store/collection.js';
import { fsyncDir } from '../store/files.js';
import { unauthorized } from '../errors.js';

export interface TokenClaims {
  sub: string;
  jti: string;
  /** The user's tokenVersion when the token was issued. */
  tv: number;
  iat: number;
  exp: number;
}

/** One line of revocations.log; kept until the token would have expired anyway. */
interface Revocation {
  jti: string;
  /** The token's expiry, unix seconds. */
  exp: number;
}

/** The whole-document store of earlier versions, migrated into the log on open. */
interface LegacyRevocationsDocument {
  schemaVersion: 1;
  revoked: Record<string, number>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Verified tokens remembered, so that a session's requests do not each pay for an HMAC check through WebCrypto. */
const VERIFIED_CACHE_SIZE = 5_000;

/**
 * HS256 JWTs and their revocation list. A token is only a claim of identity:
 * roles and `active` are always read from the user store by the caller.
 */
export class TokenService {
  /** token → its verified claims; insertion order makes the oldest the first evicted. */
  private readonly verified = new Map<string, TokenClaims>();

  private constructor(
    private readonly key: KeyObject,
    readonly ttlSeconds: number,
    private readonly log: AppendLog<Revocation>,
    /** jti → exp of every revoked token not yet pruned. */
    private readonly revoked: Map<string, number>,
  ) {}

  static async open(dataDir: string, secret: Uint8Array, ttlSeconds: number): Promise<TokenService> {
    const revoked = new Map<string, number>();
    const log = await AppendLog.open<Revocation>(join(dataDir, 'revocations.log'), (record) => {
      revoked.set(record.jti, record.exp);
    });
    await migrateLegacyRevocations(join(dataDir, 'revocations.json'), log, revoked);
    return new TokenService(createSecretKey(secret), ttlSeconds, log, revoked);
  }

  async issue(userId: string, tokenVersion: number): Promise<{ token: string; claims: TokenClaims }> {
    const iat = nowSeconds();
    const claims: TokenClaims = { sub: userId, jti: randomUUID(), tv: tokenVersion, iat, exp: iat + this.ttlSeconds };
    const token = await new SignJWT({ tv: tokenVersion })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setJti(claims.jti)
      .setIssuedAt(claims.iat)
      .setExpirationTime(claims.exp)
      .sign(this.key);
    return { token, claims };
  }

  /**
   * Signature, algorithm, expiry, shape and revocation; throws 401 otherwise.
   * The signature and shape of a token never change, so they are checked once;
   * expiry and revocation are checked on every call.
   */
  async verify(token: string): Promise<TokenClaims> {
    const claims = this.verified.get(token) ?? (await this.verifySignature(token));
    if (claims.exp <= nowSeconds()) {
      this.verified.delete(token);
      throw unauthorized('the session token is invalid or expired; log in again');
    }
    if (this.revoked.has(claims.jti)) throw unauthorized('the session token has been revoked; log in again');
    return claims;
  }

  private async verifySignature(token: string): Promise<TokenClaims> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'] }));
    } catch {
      throw unauthorized('the session token is invalid or expired; log in again');
    }
    const { sub, jti, tv, iat, exp } = payload;
    if (
      typeof sub !== 'string' ||
      typeof jti !== 'string' ||
      !Number.isInteger(tv) ||
      typeof iat !== 'number' ||
      typeof exp !== 'number'
    ) {
      throw unauthorized('the session token is invalid or expired; log in again');
    }
    const claims: TokenClaims = { sub, jti, tv: tv as number, iat, exp };
    this.verified.set(token, claims);
    if (this.verified.size > VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    return claims;
  }

  /** Durable when it resolves: one appended line. */
  async revoke(claims: TokenClaims): Promise<void> {
    this.revoked.set(claims.jti, claims.exp);
    await this.log.append({ jti: claims.jti, exp: claims.exp });
  }

  /** Drops revocations of tokens that have expired anyway, from memory and by compacting the log; returns how many. */
  async pruneExpired(): Promise<number> {
    const now = nowSeconds();
    let pruned = 0;
    for (const [jti, exp] of this.revoked) {
      if (exp > now) continue;
      this.revoked.delete(jti);
      pruned += 1;
    }
    if (pruned > 0) await this.log.rewrite(revocationsOf(this.revoked));
    return pruned;
  }

  get revokedCount(): number {
    return this.revoked.size;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}

function* revocationsOf(revoked: Map<string, number>): Iterable<Revocation> {
  for (const [jti, exp] of revoked) yield { jti, exp };
}

/**
 * Moves the revocations of an earlier version's revocations.json into the log:
 * the log is rewritten with both (durably) before the old file is removed, so a
 * crash in between only repeats the migration at the next start.
 */
async function migrateLegacyRevocations(file: string, log: AppendLog<Revocation>, revoked: Map<string, number>): Promise<void> {
  if (!existsSync(file)) return;
  const legacy = await Collection.open<LegacyRevocationsDocument>({
    file,
    schemaVersion: 1,
    create: () => ({ schemaVersion: 1, revoked: {} }),
  });
  const now = nowSeconds();
  for (const [jti, exp] of Object.entries(legacy.data.revoked)) {
    if (exp > now) revoked.set(jti, exp);
  }
  await log.rewrite(revocationsOf(revoked));
  await unlink(file);
  await fsyncDir(dirname(file));
}
