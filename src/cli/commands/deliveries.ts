import type { Command } from 'commander';
import { type Client, clientFor } from '../client.js';
import { CliError, EXIT } from '../errors.js';
import { choiceFlag, integerFlag, jsonObjectFlag } from '../flags.js';
import { withExample } from '../help.js';
import { fetchCursorListing } from '../paging.js';
import { printJson, printLine, printTable } from '../output.js';
import type { DeliveryAttempt, DeliveryRecord, DeliveryStatus } from '../../contract/types.js';

const when = (iso: string) => iso.slice(0, 23).replace('T', ' ');
const byName = (program: Command, name: string) => {
  const found = program.commands.find((command) => command.name() === name);
  if (!found) throw new Error(`the ${name} command must be registered first`);
  return found;
};

/** What a subscriber wrote, safe to print on a terminal: control characters (escape sequences) as U+FFFD, lines indented. */
const printable = (text: string, indent: string) =>
  text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\uFFFD').replace(/\r?\n/g, `\n${indent}`);

function printHeaders(headers: Record<string, string>, indent: string): void {
  for (const [name, value] of Object.entries(headers)) printLine(`${indent}${printable(`${name}: ${value}`, indent)}`);
}

/** An attempt's request and the subscriber's answer in full (as recorded: the answer's first 2 KiB). */
function printExchange(attempt: DeliveryAttempt): void {
  if (attempt.request) {
    printLine(`      request: POST ${attempt.request.url} (body: the event, as --json shows it, with workspaceId)`);
    printHeaders(attempt.request.headers, '        ');
  } else {
    printLine('      request: none sent');
  }
  if (attempt.httpStatus === undefined) return printLine('      answer: none');
  printLine(`      answer: HTTP ${attempt.httpStatus}`);
  printHeaders(attempt.response?.headers ?? {}, '        ');
  if (attempt.responseExcerpt) {
    printLine('      answer body (first 2 KiB):');
    printLine(`        ${printable(attempt.responseExcerpt, '        ')}`);
  }
}

function printDelivery(delivery: DeliveryRecord, verbose: boolean): void {
  const to = delivery.subscriptionId ? `subscription ${delivery.subscriptionId}` : 'built-in plugin';
  printLine(`delivery ${delivery.id} to ${delivery.extensionKey} (${delivery.kind}, ${to}): ${delivery.status}`);
  if (delivery.redeliveryOf) printLine(`  redelivery of ${delivery.redeliveryOf}`);
  printLine(`  ${when(delivery.createdAt)}  created`);
  for (const attempt of delivery.attempts) printAttempt(attempt, verbose && delivery.kind === 'EXTERNAL_SERVICE');
  if (delivery.nextAttemptAt) printLine(`  ${when(delivery.nextAttemptAt)}  next attempt`);
  if (delivery.completedAt) printLine(`  ${when(delivery.completedAt)}  ${delivery.status.toLowerCase()}`);
}

/** One attempt's line; `exchange`: with its request and answer in full (see printExchange), else the answer's start. */
function printAttempt(attempt: DeliveryAttempt, exchange = false): void {
  const status = attempt.httpStatus === undefined ? '' : ` HTTP ${attempt.httpStatus}`;
  const error = attempt.error ? `: ${attempt.error}` : '';
  printLine(`  ${when(attempt.startedAt)}  attempt ${attempt.number} ${attempt.outcome}${status} in ${attempt.durationMs} ms${error}`);
  if (exchange) printExchange(attempt);
  else if (attempt.responseExcerpt) printLine(`      answer: ${printable(attempt.responseExcerpt.replace(/\s+/g, ' ').slice(0, 200), '')}`);
}

const POLL_MS = 500;

/**
 * Follows one delivery by reading its record until it is SUCCEEDED or DEAD,
 * handing over each attempt once, as it is recorded; answers the final record.
 */
async function followDelivery(client: Client, workspace: string, deliveryId: string, onAttempt: (attempt: DeliveryAttempt) => void): Promise<DeliveryRecord> {
  let seen = 0;
  for (;;) {
    const { data: record } = await client.call('getDelivery', { params: { id: workspace, deliveryId } });
    for (const attempt of record.attempts.slice(seen)) onAttempt(attempt);
    seen = record.attempts.length;
    if (record.status === 'SUCCEEDED' || record.status === 'DEAD') return record;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Delivery visibility: `events show`, `deliveries list`, and the subscription controls. Registered after events and subscriptions. */
export function registerDeliveries(program: Command): void {
  withExample(
    byName(program, 'events').command('show <workspace> <eventId>').description('an event, then each of its deliveries as a timeline of attempts'),
    'platform events show acme 0b8e4f9a-3c1d-4e2f-8a7b-6c5d4e3f2a1b',
    'platform events show acme 0b8e4f9a-3c1d-4e2f-8a7b-6c5d4e3f2a1b --verbose',
  )
    .option('--verbose', "with each attempt's request headers, and the answer's status, headers and first 2 KiB")
    .option('--json', 'print JSON')
    .action(async (workspace: string, eventId: string, flags: { verbose?: boolean; json?: boolean }, command: Command) => {
      const { data: event } = await clientFor(command).call('getEvent', { params: { id: workspace, eventId } });
      if (flags.json) return printJson(event);
      printLine(`event ${event.id}: ${event.eventKey} at ${when(event.occurredAt)} by ${event.actor} (published by ${event.publisherName ?? event.publishedBy ?? '-'})`);
      printLine(`payload: ${JSON.stringify(event.payload)}`);
      if (event.deliveries.length === 0) return printLine('(no deliveries)');
      for (const delivery of event.deliveries) printDelivery(delivery, flags.verbose === true);
    });

  withExample(
    program.command('deliveries').description('delivery records of a workspace').command('list <workspace>').description('deliveries, newest first'),
    'platform deliveries list acme --status DEAD --event crm.deal.closed',
  )
    .option('--status <status>', 'PENDING, SUCCEEDED, DEAD or DISCARDED', choiceFlag(['PENDING', 'SUCCEEDED', 'DEAD', 'DISCARDED']))
    .option('--subscription <id>', 'only this subscription')
    .option('--event <eventKey>', 'only this event key')
    .option('--since <time>', 'created at or after (ISO 8601)')
    .option('--until <time>', 'created at or before (ISO 8601)')
    .option('--limit <n>', 'how many per page (1-500; default 50)', integerFlag(1, 500))
    .option('--all', 'follow the cursors to the last page')
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        flags: { status?: DeliveryStatus; subscription?: string; event?: string; since?: string; until?: string; limit?: number; all?: boolean; json?: boolean },
        command: Command,
      ) => {
        const client = clientFor(command);
        const query = { status: flags.status, subscriptionId: flags.subscription, eventKey: flags.event, since: flags.since, until: flags.until };
        const { items: deliveries, more } = await fetchCursorListing(
          (page) => client.call('listDeliveries', { params: { id: workspace }, query: { ...query, ...page } }),
          flags,
        );
        if (flags.json) return printJson(deliveries);
        printTable(
          deliveries,
          [
            { header: 'CREATED', value: (d) => when(d.createdAt) },
            { header: 'STATUS', value: (d) => d.status },
            { header: 'ATTEMPTS', value: (d) => String(d.attempts.length) },
            { header: 'LAST', value: (d) => lastOutcome(d.attempts.at(-1)) },
            { header: 'EXTENSION', value: (d) => d.extensionKey },
            { header: 'EVENT', value: (d) => d.eventId },
            { header: 'ID', value: (d) => d.id },
          ],
          '(no deliveries)',
        );
        if (more) printLine('(more: --all to list every page)');
      },
    );

  withExample(
    byName(program, 'deliveries')
      .command('redeliver <workspace> <deliveryId>')
      .description('send a delivery again, whatever its status: a new delivery of the same event to the same subscriber (ADMIN)'),
    'platform deliveries redeliver acme msg_5f0c2a9e8d7b4c3a2f1e0d9c8b7a6f5e --wait',
  )
    .option('--wait', 'follow the new delivery, printing its attempts, until it is delivered or dead; exit 1 if it is dead')
    .option('--json', 'print JSON (with --wait: the new delivery\'s final record)')
    .action(async (workspace: string, deliveryId: string, flags: { wait?: boolean; json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const { data: queued } = await client.call('redeliverDelivery', { params: { id: workspace, deliveryId } });
      if (!flags.wait) return flags.json ? printJson(queued) : printLine(queued.deliveryId);
      if (!flags.json) printLine(queued.deliveryId);
      const record = await followDelivery(client, workspace, queued.deliveryId, flags.json ? () => undefined : (attempt) => printAttempt(attempt));
      if (flags.json) printJson(record);
      else printLine(`${record.status.toLowerCase()} (redelivery of ${deliveryId})`);
      if (record.status === 'DEAD') throw new CliError(`delivery ${record.id} failed every attempt and is a dead letter`, EXIT.daemonError);
    });

  const subscriptions = byName(program, 'subscriptions');
  for (const enabled of [true, false]) {
    withExample(
      subscriptions
        .command(`${enabled ? 'enable' : 'disable'} <workspace> <subscriptionId>`)
        .description(enabled ? 'deliver to a subscription again, clearing why it was disabled (ADMIN)' : 'stop new deliveries to a subscription (ADMIN)'),
      `platform subscriptions ${enabled ? 'enable' : 'disable'} acme 4c1e0b7a-2f3d-4e5a-9b8c-1d2e3f4a5b6c`,
    )
      .option('--json', 'print JSON')
      .action(async (workspace: string, subscriptionId: string, flags: { json?: boolean }, command: Command) => {
        const { data: subscription } = await clientFor(command).call('updateSubscription', { params: { id: workspace, subscriptionId }, body: { enabled } });
        if (flags.json) return printJson(subscription);
        printLine(`${enabled ? 'enabled' : 'disabled'} subscription ${subscription.id} (${subscription.extensionKey} on ${subscription.eventKey})`);
      });
  }
  withExample(
    subscriptions
      .command('rotate-secret <workspace> <subscriptionId>')
      .description('a new signing secret, printed once; the old one keeps signing during the overlap (ADMIN)'),
    'platform subscriptions rotate-secret acme 4c1e0b7a-2f3d-4e5a-9b8c-1d2e3f4a5b6c',
  )
    .option('--json', 'print JSON')
    .action(async (workspace: string, subscriptionId: string, flags: { json?: boolean }, command: Command) => {
      const { signingSecret } = (await clientFor(command).call('rotateSigningSecret', { params: { id: workspace, subscriptionId } })).data;
      if (flags.json) return printJson({ signingSecret });
      printLine(`new signing secret (shown only now; deliveries carry both signatures during the overlap): ${signingSecret}`);
    });
  withExample(
    subscriptions.command('test <workspace> <subscriptionId>').description('deliver a platform.test event to this subscription only (ADMIN)'),
    `platform subscriptions test acme 4c1e0b7a-2f3d-4e5a-9b8c-1d2e3f4a5b6c --payload '{"hello":"world"}'`,
  )
    .option('--payload <json>', 'the payload as a JSON object', jsonObjectFlag)
    .option('--json', 'print JSON')
    .action(async (workspace: string, subscriptionId: string, flags: { payload?: Record<string, unknown>; json?: boolean }, command: Command) => {
      const payload = flags.payload;
      const { deliveryId } = (
        await clientFor(command).call('testSubscription', { params: { id: workspace, subscriptionId }, body: payload === undefined ? {} : { payload } })
      ).data;
      if (flags.json) return printJson({ deliveryId });
      printLine(`test delivery ${deliveryId} queued; follow it with: platform deliveries list ${workspace} --event platform.test`);
    });
}

function lastOutcome(attempt: DeliveryAttempt | undefined): string {
  if (!attempt) return '-';
  return attempt.httpStatus === undefined ? attempt.outcome : `${attempt.outcome} ${attempt.httpStatus}`;
}
