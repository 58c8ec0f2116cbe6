import { join } from 'node:path';
import { Collection } from '../collection.js';
import { notFound } from '../../errors.js';
import { matchesDeadLetterFilter, type DeadLetterFilter, type StoredDeadLetter } from '../../dispatch/types.js';
import { maskCredentials, showsCredentials } from '../../dispatch/url-credentials.js';

interface DeadLettersDocument {
  schemaVersion: 1;
  /** Oldest first. */
  deadLetters: StoredDeadLetter[];
}

/** dead-letters.json: deliveries that failed for good, until replayed or discarded. */
export class DeadLetterFile {
  private byId = new Map<string, StoredDeadLetter>();
  private byDelivery = new Map<string, StoredDeadLetter>();

  private constructor(private readonly collection: Collection<DeadLettersDocument>) {
    this.reindex();
    collection.onReset(() => this.reindex());
  }

  static async open(dataDir: string): Promise<DeadLetterFile> {
    const collection = await Collection.open<DeadLettersDocument>({
      file: join(dataDir, 'dead-letters.json'),
      schemaVersion: 1,
      create: () => ({ schemaVersion: 1, deadLetters: [] }),
    });
    const store = new DeadLetterFile(collection);
    await store.maskClearCredentials();
    return store;
  }

  /** Dead letters written before subscriber URLs were masked: masked at open, the file rewritten. */
  private async maskClearCredentials(): Promise<void> {
    const clear = this.collection.data.deadLetters.filter(({ subscriber }) => showsCredentials(subscriber.serviceBaseUrl));
    if (clear.length === 0) return;
    await this.collection.update(() => {
      for (const { subscriber } of clear) subscriber.serviceBaseUrl = maskCredentials(subscriber.serviceBaseUrl!);
    });
  }

  get size(): number {
    return this.byId.size;
  }

  get(id: string): StoredDeadLetter {
    const letter = this.byId.get(id);
    if (!letter) throw notFound(`dead letter ${id} not found`);
    return letter;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  /** Newest first. */
  list(filter: DeadLetterFilter, page: { limit: number; offset: number }): { items: StoredDeadLetter[]; total: number } {
    const all = this.collection.data.deadLetters.filter(matchesDeadLetterFilter(filter)).reverse();
    return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
  }

  /** Oldest first. */
  matching(filter: DeadLetterFilter): StoredDeadLetter[] {
    return this.collection.data.deadLetters.filter(matchesDeadLetterFilter(filter));
  }

  /** One record per delivery: a delivery dead-lettered again (after a crash) replaces its record. */
  async add(letter: StoredDeadLetter): Promise<void> {
    await this.collection.update((data) => {
      const previous = this.byDelivery.get(letter.deliveryId);
      if (previous) {
        data.deadLetters.splice(data.deadLetters.indexOf(previous), 1);
        this.byId.delete(previous.id);
      }
      data.deadLetters.push(letter);
      this.byId.set(letter.id, letter);
      this.byDelivery.set(letter.deliveryId, letter);
    });
  }

  async remove(ids: readonly string[]): Promise<void> {
    const removed = new Set(ids);
    await this.collection.update((data) => {
      data.deadLetters = data.deadLetters.filter((letter) => !removed.has(letter.id));
      this.reindex();
    });
  }

  flush(): Promise<void> {
    return this.collection.flush();
  }

  private reindex(): void {
    this.byId = new Map(this.collection.data.deadLetters.map((letter) => [letter.id, letter]));
    this.byDelivery = new Map(this.collection.data.deadLetters.map((letter) => [letter.deliveryId, letter]));
  }
}
