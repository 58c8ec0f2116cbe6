import { byChannelName, MESSAGES_PER_CHANNEL, type ChannelSummary, type ChatMessage, type ChatStore } from '../../chat/store.js';
import type { Database } from './database.js';

/** The key a channel is stored under: its name as JSON text (see migration 0005). */
const nameKey = (channel: string) => JSON.stringify(channel);

/**
 * The `chat_channels` and `chat_messages` tables. A post is one statement:
 * it numbers the message by bumping its channel's row, which also makes posts
 * to one channel wait for each other (on any daemon), stores it, and drops
 * what fell out of the channel's latest MESSAGES_PER_CHANNEL. Messages are
 * numbered without gaps per channel, so the count is the latest number, capped.
 */
export class PostgresChatStore implements ChatStore {
  constructor(private readonly database: Database) {}

  async post(workspaceId: string, message: ChatMessage): Promise<void> {
    await this.database.query(
      `WITH numbered AS (
         INSERT INTO chat_channels AS c (workspace_id, channel_name, last_seq, last_posted_at) VALUES ($1::text, $2::text, 1, $4)
         ON CONFLICT (workspace_id, channel_name) DO UPDATE SET last_seq = c.last_seq + 1, last_posted_at = EXCLUDED.last_posted_at
         RETURNING last_seq
       ), stored AS (
         INSERT INTO chat_messages (workspace_id, channel_name, seq, message) SELECT $1, $2, last_seq, $3::json FROM numbered
       )
       DELETE FROM chat_messages
       WHERE workspace_id = $1 AND channel_name = $2 AND seq <= (SELECT last_seq FROM numbered) - $5`,
      [workspaceId, nameKey(message.channel), message, message.postedAt, MESSAGES_PER_CHANNEL],
    );
  }

  async channelsOf(workspaceId: string): Promise<ChannelSummary[]> {
    const { rows } = await this.database.query<{ channel_name: string; last_seq: string; last_posted_at: Date }>(
      'SELECT channel_name, last_seq, last_posted_at FROM chat_channels WHERE workspace_id = $1',
      [workspaceId],
    );
    return rows
      .map((row) => ({
        channel: JSON.parse(row.channel_name) as string,
        messageCount: Math.min(Number(row.last_seq), MESSAGES_PER_CHANNEL),
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
