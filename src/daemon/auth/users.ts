import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Collection } from '../store/collection.js';
import { conflict, notFound } from '../errors.js';
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

interface UsersDocument {
  schemaVersion: 1;
  users: UserRecord[];
}

export const toPublicUser = (user: UserRecord): PublicUser => ({
  id: user.id,
  email: user.email,
  fullName: user.fullName,
  roles: [...user.roles],
  active: user.active,
});

export const isAdmin = (user: Pick<UserRecord, 'roles'>) => user.roles.includes('ADMIN');

export interface NewUser {
  email: string;
  fullName: string;
  roles: Role[];
  passwordHash: string;
}

/** users.json, with in-memory indexes by id and by lowercased e-mail. */
export class UserStore {
  private byId = new Map<string, UserRecord>();
  private byEmail = new Map<string, UserRecord>();

  private constructor(private readonly collection: Collection<UsersDocument>) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(dataDir: string): Promise<UserStore> {
    const collection = await Collection.open<UsersDocument>({
      file: join(dataDir, 'users.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, users: [] }),
    });
    return new UserStore(collection);
  }

  get count(): number {
    return this.byId.size;
  }

  get(id: string): UserRecord | undefined {
    return this.byId.get(id);
  }

  findByEmail(email: string): UserRecord | undefined {
    return this.byEmail.get(email.toLowerCase());
  }

  list(): UserRecord[] {
    return [...this.collection.data.users];
  }

  async insert(input: NewUser): Promise<UserRecord> {
    return this.collection.update((data) => {
      if (this.byEmail.has(input.email.toLowerCase())) throw conflict(`a user with e-mail ${input.email} already exists`);
      const now = new Date().toISOString();
      const user: UserRecord = { id: randomUUID(), ...input, active: true, tokenVersion: 0, createdAt: now, updatedAt: now };
      data.users.push(user);
      this.index(user);
      return user;
    });
  }

  /** Applies `change` to a copy and swaps it in, so a throwing change leaves the user untouched. */
  async modify(id: string, change: (user: UserRecord) => void): Promise<UserRecord> {
    return this.collection.update((data) => {
      const index = data.users.findIndex((user) => user.id === id);
      if (index < 0) throw notFound(`user ${id} not found`);
      const next = structuredClone(data.users[index]!);
      change(next);
      next.updatedAt = new Date().toISOString();
      data.users[index] = next;
      this.index(next);
      return next;
    });
  }

  async remove(id: string): Promise<void> {
    await this.collection.update((data) => {
      const user = this.byId.get(id);
      if (!user) throw notFound(`user ${id} not found`);
      data.users = data.users.filter((candidate) => candidate.id !== id);
      this.byId.delete(id);
      this.byEmail.delete(user.email.toLowerCase());
    });
  }

  flush(): Promise<void> {
    return this.collection.flush();
  }

  private index(user: UserRecord): void {
    this.byId.set(user.id, user);
    this.byEmail.set(user.email.toLowerCase(), user);
  }

  private reindex(): void {
    this.byId = new Map();
    this.byEmail = new Map();
    for (const user of this.collection.data.users) this.index(user);
  }
}
