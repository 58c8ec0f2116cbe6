import { conflict } from '../errors.js';
import type { Role } from './schemas.js';

export interface UserRecord {
  id: string;
  email: string;
  fullName: string;
  roles: Role[];
  active: boolean;
  passwordHash: string;
  /** Bumped when every token of the user must stop working (password change, disabling). */
  tokenVersion: number;
  createdAt: string;
  updatedAt: string;
}

/** The User resource of the interface: never the hash. */
export interface PublicUser {
  id: string;
  email: string;
  fullName: string;
  roles: Role[];
  active: boolean;
}

export const toPublicUser = (user: UserRecord): PublicUser => ({
  id: user.id,
  email: user.email,
  fullName: user.fullName,
  roles: [...user.roles],
  active: user.active,
});

export const isAdmin = (user: Pick<UserRecord, 'roles'>) => user.roles.includes('ADMIN');
export const isActiveAdmin = (user: Pick<UserRecord, 'roles' | 'active'>) => user.active && isAdmin(user);

export interface NewUser {
  email: string;
  fullName: string;
  roles: Role[];
  passwordHash: string;
}

export const emailTaken = (email: string) => conflict(`a user with e-mail ${email} already exists`);
export const lastActiveAdmin = () => conflict('this is the last active administrator; promote another user first');

/**
 * Where users are kept (store/file/users.ts, store/postgres/users.ts). Besides
 * storing, a store keeps two rules that must hold however many daemons write
 * at once: one account per e-mail address (ignoring case), and never a change
 * or removal that leaves the platform without an active ADMIN once it has one.
 */
export interface UserStore {
  count(): Promise<number>;
  get(id: string): Promise<UserRecord | undefined>;
  /** Ignoring case. */
  findByEmail(email: string): Promise<UserRecord | undefined>;
  /** In the order of creation. */
  list(): Promise<UserRecord[]>;
  /** Active, token version 0. Throws CONFLICT when the e-mail is taken. */
  insert(input: NewUser): Promise<UserRecord>;
  /**
   * Applies `change` to a copy of the current record and stores it, with no
   * other change of that user in between; a `change` that throws stores
   * nothing. Throws NOT_FOUND, or CONFLICT when it would leave no active ADMIN.
   */
  modify(id: string, change: (user: UserRecord) => void): Promise<UserRecord>;
  /** Throws NOT_FOUND, or CONFLICT when the user is the last active ADMIN. */
  remove(id: string): Promise<void>;
  /**
   * `listener` learns the id of each user another daemon sharing the store
   * changed, or null when changes may have been missed (a lost connection).
   * A store no other daemon writes to never calls it.
   */
  onChange(listener: (id: string | null) => void): void;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}
