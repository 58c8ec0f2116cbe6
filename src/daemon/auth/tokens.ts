import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { unauthorized } from '../errors.js';

export interface TokenClaims {
  sub: string;
  jti: string;
  /** The user's tokenVersion when the token was issued. */
  tv: number;
  iat: number;
  exp: number;
}

/**
 * Revoked token ids (store/file/revocations.ts, store/postgres/revocations.ts),
 * each kept until its token would have expired anyway.
 */
export interface RevocationStore {
  isRevoked(jti: string): Promise<boolean>;
  /** Durable when it resolves. `expiresAt`: the token's expiry, unix seconds. */
  revoke(jti: string, expiresAt: number): Promise<void>;
  /** Forgets the revocations of tokens expired at `now` (unix seconds); returns how many. */
  pruneExpired(now: number): Promise<number>;
  close(): Promise<void>;
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

  private readonly key: KeyObject;

  constructor(
    secret: Uint8Array,
    readonly ttlSeconds: number,
    private readonly revocations: RevocationStore,
  ) {
    this.key = createSecretKey(secret);
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
   * Signature, algorithm, expiry and shape; throws 401 otherwise. The signature
   * and shape of a token never change, so they are checked once; expiry on
   * every call. Revocation is the caller's to check (`assertNotRevoked`), at
   * the same time as its other reads.
   */
  async claimsOf(token: string): Promise<TokenClaims> {
    const claims = this.verified.get(token) ?? (await this.verifySignature(token));
    if (claims.exp <= nowSeconds()) {
      this.verified.delete(token);
      throw unauthorized('the session token is invalid or expired; log in again');
    }
    return claims;
  }

  /** Throws 401 when the token has been revoked (a logout, on any daemon). */
  async assertNotRevoked(claims: TokenClaims): Promise<void> {
    if (await this.revocations.isRevoked(claims.jti)) throw unauthorized('the session token has been revoked; log in again');
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

  /** Durable when it resolves. */
  revoke(claims: TokenClaims): Promise<void> {
    return this.revocations.revoke(claims.jti, claims.exp);
  }

  /** Drops revocations of tokens that have expired anyway; returns how many. */
  pruneExpired(): Promise<number> {
    return this.revocations.pruneExpired(nowSeconds());
  }
}
