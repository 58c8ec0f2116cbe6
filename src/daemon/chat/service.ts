import type { ChannelSummary, ChatMessage, ChatStore } from './store.js';

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
