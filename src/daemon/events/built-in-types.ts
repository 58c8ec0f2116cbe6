import type { BuiltInEventType } from '../catalog/event-types.js';

/** Some character that is not white space: text that trims to nothing is refused. */
const NOT_BLANK = '\\S';
const text = (maxLength: number) => ({ type: 'string', pattern: NOT_BLANK, maxLength });

/**
 * The event types the daemon itself defines. A notification becomes a chat
 * message (the built-in chat extension), which announces it as
 * chat.message.received.
 */
export const BUILT_IN_EVENT_TYPES: readonly BuiltInEventType[] = [
  {
    eventKey: 'platform.notification',
    extensionKey: 'platform',
    description: 'A message for a chat channel of the workspace; the chat extension posts it.',
    schemas: {
      '1': {
        type: 'object',
        required: ['channel', 'message'],
        properties: { channel: text(200), message: text(10_000), sender: text(200) },
      },
    },
  },
  {
    eventKey: 'chat.message.received',
    extensionKey: 'chat',
    description: 'A chat message was posted to a channel (from a platform.notification).',
    schemas: {
      '1': {
        type: 'object',
        required: ['messageId', 'channel', 'message', 'sender', 'publishedBy', 'postedAt'],
        properties: {
          messageId: { type: 'string' },
          channel: { type: 'string' },
          message: { type: 'string' },
          sender: { type: 'string' },
          publishedBy: { type: 'string' },
          postedAt: { type: 'string', format: 'date-time' },
        },
      },
    },
  },
];
