import type pg from 'pg';
import { quoteIdentifier, type Database, type Queryable } from './database.js';

/** How long a lost LISTEN connection waits before it connects again. */
const RECONNECT_DELAY_MS = 1_000;

type Listener = (key: string | null) => void;

/**
 * What other daemons on the same schema changed, by LISTEN/NOTIFY: a write
 * calls notify() inside its transaction, and PostgreSQL delivers the
 * notification to every listening daemon once (and only if) it commits. One
 * connection of its own per daemon, outside the pool. The daemon's own
 * notifications are skipped: it knows its changes already. A lost connection
 * is opened again every second; listeners then hear `null` (changes may have
 * been missed while it was down) and reload what they keep.
 */
export class ChangeFeed {
  private readonly listeners = new Map<string, Listener[]>();
  private client: pg.Client | null = null;
  private started = false;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  /** LISTENs of topics subscribed while connected, one after the other (a pg client runs one query at a time). */
  private listening: Promise<void> = Promise.resolve();

  constructor(
    private readonly database: Database,
    private readonly onError: (error: Error) => void,
  ) {}

  /** `topic` is per schema: two platforms in one database do not hear each other. */
  subscribe(topic: string, listener: Listener): void {
    const channel = this.channel(topic);
    const listeners = this.listeners.get(channel);
    if (listeners) {
      listeners.push(listener);
      return;
    }
    this.listeners.set(channel, [listener]);
    const client = this.client;
    if (!client) return;
    this.listening = this.listening.then(
      () => client.query(`LISTEN ${quoteIdentifier(channel)}`).then(() => undefined, (error: Error) => this.onError(error)),
    );
  }

  /** Inside a write's transaction: other daemons learn of `key` when it commits. */
  async notify(tx: Queryable, topic: string, key: string): Promise<void> {
    await tx.query('SELECT pg_notify($1, $2)', [this.channel(topic), `${this.database.instanceId} ${key}`]);
  }

  /** Connects and listens; resolves once notifications of every topic subscribed so far are heard. */
  async start(): Promise<void> {
    this.started = true;
    await this.connect(false);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private channel(topic: string): string {
    return `${this.database.schema}.${topic}`;
  }

  private async connect(reconnecting: boolean): Promise<void> {
    const client = this.database.dedicatedClient();
    client.on('notification', ({ channel, payload }) => {
      const space = payload?.indexOf(' ') ?? -1;
      if (space < 0 || payload!.slice(0, space) === this.database.instanceId) return;
      for (const listener of this.listeners.get(channel) ?? []) listener(payload!.slice(space + 1));
    });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (error) this.onError(error);
      if (this.client === client) this.client = null;
      if (!this.closed) this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    try {
      await client.connect();
      for (const channel of this.listeners.keys()) await client.query(`LISTEN ${quoteIdentifier(channel)}`);
    } catch (error) {
      lost = true; // the caller retries, not onLost
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    if (reconnecting) for (const listeners of this.listeners.values()) for (const listener of listeners) listener(null);
  }

  /** Unreferenced: waiting to reconnect never keeps a process alive by itself (the daemon's server does). */
  private scheduleReconnect(): void {
    this.retry = setTimeout(() => void this.reconnect(), RECONNECT_DELAY_MS);
    this.retry.unref();
  }

  private async reconnect(): Promise<void> {
    this.retry = null;
    if (this.closed || !this.started) return;
    try {
      await this.connect(true);
    } catch (error) {
      this.onError(error as Error);
      if (!this.closed) this.scheduleReconnect();
    }
  }
}
