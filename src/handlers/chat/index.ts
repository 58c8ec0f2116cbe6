import type { BuiltinPlugin } from '../../daemon/plugins/registry.js';
import type { PlatformEvent, PluginContext } from '../sdk.js';

/** Where the chat plugin posts; the daemon's chat store. */
export interface ChatChannels {
  post(
    workspaceId: string,
    input: { channel: string; message: string; sender: string; publishedBy: string; eventId: string },
  ): Promise<{ id: string; channel: string; message: string; sender: string; publishedBy: string; postedAt: string }>;
  /** Throws when a message to this channel would not be taken (the workspace has as many channels as it keeps). */
  admit(workspaceId: string, channel: string): Promise<void>;
}

/**
 * The built-in chat extension. Every platform.notification, in every workspace,
 * becomes a message in its channel (general, deals, or any conversation id),
 * announced as chat.message.received. It runs synchronously, so the message is
 * readable as soon as the publisher has its answer. (The payload was validated
 * at publish: a bad one never reaches it.)
 */
export function createChatPlugin(channels: ChatChannels): BuiltinPlugin {
  return {
    extensionKey: 'chat',
    receivesEverywhere: ['platform.notification'],
    // A notification the channel would refuse is refused at publish, before it is recorded.
    admit: (workspaceId, _eventKey, payload) => channels.admit(workspaceId, (payload as { channel: string }).channel),
    events: {
      'platform.notification': {
        async: false,
        async handle(event: PlatformEvent, context: PluginContext) {
          const payload = event.payload as { channel: string; message: string; sender?: string };
          const posted = await channels.post(event.tenantId, {
            channel: payload.channel,
            message: payload.message,
            sender: payload.sender ?? event.actor,
            // sender is whatever the publisher wrote; publishedBy is who that really was.
            publishedBy: event.publishedBy,
            eventId: event.id,
          });
          await context.publish(event.tenantId, 'chat.message.received', {
            messageId: posted.id,
            channel: posted.channel,
            message: posted.message,
            sender: posted.sender,
            publishedBy: posted.publishedBy,
            postedAt: posted.postedAt,
          });
        },
      },
    },
  };
}
