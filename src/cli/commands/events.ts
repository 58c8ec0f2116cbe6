import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiError } from '../../contract/client.js';
import { DeliveryFilter, IdempotencyKey } from '../../contract/requests.js';
import { describeDeliverySummary } from '../../contract/resources.js';
import { clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { integerFlag, jsonObjectFlag, parseWith } from '../flags.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';
import { fetchCursorListing } from '../paging.js';
import { askText, isInteractive, readStdin } from '../prompt.js';
import { registerEventsTail } from './events-tail.js';


const parsePayload = (text: string, source: string): Record<string, unknown> => {
  try {
    return jsonObjectFlag(text);
  } catch (error) {
    throw usageError(`the payload from ${source} ${(error as Error).message}`);
  }
};

/**
 * --payload, else --payload-file, else stdin when it is not a terminal, else a
 * prompt. An event is never published without a payload somebody gave:
 * `--payload '{}'` says "empty" explicitly.
 */
async function readPayload(flags: { payload?: Record<string, unknown>; payloadFile?: string }): Promise<Record<string, unknown>> {
  if (flags.payload !== undefined && flags.payloadFile !== undefined) throw usageError('give --payload or --payload-file, not both');
  if (flags.payload !== undefined) return flags.payload;
  if (flags.payloadFile !== undefined) {
    const text = await readFile(flags.payloadFile, 'utf8').catch(() => {
      throw usageError(`cannot read ${flags.payloadFile}`);
    });
    return parsePayload(text, flags.payloadFile);
  }
  if (isInteractive()) {
    const text = await askText('Payload (a JSON object; {} for none)', '--payload', (input) => {
      try {
        jsonObjectFlag(input);
        return true;
      } catch (error) {
        return (error as Error).message;
      }
    });
    return parsePayload(text, 'the prompt');
  }
  const text = await readStdin('the payload');
  if (text.trim() === '') throw usageError("no payload on stdin: give one, or --payload '{}' for an event without one");
  return parsePayload(text, 'stdin');
}

/** A key as a shell reads it back: as it is when it has nothing a shell would act on, else in single quotes. */
const shellWord = (text: string) => (/^[A-Za-z0-9._:@%+=,/-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`);

/**
 * The publish failed in a way that leaves its outcome unknown (no answer, or a
 * fault of the daemon): the message says how to try again safely, with the
 * same key, which publishes the event at most once.
 */
function withRetryHint(error: unknown, key: string): unknown {
  const unknownOutcome = (error instanceof CliError && error.exitCode === EXIT.unreachable) || (error instanceof ApiError && error.status >= 500);
  if (!unknownOutcome) return error;
  const hint = `to try again without publishing it twice, add --idempotency-key ${shellWord(key)}`;
  return new CliError(`${error.message}\n${hint}`, error instanceof CliError ? error.exitCode : EXIT.daemonError);
}

export function registerEvents(program: Command): void {
  const events = program.command('events').description('publish and read workspace events');

  withExample(
    events
      .command('publish <workspace> <eventKey>')
      .description("publish an event; the payload (a JSON object) comes from --payload, --payload-file, stdin or a prompt; --payload '{}' for none"),
    `platform events publish acme crm.deal.closed --payload '{"dealId":"D-42"}'`,
    'platform events publish acme crm.deal.closed < deal.json',
  )
    .option('--payload <json>', 'the payload, a JSON object', jsonObjectFlag)
    .option('--payload-file <file>', 'read the payload from a JSON file')
    .option('--actor <actor>', 'who publishes (default: your e-mail)')
    .option('--schema-version <version>', 'version of the payload schema')
    .option(
      '--idempotency-key <key>',
      'sent as Idempotency-Key (default: a new random key each run): run again with the same key and payload (within 24 hours, by default), it publishes nothing and answers the first event',
      parseWith(IdempotencyKey),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        eventKey: string,
        flags: { payload?: Record<string, unknown>; payloadFile?: string; actor?: string; schemaVersion?: string; idempotencyKey?: string; json?: boolean },
        command: Command,
      ) => {
        const payload = await readPayload(flags);
        const idempotencyKey = flags.idempotencyKey ?? randomUUID();
        const response = await clientFor(command)
          .call('publishEvent', {
            params: { id: workspace },
            headers: { 'Idempotency-Key': idempotencyKey },
            body: {
              eventKey,
              payload,
              ...(flags.actor ? { actor: flags.actor } : {}),
              ...(flags.schemaVersion ? { schemaVersion: flags.schemaVersion } : {}),
            },
          })
          .catch((error: unknown) => {
            throw withRetryHint(error, idempotencyKey);
          });
        const { eventId, idempotentReplay } = response.meta;
        if (flags.json) printJson({ eventId, ...(idempotentReplay ? { idempotentReplay } : {}) });
        else if (idempotentReplay) printLine(`already published ${eventKey} to ${workspace} with this idempotency key: event ${eventId} (not published again)`);
        else printLine(`published ${eventKey} to ${workspace}: event ${eventId}`);
      },
    );

  withExample(
    events
      .command('list <workspace>')
      .description('events, newest first')
      .option('--event <eventKey>', 'only this event key')
      .option('--since <time>', 'occurred at or after (ISO 8601)')
      .option('--until <time>', 'occurred at or before (ISO 8601)')
      .option(
        '--deliveries <state>',
        'only events with a dead delivery (failed), one still pending (pending), every one succeeded (delivered), or none at all (none)',
        parseWith(DeliveryFilter),
      )
      .option('--limit <n>', 'how many per page (1-1000; default 50)', integerFlag(1, 1000))
      .option('--all', 'follow the pages to the oldest retained event'),
    'platform events list acme --event crm.deal.closed --limit 10',
    'platform events list acme --deliveries failed --all',
  )
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        flags: { event?: string; since?: string; until?: string; deliveries?: DeliveryFilter; limit?: number; all?: boolean; json?: boolean },
        command: Command,
      ) => {
        const client = clientFor(command);
        const query = { eventKey: flags.event, since: flags.since, until: flags.until, deliveries: flags.deliveries };
        const listing = await fetchCursorListing((page) => client.call('listEvents', { params: { id: workspace }, query: { ...query, ...page } }), flags);
        if (flags.json) return printJson(listing.items);
        printTable(listing.items, [
          { header: 'OCCURRED', value: (event) => event.occurredAt },
          { header: 'EVENT', value: (event) => event.eventKey },
          { header: 'ACTOR', value: (event) => event.actor },
          { header: 'PUBLISHED BY', value: (event) => event.publishedBy ?? '-' },
          { header: 'DELIVERIES', value: (event) => (event.deliverySummary ? describeDeliverySummary(event.deliverySummary) : '-') },
          { header: 'ID', value: (event) => event.id },
        ]);
        if (listing.more) printLine('(more: --all to list every page)');
      },
    );

  registerEventsTail(events);

  withExample(
    program
      .command('chat')
      .description('read chat channels')
      .command('read <workspace> <channel>')
      .description('the latest messages of a channel, oldest first (a channel keeps its latest 1000)'),
    'platform chat read acme general --limit 20',
  )
    .option('--limit <n>', 'how many (1-1000; default 50)', integerFlag(1, 1000))
    .option('--json', 'print JSON')
    .action(async (workspace: string, channel: string, flags: { limit?: number; json?: boolean }, command: Command) => {
      const { data: messages } = await clientFor(command).call('listChatMessages', { params: { id: workspace, channel }, query: { limit: flags.limit } });
      if (flags.json) return printJson(messages);
      if (messages.length === 0) return printLine(`(no messages in ${channel})`);
      for (const message of messages) printLine(`${message.postedAt.slice(0, 19).replace('T', ' ')}  ${message.sender}: ${message.message}`);
    });
}
