import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { emailTaken, isActiveAdmin, lastActiveAdmin, type NewUser, type UserRecord, type UserStore } from '../../auth/users.js';
import { notFound } from '../../errors.js';
import { Collection } from '../collection.js';

interface UsersDocument {
  schemaVersion: 1;
  users: UserRecord[];
}

/**
 * users.json, with in-memory indexes by id and by lowercased e-mail. One
 * daemon owns the data directory, and each change validates and applies in
 * one synchronous step, so the store's rules need no locking.
 */
export class FileUserStore implements UserStore {
  private byId = new Map<string, UserRecord>();
  private byEmail = new Map<string, UserRecord>();

  private constructor(private readonly collection: Collection<UsersDocument>) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(dataDir: string): Promise<FileUserStore> {
    const collection = await Collection.open<UsersDocument>({
      file: join(dataDir, 'users.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, users: [] }),
    });
    return new FileUserStore(collection);
  }

  async count(): Promise<number> {
    return this.byId.size;
  }

  async get(id: string): Promise<UserRecord | undefined> {
    return this.byId.get(id);
  }

  async findByEmail(email: string): Promise<UserRecord | undefined> {
    return this.byEmail.get(email.toLowerCase());
  }

  async list(): Promise<UserRecord[]> {
    return [...this.collection.data.users];
  }

  insert(input: NewUser): Promise<UserRecord> {
    return this.collection.update((data) => {
      if (this.byEmail.has(input.email.toLowerCase())) throw emailTaken(input.email);
      const now = new Date().toISOString();
      const user: UserRecord = { id: randomUUID(), ...input, active: true, tokenVersion: 0, createdAt: now, updatedAt: now };
      data.users.push(user);
      this.index(user);
      return user;
    });
  }

  /** Applies `change` to a copy and swaps it in, so a throwing change leaves the user untouched. */
  modify(id: string, change: (user: UserRecord) => void): Promise<UserRecord> {
    return this.collection.update((data) => {
      const index = data.users.findIndex((user) => user.id === id);
      if (index < 0) throw notFound(`user ${id} not found`);
      const current = data.users[index]!;
      const next = structuredClone(current);
      change(next);
      if (isActiveAdmin(current) && !isActiveAdmin(next)) this.assertAnotherActiveAdmin(id);
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
      if (isActiveAdmin(user)) this.assertAnotherActiveAdmin(id);
      data.users = data.users.filter((candidate) => candidate.id !== id);
      this.byId.delete(id);
      this.byEmail.delete(user.email.toLowerCase());
    });
  }

  /** The data directory is this daemon's alone: nobody else changes it. */
  onChange(): void {}

  close(): Promise<void> {
    return this.collection.flush();
  }

  private assertAnotherActiveAdmin(exceptId: string): void {
    if (!this.collection.data.users.some((user) => user.id !== exceptId && isActiveAdmin(user))) throw lastActiveAdmin();
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
