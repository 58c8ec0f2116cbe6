import type { ChannelSummary, ChatMessage, ChatStore } from './store.js';

/** Reading chat channels: 404 for an unknown workspace, an empty list for a channel without messages. */
export class ChatService {
  constructor(
    private readonly store: ChatStore,
    private readonly workspaces: { get(id: string): unknown },
  ) {}

  channels(workspaceId: string): ChannelSummary[] {
    this.workspaces.get(workspaceId);
    return this.store.channelsOf(workspaceId);
  }

  messages(workspaceId: string, channel: string, limit: number): ChatMessage[] {
    this.workspaces.get(workspaceId);
    return this.store.messages(workspaceId, channel, limit);
  }
}
