import type { UserStore } from './users.js';

/**
 * Every user's fullName in memory, for the catalog's author field, which every
 * listing reads and which changes rarely: loaded at start, refreshed after this
 * daemon's changes and, through the store's change feed, other daemons'.
 * Refreshes run one after the other, each reading after the one before
 * finished, so the last one asked for leaves the latest name.
 */
export class UserNames {
  private names = new Map<string, string>();
  private refreshed: Promise<void> = Promise.resolve();

  private constructor(private readonly users: UserStore) {}

  static async load(users: UserStore): Promise<UserNames> {
    const names = new UserNames(users);
    await names.reloadAll();
    users.onChange((id) => void names.refresh(id).catch(() => undefined));
    return names;
  }

  fullNameOf(id: string): string | undefined {
    return this.names.get(id);
  }

  /** Re-reads one user (null: every user); resolves once the name in memory is the stored one. */
  refresh(id: string | null): Promise<void> {
    const next = this.refreshed.then(async () => {
      if (id === null) return this.reloadAll();
      const user = await this.users.get(id);
      if (user) this.names.set(id, user.fullName);
      else this.names.delete(id);
    });
    // A failed read (the database away) must not stop the refreshes after it.
    this.refreshed = next.catch(() => undefined);
    return next;
  }

  private async reloadAll(): Promise<void> {
    this.names = new Map((await this.users.list()).map((user) => [user.id, user.fullName]));
  }
}
