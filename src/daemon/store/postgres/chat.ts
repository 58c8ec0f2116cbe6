import { byChannelName, type ChannelSummary, type ChatLimits, type ChatMessage, type ChatStore } from '../../chat/store.js';
import type { Database } from './database.js';

/** The key a channel is stored under: its name as JSON text (see migration 0005). */
const nameKey = (channel: string) => JSON.stringify(channel);

/** First key of the advisory lock under which a workspace's new channels are counted and opened. */
const CHANNELS_LOCK = 0x63686174; // "chat"

/** Stores the message numbered by `numbered` and drops what fell out of the channel's latest $5; answers whether it was stored. */
const STORE_AND_TRIM = `stored AS (
    INSERT INTO chat_messages (workspace_id, channel_name, seq, message) SELECT $1, $2, last_seq, $3::json FROM numbered
  ), dropped AS (
    DELETE FROM chat_messages WHERE workspace_id = $1 AND channel_name = $2 AND seq <= (SELECT last_seq FROM numbered) - $5
  )
  SELECT count(*)::int AS posted FROM numbered`;

/**
 * The `chat_channels` and `chat_messages` tables. A post to an existing
 * channel is one statement: it numbers the message by bumping its channel's
 * row, which also makes posts to one channel wait for each other (on any
 * daemon), stores it, and drops what fell out of the channel's latest
 * messages. Messages are numbered without gaps per channel, so the count is
 * the latest number, capped. A new channel is opened under an advisory lock
 * of its workspace, so that daemons opening channels at once cannot together
 * pass the workspace's limit.
 */
export class PostgresChatStore implements ChatStore {
  constructor(
    private readonly database: Database,
    private readonly limits: ChatLimits,
  ) {}

  async post(workspaceId: string, message: ChatMessage): Promise<boolean> {
    const values = [workspaceId, nameKey(message.channel), message, message.postedAt, this.limits.messagesPerChannel];
    const { rows } = await this.database.query<{ posted: number }>(
      `WITH numbered AS (
         UPDATE chat_channels SET last_seq = last_seq + 1, last_posted_at = $4
         WHERE workspace_id = $1 AND channel_name = $2 RETURNING last_seq
       ), ${STORE_AND_TRIM}`,
      values,
    );
    if (rows[0]!.posted > 0) return true;
    return this.database.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [CHANNELS_LOCK, workspaceId]);
      // The channel may have been opened meanwhile: then this is a post to it like any other.
      const opened = await tx.query<{ posted: number }>(
        `WITH room AS (
           SELECT EXISTS (SELECT 1 FROM chat_channels WHERE workspace_id = $1 AND channel_name = $2)
             OR (SELECT count(*) FROM chat_channels WHERE workspace_id = $1) < $6 AS ok
         ), numbered AS (
           INSERT INTO chat_channels AS c (workspace_id, channel_name, last_seq, last_posted_at)
           SELECT $1::text, $2::text, 1, $4::timestamptz FROM room WHERE ok
           ON CONFLICT (workspace_id, channel_name) DO UPDATE SET last_seq = c.last_seq + 1, last_posted_at = EXCLUDED.last_posted_at
           RETURNING last_seq
         ), ${STORE_AND_TRIM}`,
        [...values, this.limits.channelsPerWorkspace],
      );
      return opened.rows[0]!.posted > 0;
    });
  }

  async takes(workspaceId: string, channel: string): Promise<boolean> {
    const { rows } = await this.database.query<{ ok: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM chat_channels WHERE workspace_id = $1 AND channel_name = $2)
         OR (SELECT count(*) FROM chat_channels WHERE workspace_id = $1) < $3 AS ok`,
      [workspaceId, nameKey(channel), this.limits.channelsPerWorkspace],
    );
    return rows[0]!.ok;
  }

  async channelsOf(workspaceId: string): Promise<ChannelSummary[]> {
    const { rows } = await this.database.query<{ channel_name: string; last_seq: string; last_posted_at: Date }>(
      'SELECT channel_name, last_seq, last_posted_at FROM chat_channels WHERE workspace_id = $1',
      [workspaceId],
    );
    return rows
      .map((row) => ({
        channel: JSON.parse(row.channel_name) as string,
        messageCount: Math.min(Number(row.last_seq), this.limits.messagesPerChannel),
        lastMessageAt: row.last_posted_at.toISOString(),
      }))
      .sort(byChannelName);
  }

  async messages(workspaceId: string, channel: string, limit: number, before?: string): Promise<ChatMessage[]> {
    // A message no longer kept leaves nothing older than it: `seq < NULL` matches no row.
    const { rows } = await this.database.query<{ message: ChatMessage }>(
      `SELECT message FROM chat_messages WHERE workspace_id = $1 AND channel_name = $2
         AND ($4::text IS NULL OR seq < (SELECT seq FROM chat_messages WHERE workspace_id = $1 AND channel_name = $2 AND message->>'id' = $4))
       ORDER BY seq DESC LIMIT $3`,
      [workspaceId, nameKey(channel), limit, before ?? null],
    );
    return rows.map((row) => row.message).reverse();
  }

  /** Each post commits before it resolves: nothing is left to flush. */
  async close(): Promise<void> {}
}
