import { join } from 'node:path';
import { DEFAULT_CHAT_LIMITS, type ChatMessage } from '../../chat/store.js';
import { REQUESTS_PER_EXTENSION, type NumberedRequest, type WebhookRequestEntry } from '../../webhooks/request-log.js';
import { replay } from '../append-log.js';

/**
 * Everything some append logs keep, for `platform db import`: the stores'
 * interfaces answer per workspace, channel or extension, and cannot list every
 * one of them (chat of a deleted workspace, the request log of an extension
 * served only by a plugin). Each reader replays its log as the store does at
 * start, with the lines as store/file/chat.ts, webhook-requests.ts and
 * revocations.ts write them, and keeps what the store would.
 */

export interface ChatChannelContents {
  workspaceId: string;
  /** Oldest first, the latest the daemon keeps. */
  messages: ChatMessage[];
}

/** Every channel of chat.log, in the order of its first message. */
export async function readChatChannels(dataDir: string): Promise<ChatChannelContents[]> {
  const MESSAGES_PER_CHANNEL = DEFAULT_CHAT_LIMITS.messagesPerChannel;
  const channels = new Map<string, ChatChannelContents>();
  await replay<{ workspaceId: string; message: ChatMessage }>(join(dataDir, 'chat.log'), ({ workspaceId, message }) => {
    const key = `${workspaceId}\u0000${message.channel}`;
    let channel = channels.get(key);
    if (!channel) channels.set(key, (channel = { workspaceId, messages: [] }));
    channel.messages.push(message);
    if (channel.messages.length > 2 * MESSAGES_PER_CHANNEL) channel.messages.splice(0, channel.messages.length - MESSAGES_PER_CHANNEL);
  });
  return [...channels.values()].map((channel) => ({ ...channel, messages: channel.messages.slice(-MESSAGES_PER_CHANNEL) }));
}

/** Every extension's kept calls in webhook-requests.log, oldest first, with their numbers. */
export async function readWebhookRequests(dataDir: string): Promise<Map<string, NumberedRequest[]>> {
  const extensions = new Map<string, NumberedRequest[]>();
  await replay<{ extensionKey: string; seq: number; entry: WebhookRequestEntry }>(
    join(dataDir, 'webhook-requests.log'),
    ({ extensionKey, seq, entry }) => {
      let calls = extensions.get(extensionKey);
      if (!calls) extensions.set(extensionKey, (calls = []));
      calls.push({ seq, entry });
      if (calls.length > 2 * REQUESTS_PER_EXTENSION) calls.splice(0, calls.length - REQUESTS_PER_EXTENSION);
    },
  );
  for (const [key, calls] of extensions) extensions.set(key, calls.slice(-REQUESTS_PER_EXTENSION));
  return extensions;
}

/**
 * The revoked tokens of revocations.log that have not expired by `nowSeconds`
 * (jti → expiry, unix seconds). Open FileRevocationStore once before: it moves
 * an earlier version's revocations.json into the log.
 */
export async function readRevocations(dataDir: string, nowSeconds: number): Promise<Map<string, number>> {
  const revoked = new Map<string, number>();
  await replay<{ jti: string; exp: number }>(join(dataDir, 'revocations.log'), ({ jti, exp }) => {
    revoked.set(jti, exp);
  });
  for (const [jti, exp] of revoked) if (exp <= nowSeconds) revoked.delete(jti);
  return revoked;
}
