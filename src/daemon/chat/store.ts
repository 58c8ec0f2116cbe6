import type { ChatMessage } from '../../contract/types.js';

export type { ChatMessage } from '../../contract/types.js';

export interface ChannelSummary {
  channel: string;
  messageCount: number;
  lastMessageAt: string;
}

/** Each channel keeps its latest messages; older ones are dropped when a new one is posted. */
export const MESSAGES_PER_CHANNEL = 1000;

/**
 * Where the chat channels of every workspace are kept (store/file/chat.ts,
 * store/postgres/chat.ts). A channel exists once a message was posted to it
 * and keeps its latest MESSAGES_PER_CHANNEL, in the order they were posted.
 */
export interface ChatStore {
  /** Adds `message` as the newest of its channel, dropping the oldest beyond the limit. Durable when it resolves. */
  post(workspaceId: string, message: ChatMessage): Promise<void>;
  /** The workspace's channels, by name. */
  channelsOf(workspaceId: string): Promise<ChannelSummary[]>;
  /**
   * The latest `limit` messages of the channel, oldest first (reading order), older than the message
   * `before` (an id) when given; [] for an unknown channel, or when that message is no longer kept.
   */
  messages(workspaceId: string, channel: string, limit: number, before?: string): Promise<ChatMessage[]>;
  /** Once every write made so far is durable. */
  close(): Promise<void>;
}

/** Channels are listed by name (on PostgreSQL too: not by the database's collation). */
export const byChannelName = (a: ChannelSummary, b: ChannelSummary) => a.channel.localeCompare(b.channel);
