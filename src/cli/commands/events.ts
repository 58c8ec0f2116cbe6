import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { clientFor, urlPath } from '../client.js';
import { usageError } from '../errors.js';
import { printJson, printLine, printTable } from '../output.js';
import { readStdin } from '../prompt.js';
import { registerEventsTail } from './events-tail.js';

interface PlatformEvent {
  id: string;
  eventKey: string;
  actor: string;
  publishedBy?: string;
  payload: Record<string, unknown>;
  occurredAt: string;
}

interface ChatMessage {
  channel: string;
  message: string;
  sender: string;
  postedAt: string;
}


/** --payload, else --payload-file, else stdin when it is not a terminal; none of them: no payload. */
async function readPayload(flags: { payload?: string; payloadFile?: string }): Promise<unknown> {
  if (flags.payload !== undefined && flags.payloadFile !== undefined) throw usageError('give --payload or --payload-file, not both');
  let text: string | undefined = flags.payload;
  let source = '--payload';
  if (flags.payloadFile !== undefined) {
    source = flags.payloadFile;
    text = await readFile(flags.payloadFile, 'utf8').catch(() => {
      throw usageError(`cannot read ${flags.payloadFile}`);
    });
  } else if (text === undefined && !process.stdin.isTTY) {
    source = 'stdin';
    text = await readStdin();
  }
  if (text === undefined || text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw usageError(`the payload from ${source} is not valid JSON`);
  }
}

export function registerEvents(program: Command): void {
  const events = program.command('events').description('publish and read workspace events');

  events
    .command('publish <workspace> <eventKey>')
    .description('publish an event; the payload (a JSON object) comes from --payload, --payload-file or stdin')
    .option('--payload <json>', 'the payload as JSON')
    .option('--payload-file <file>', 'read the payload from a JSON file')
    .option('--actor <actor>', 'who publishes (default: your e-mail)')
    .option('--schema-version <version>', 'version of the payload schema')
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        eventKey: string,
        flags: { payload?: string; payloadFile?: string; actor?: string; schemaVersion?: string; json?: boolean },
        command: Command,
      ) => {
        const payload = await readPayload(flags);
        const response = await clientFor(command).request('POST', `/api/workspaces/${urlPath(workspace, 'events', 'publish')}`, {
          body: {
            eventKey,
            ...(payload === undefined ? {} : { payload }),
            ...(flags.actor ? { actor: flags.actor } : {}),
            ...(flags.schemaVersion ? { schemaVersion: flags.schemaVersion } : {}),
          },
        });
        const eventId = response.meta?.eventId as string;
        if (flags.json) printJson({ eventId });
        else printLine(`published ${eventKey} to ${workspace}: event ${eventId}`);
      },
    );

  events
    .command('list <workspace>')
    .description('recent events, newest first')
    .option('--event <eventKey>', 'only this event key')
    .option('--limit <n>', 'how many (default 50)')
    .option('--json', 'print JSON')
    .action(async (workspace: string, flags: { event?: string; limit?: string; json?: boolean }, command: Command) => {
      const list = await clientFor(command).get<PlatformEvent[]>(`/api/workspaces/${urlPath(workspace, 'events')}`, {
        eventKey: flags.event,
        limit: flags.limit,
      });
      if (flags.json) return printJson(list);
      printTable(list, [
        { header: 'OCCURRED', value: (event) => event.occurredAt },
        { header: 'EVENT', value: (event) => event.eventKey },
        { header: 'ACTOR', value: (event) => event.actor },
        { header: 'PUBLISHED BY', value: (event) => event.publishedBy ?? '-' },
        { header: 'ID', value: (event) => event.id },
      ]);
    });

  registerEventsTail(events);

  program
    .command('chat')
    .description('read chat channels')
    .command('read <workspace> <channel>')
    .description('the latest messages of a channel, oldest first')
    .option('--limit <n>', 'how many (default 50, at most 1000)')
    .option('--json', 'print JSON')
    .action(async (workspace: string, channel: string, flags: { limit?: string; json?: boolean }, command: Command) => {
      const messages = await clientFor(command).get<ChatMessage[]>(
        `/api/workspaces/${urlPath(workspace, 'chat', 'channels', channel, 'messages')}`,
        { limit: flags.limit },
      );
      if (flags.json) return printJson(messages);
      if (messages.length === 0) return printLine(`(no messages in ${channel})`);
      for (const message of messages) printLine(`${message.postedAt.slice(0, 19).replace('T', ' ')}  ${message.sender}: ${message.message}`);
    });
}
