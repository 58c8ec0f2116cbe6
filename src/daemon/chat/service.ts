import { randomUUID } from 'node:crypto';
import type { PageBudget } from '../paging.js';
import { conflict } from '../errors.js';
import type { ChannelSummary, ChatMessage, ChatStore } from './store.js';

/** What the chat plugin posts: a notification's channel, text and who sent it. */
export interface NewChatMessage {
  channel: string;
  message: string;
  sender: string;
  publishedBy: string;
  eventId: string;
}

const tooManyChannels = (workspaceId: string, channelLimit: number) =>
  conflict(
    `workspace ${workspaceId} already has ${channelLimit} chat channels, as many as it keeps (PLATFORM_CHAT_CHANNELS): ` +
      'send the notification to one of its channels',
  );

/** Refuses (409), before anything is recorded, a notification that would open a channel beyond the workspace's limit. */
export async function admitChatMessage(store: ChatStore, workspaceId: string, channel: string, channelLimit: number): Promise<void> {
  if (!(await store.takes(workspaceId, channel))) throw tooManyChannels(workspaceId, channelLimit);
}

/** Stores a new message in its channel; durable when it resolves. 409 when it would open a channel beyond the limit. */
export async function postChatMessage(store: ChatStore, workspaceId: string, input: NewChatMessage, channelLimit: number): Promise<ChatMessage> {
  const message: ChatMessage = { id: randomUUID(), ...input, postedAt: new Date().toISOString() };
  if (!(await store.post(workspaceId, message))) throw tooManyChannels(workspaceId, channelLimit);
  return message;
}

/** Reading chat channels: 404 for an unknown workspace, an empty list for a channel without messages. */
export class ChatService {
  constructor(
    private readonly store: ChatStore,
    private readonly workspaces: { assertExists(id: string): Promise<void> },
  ) {}

  async channels(workspaceId: string): Promise<ChannelSummary[]> {
    await this.workspaces.assertExists(workspaceId);
    return this.store.channelsOf(workspaceId);
  }

  /**
   * The latest `limit` messages older than `before` (a message id), as many as
   * `budget` holds counting from the newest, oldest first in the budget;
   * `oldest` is the first message on the page when older ones follow.
   */
  async messages(workspaceId: string, channel: string, query: { limit: number; before?: string | undefined }, budget: PageBudget<ChatMessage>): Promise<{ oldest?: string }> {
    await this.workspaces.assertExists(workspaceId);
    // One beyond the limit tells whether older ones follow.
    const messages = await this.store.messages(workspaceId, channel, query.limit + 1, query.before);
    let first = messages.length;
    while (first > 0 && budget.count < query.limit && budget.admit(messages[first - 1]!)) first -= 1;
    budget.reverse();
    return first > 0 ? { oldest: messages[first]!.id } : {};
  }
}
