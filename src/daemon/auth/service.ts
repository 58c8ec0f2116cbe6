import { randomBytes } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { DomainError, conflict, invalid } from '../errors.js';
import type { UserNames } from './names.js';
import { LoginThrottle } from './throttle.js';
import type { PasswordHasher } from './passwords.js';
import type { TokenClaims, TokenService } from './tokens.js';
import { API_TOKEN_PREFIX, type ApiTokenService, type StoredApiToken } from './api-tokens.js';
import { emailTaken, toPublicUser, type PublicUser, type UserRecord, type UserStore } from './users.js';
import type { ChangePasswordInput, CreateUserInput, LoginInput, PatchUserInput } from './schemas.js';

export interface Session {
  token: string;
  claims: TokenClaims;
}

/**
 * The user an authenticated request acts as, as re-read from storage, and
 * what it authenticated with: a session (a login's JWT) or a personal API
 * token (which limits what the request may do to its scopes and workspaces).
 */
export interface Caller {
  kind: 'user';
  user: UserRecord;
  session: TokenClaims | null;
  apiToken: StoredApiToken | null;
}

const invalidCredentials = () => new DomainError('INVALID_CREDENTIALS', 'invalid e-mail or password');
const accountDisabled = () => new DomainError('ACCOUNT_DISABLED', 'this account is disabled');

export class AuthService {
  /** Compared against when the e-mail is unknown, so both paths cost one bcrypt comparison. */
  private readonly decoyHash: string;
  /** What else refers to users (workspace memberships) forgets a deleted one. */
  private readonly deletionListeners: Array<(userId: string) => Promise<void>> = [];
  /** What holds on to a user's access (live streams) checks it again at once. */
  private readonly accessListeners: Array<(userId: string) => void> = [];

  constructor(
    readonly users: UserStore,
    readonly tokens: TokenService,
    private readonly passwords: PasswordHasher,
    readonly throttle: LoginThrottle,
    readonly names: UserNames,
    readonly apiTokens: ApiTokenService,
  ) {
    // Hashed once, at start, before anything is served: no worker needs to stay up for it.
    this.decoyHash = bcrypt.hashSync(randomBytes(16).toString('hex'), passwords.cost);
  }

  async login(input: LoginInput, clientAddress: string): Promise<{ user: PublicUser; session: Session }> {
    const user = await this.users.findByEmail(input.email.trim());
    const matches = await this.comparePassword(
      LoginThrottle.key(input.email, clientAddress),
      clientAddress,
      input.password,
      user?.passwordHash ?? this.decoyHash,
    );
    if (!user || !matches) throw invalidCredentials();
    // Checked only after the password: a disabled account is not revealed to guessers.
    if (!user.active) throw accountDisabled();
    return { user: toPublicUser(user), session: await this.tokens.issue(user.id, user.tokenVersion) };
  }

  /** Resolves a bearer token (a session's JWT, or a `plt_` API token) to its user: 401 for any token problem, 403 for a disabled account. */
  async authenticate(token: string): Promise<Caller> {
    if (token.startsWith(API_TOKEN_PREFIX)) {
      const apiToken = await this.apiTokens.resolve(token);
      const user = await this.users.get(apiToken.userId);
      if (!user) throw new DomainError('UNAUTHORIZED', 'the account of this API token no longer exists');
      if (!user.active) throw accountDisabled();
      return { kind: 'user', user, session: null, apiToken };
    }
    const claims = await this.tokens.claimsOf(token);
    // Both reads at once (on PostgreSQL each is a round trip); a revoked token is refused first.
    const [user] = await Promise.all([this.users.get(claims.sub), this.tokens.assertNotRevoked(claims)]);
    if (!user) throw new DomainError('UNAUTHORIZED', 'the account of this session no longer exists');
    // Before the token version: disabling bumps it, and a disabled user's requests are 403.
    if (!user.active) throw accountDisabled();
    if (user.tokenVersion !== claims.tv) {
      throw new DomainError('UNAUTHORIZED', 'the session was ended by a password change or by disabling the account; log in again');
    }
    return { kind: 'user', user, session: claims, apiToken: null };
  }

  /** Only a session logs out (an API token is revoked instead): the endpoint lets no token call this. */
  async logout(caller: Caller): Promise<void> {
    if (caller.session === null) throw invalid('authorization', 'an API token is revoked, not logged out');
    await this.tokens.revoke(caller.session);
    this.accessChanged(caller.user.id);
  }

  /** Ends every other session of the user and returns a fresh one for the caller. */
  async changePassword(caller: Caller, input: ChangePasswordInput, clientAddress: string): Promise<Session> {
    const throttleKey = LoginThrottle.passwordChangeKey(caller.user.id);
    if (!(await this.comparePassword(throttleKey, clientAddress, input.currentPassword, caller.user.passwordHash))) {
      throw new DomainError('INVALID_CREDENTIALS', 'the current password is wrong');
    }
    if (input.newPassword === input.currentPassword) {
      throw invalid('newPassword', 'must differ from the current password');
    }
    const passwordHash = await this.passwords.hash(input.newPassword);
    const user = await this.users.modify(caller.user.id, (record) => {
      record.passwordHash = passwordHash;
      record.tokenVersion += 1;
    });
    this.accessChanged(user.id);
    return this.tokens.issue(user.id, user.tokenVersion);
  }

  passwordMatches(user: UserRecord, password: string): Promise<boolean> {
    return this.passwords.verify(password, user.passwordHash);
  }

  /** An ADMIN sets another user's password: every session of that user ends. */
  async resetPassword(id: string, password: string): Promise<PublicUser> {
    const passwordHash = await this.passwords.hash(password);
    const user = await this.users.modify(id, (record) => {
      record.passwordHash = passwordHash;
      record.tokenVersion += 1;
    });
    this.accessChanged(user.id);
    return toPublicUser(user);
  }

  async createUser(input: CreateUserInput): Promise<PublicUser> {
    // Checked before hashing, which costs; the store checks again as it inserts.
    if (await this.users.findByEmail(input.email)) throw emailTaken(input.email);
    const passwordHash = await this.passwords.hash(input.password);
    const user = await this.users.insert({
      email: input.email,
      fullName: input.fullName,
      roles: input.roles ?? ['USER'],
      passwordHash,
    });
    await this.names.refresh(user.id);
    return toPublicUser(user);
  }

  async listUsers(): Promise<PublicUser[]> {
    return (await this.users.list()).map(toPublicUser);
  }

  async updateUser(id: string, patch: PatchUserInput): Promise<PublicUser> {
    // The store refuses a change that leaves no active ADMIN.
    const user = await this.users.modify(id, (record) => {
      if (patch.fullName !== undefined) record.fullName = patch.fullName;
      if (patch.roles !== undefined) record.roles = patch.roles;
      if (patch.active !== undefined) {
        // Ends every token issued so far, for good: re-enabling later revives none of them.
        if (record.active && !patch.active) record.tokenVersion += 1;
        record.active = patch.active;
      }
    });
    // Disabling ends the user's API tokens as it ends their sessions: for good.
    if (patch.active === false) await this.apiTokens.forgetUser(id);
    if (patch.fullName !== undefined) await this.names.refresh(id);
    this.accessChanged(id);
    return toPublicUser(user);
  }

  /** The user's tokens stop working with the account (authenticate finds no user). */
  async deleteUser(caller: Caller, id: string): Promise<void> {
    if (caller.user.id === id) throw conflict('you cannot delete your own account; another administrator can');
    await this.users.remove(id);
    await this.apiTokens.forgetUser(id);
    await this.names.refresh(id);
    for (const listener of this.deletionListeners) await listener(id);
    this.accessChanged(id);
  }

  onUserDeleted(listener: (userId: string) => Promise<void>): void {
    this.deletionListeners.push(listener);
  }

  /** Sessions ended, or the user's account or roles changed. */
  onAccessChanged(listener: (userId: string) => void): void {
    this.accessListeners.push(listener);
  }

  private accessChanged(userId: string): void {
    for (const listener of this.accessListeners) listener(userId);
  }

  /**
   * One throttled bcrypt comparison: the attempt holds its place in the throttle
   * while the comparison runs, so concurrent guesses cannot overtake the limit.
   */
  private async comparePassword(throttleKey: string, clientAddress: string, password: string, hash: string): Promise<boolean> {
    const attempt = await this.throttle.begin(throttleKey, clientAddress);
    let matches: boolean;
    try {
      matches = await this.passwords.verify(password, hash);
    } catch (error) {
      await attempt.abandoned();
      throw error;
    }
    if (matches) await attempt.succeeded();
    else await attempt.failed();
    return matches;
  }
}
