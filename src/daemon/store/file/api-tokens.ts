import { join } from 'node:path';
import { tooManyTokens, type ApiTokenStore, type StoredApiToken } from '../../auth/api-tokens.js';
import { Collection } from '../collection.js';

interface ApiTokensDocument {
  schemaVersion: 1;
  tokens: StoredApiToken[];
}

/**
 * api-tokens.json: every personal API token (at most a hundred per user), in
 * memory with an index by secret hash. One daemon owns the data directory,
 * so each change checks and applies in one synchronous step. Records are
 * replaced, never changed in place.
 */
export class FileApiTokenStore implements ApiTokenStore {
  private byHash = new Map<string, StoredApiToken>();

  private constructor(private readonly collection: Collection<ApiTokensDocument>) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(dataDir: string): Promise<FileApiTokenStore> {
    const collection = await Collection.open<ApiTokensDocument>({
      file: join(dataDir, 'api-tokens.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, tokens: [] }),
    });
    return new FileApiTokenStore(collection);
  }

  async insert(token: StoredApiToken, maxPerUser: number): Promise<void> {
    await this.collection.update((data) => {
      if (data.tokens.filter((other) => other.userId === token.userId).length >= maxPerUser) throw tooManyTokens(maxPerUser);
      data.tokens.push(token);
      this.byHash.set(token.secretHash, token);
    });
  }

  async findBySecretHash(secretHash: string): Promise<StoredApiToken | undefined> {
    return this.byHash.get(secretHash);
  }

  async listByUser(userId: string): Promise<StoredApiToken[]> {
    return this.collection.data.tokens.filter((token) => token.userId === userId);
  }

  async listAll(): Promise<StoredApiToken[]> {
    return [...this.collection.data.tokens];
  }

  remove(id: string, userId: string | null): Promise<boolean> {
    return this.collection.update((data) => {
      const found = data.tokens.find((token) => token.id === id && (userId === null || token.userId === userId));
      if (!found) return false;
      data.tokens = data.tokens.filter((token) => token !== found);
      this.byHash.delete(found.secretHash);
      return true;
    });
  }

  async recordUses(uses: ReadonlyMap<string, string>): Promise<void> {
    if (!this.collection.data.tokens.some((token) => uses.has(token.id))) return;
    await this.collection.update((data) => {
      data.tokens = data.tokens.map((token) => {
        const lastUsedAt = uses.get(token.id);
        return lastUsedAt === undefined ? token : { ...token, lastUsedAt };
      });
      this.reindex();
    });
  }

  async removeUser(userId: string): Promise<void> {
    if (!this.collection.data.tokens.some((token) => token.userId === userId)) return;
    await this.collection.update((data) => {
      data.tokens = data.tokens.filter((token) => token.userId !== userId);
      this.reindex();
    });
  }

  close(): Promise<void> {
    return this.collection.flush();
  }

  private reindex(): void {
    this.byHash = new Map(this.collection.data.tokens.map((token) => [token.secretHash, token]));
  }
}
