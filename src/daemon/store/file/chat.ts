import { join } from 'node:path';
import { byChannelName, MESSAGES_PER_CHANNEL, type ChannelSummary, type ChatMessage, type ChatStore } from '../../chat/store.js';
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
 * what the channels keep once it holds twice as many lines as that.
 */
export class FileChatStore implements ChatStore {
  private compacting: Promise<void> | null = null;

  private constructor(
    private readonly log: AppendLog<ChatRecord>,
    private readonly channels: Map<string, Channel>,
    /** Lines in the log, and messages the channels keep: compaction is due when the first far exceeds the second. */
    private lines: number,
    private retained: number,
  ) {}

  static async open(dataDir: string): Promise<FileChatStore> {
    const channels = new Map<string, Channel>();
    let lines = 0;
    let retained = 0;
    const log = await AppendLog.open<ChatRecord>(join(dataDir, 'chat.log'), (record) => {
      lines += 1;
      retained += 1 - keep(channels, record);
    });
    return new FileChatStore(log, channels, lines, retained);
  }

  async post(workspaceId: string, message: ChatMessage): Promise<void> {
    const record = { workspaceId, message };
    this.retained += 1 - keep(this.channels, record);
    this.lines += 1;
    await this.log.append(record);
    this.compactIfWorthIt();
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
    if (this.compacting || this.lines < 2 * this.retained + MESSAGES_PER_CHANNEL) return;
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
function keep(channels: Map<string, Channel>, record: ChatRecord): number {
  const key = channelKey(record.workspaceId, record.message.channel);
  let channel = channels.get(key);
  if (!channel) {
    channel = { workspaceId: record.workspaceId, messages: [] };
    channels.set(key, channel);
  }
  channel.messages.push(record.message);
  const excess = channel.messages.length - MESSAGES_PER_CHANNEL;
  if (excess <= 0) return 0;
  channel.messages.splice(0, excess);
  return excess;
}
