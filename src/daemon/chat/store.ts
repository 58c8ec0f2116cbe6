import type { ChatMessage } from '../../contract/types.js';

export type { ChatMessage } from '../../contract/types.js';

export interface ChannelSummary {
  channel: string;
  messageCount: number;
  lastMessageAt: string;
}

/**
 * What chat keeps, so that what members send cannot grow without bound: at
 * most `channelsPerWorkspace` channels in a workspace (PLATFORM_CHAT_CHANNELS;
 * a message that would open another is refused), and the latest
 * `messagesPerChannel` messages of each (older ones are dropped).
 */
export interface ChatLimits {
  channelsPerWorkspace: number;
  messagesPerChannel: number;
}

export const DEFAULT_CHAT_LIMITS: ChatLimits = { channelsPerWorkspace: 1000, messagesPerChannel: 10_000 };

/**
 * Where the chat channels of every workspace are kept (store/file/chat.ts,
 * store/postgres/chat.ts), within its ChatLimits. A channel exists once a
 * message was posted to it and keeps its latest messages, in the order they
 * were posted.
 */
export interface ChatStore {
  /**
   * Adds `message` as the newest of its channel, dropping the oldest beyond the
   * limit; durable when it resolves. False, and nothing stored, when it would
   * open a channel beyond the workspace's limit.
   */
  post(workspaceId: string, message: ChatMessage): Promise<boolean>;
  /** Whether a message to this channel would be taken now: the channel exists, or the workspace has room for one more. */
  takes(workspaceId: string, channel: string): Promise<boolean>;
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
