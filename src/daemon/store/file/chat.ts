import { join } from 'node:path';
import { byChannelName, type ChannelSummary, type ChatLimits, type ChatMessage, type ChatStore } from '../../chat/store.js';
import { AppendLog } from '../append-log.js';

/** One line of chat.log. */
interface ChatRecord {
  workspaceId: string;
  message: ChatMessage;
}

interface Channel {
  workspaceId: string;
  messages: ChatMessage[];
}

const channelKey = (workspaceId: string, channel: string) => `${workspaceId}\u0000${channel}`;

/**
 * Chat channels per workspace, as an append-only log (chat.log) replayed into
 * memory at start: posting a message costs one line. The log is compacted to
 * what the channels keep once it holds twice as many lines as that, so its
 * size is bounded by the limits too.
 */
export class FileChatStore implements ChatStore {
  private compacting: Promise<void> | null = null;

  private constructor(
    private readonly limits: ChatLimits,
    private readonly log: AppendLog<ChatRecord>,
    private readonly channels: Map<string, Channel>,
    /** Channels per workspace. */
    private readonly channelCounts: Map<string, number>,
    /** Lines in the log, and messages the channels keep: compaction is due when the first far exceeds the second. */
    private lines: number,
    private retained: number,
  ) {}

  static async open(dataDir: string, limits: ChatLimits): Promise<FileChatStore> {
    const channels = new Map<string, Channel>();
    const channelCounts = new Map<string, number>();
    let lines = 0;
    let retained = 0;
    // What the log holds is kept, even channels beyond a limit lowered since: the limit refuses new ones.
    const log = await AppendLog.open<ChatRecord>(join(dataDir, 'chat.log'), (record) => {
      lines += 1;
      retained += 1 - keep(channels, channelCounts, record, limits.messagesPerChannel);
    });
    return new FileChatStore(limits, log, channels, channelCounts, lines, retained);
  }

  async takes(workspaceId: string, channel: string): Promise<boolean> {
    return this.hasRoom(workspaceId, channel);
  }

  async post(workspaceId: string, message: ChatMessage): Promise<boolean> {
    // Checked and kept in one synchronous step: concurrent posts cannot overshoot the limit.
    if (!this.hasRoom(workspaceId, message.channel)) return false;
    const record = { workspaceId, message };
    this.retained += 1 - keep(this.channels, this.channelCounts, record, this.limits.messagesPerChannel);
    this.lines += 1;
    await this.log.append(record);
    this.compactIfWorthIt();
    return true;
  }

  private hasRoom(workspaceId: string, channel: string): boolean {
    return this.channels.has(channelKey(workspaceId, channel)) || (this.channelCounts.get(workspaceId) ?? 0) < this.limits.channelsPerWorkspace;
  }

  async channelsOf(workspaceId: string): Promise<ChannelSummary[]> {
    const summaries: ChannelSummary[] = [];
    for (const channel of this.channels.values()) {
      if (channel.workspaceId !== workspaceId) continue;
      const last = channel.messages.at(-1)!;
      summaries.push({ channel: last.channel, messageCount: channel.messages.length, lastMessageAt: last.postedAt });
    }
    return summaries.sort(byChannelName);
  }

  async messages(workspaceId: string, channel: string, limit: number, before?: string): Promise<ChatMessage[]> {
    const messages = this.channels.get(channelKey(workspaceId, channel))?.messages ?? [];
    const end = before === undefined ? messages.length : Math.max(0, messages.findIndex((message) => message.id === before));
    return messages.slice(Math.max(0, end - limit), end);
  }

  async close(): Promise<void> {
    if (this.compacting) await this.compacting;
    await this.log.close();
  }

  private compactIfWorthIt(): void {
    if (this.compacting || this.lines < 2 * this.retained + this.limits.messagesPerChannel) return;
    const records = [...this.channels.values()].flatMap((channel) =>
      channel.messages.map((message) => ({ workspaceId: channel.workspaceId, message })),
    );
    this.compacting = this.log
      .rewrite(records)
      .then(() => {
        this.lines = records.length;
      })
      .catch(() => undefined)
      .finally(() => (this.compacting = null));
  }
}

/** Adds the message to its channel; returns how many old messages the channel dropped. */
function keep(channels: Map<string, Channel>, channelCounts: Map<string, number>, record: ChatRecord, messagesPerChannel: number): number {
  const key = channelKey(record.workspaceId, record.message.channel);
  let channel = channels.get(key);
  if (!channel) {
    channel = { workspaceId: record.workspaceId, messages: [] };
    channels.set(key, channel);
    channelCounts.set(record.workspaceId, (channelCounts.get(record.workspaceId) ?? 0) + 1);
  }
  channel.messages.push(record.message);
  const excess = channel.messages.length - messagesPerChannel;
  if (excess <= 0) return 0;
  channel.messages.splice(0, excess);
  return excess;
}
