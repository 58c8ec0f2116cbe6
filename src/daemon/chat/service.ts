import { randomUUID } from 'node:crypto';
import type { ChannelSummary, ChatMessage, ChatStore } from './store.js';

/** What the chat plugin posts: a notification's channel, text and who sent it. */
export interface NewChatMessage {
  channel: string;
  message: string;
  sender: string;
  publishedBy: string;
  eventId: string;
}

/** Stores a new message in its channel; durable when it resolves. */
export async function postChatMessage(store: ChatStore, workspaceId: string, input: NewChatMessage): Promise<ChatMessage> {
  const message: ChatMessage = { id: randomUUID(), ...input, postedAt: new Date().toISOString() };
  await store.post(workspaceId, message);
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

  async messages(workspaceId: string, channel: string, limit: number): Promise<ChatMessage[]> {
    await this.workspaces.assertExists(workspaceId);
    return this.store.messages(workspaceId, channel, limit);
  }
}
