import type { Command } from 'commander';
import { clientFor, urlPath } from '../client.js';
import { usageError } from '../errors.js';
import { printJson, printLine, printTable } from '../output.js';

interface Attempt {
  number: number;
  startedAt: string;
  durationMs: number;
  outcome: 'SUCCESS' | 'RETRY' | 'FAILED';
  httpStatus?: number;
  error?: string;
  responseExcerpt?: string;
}

interface DeliveryRecord {
  id: string;
  eventId: string;
  subscriptionId: string | null;
  extensionKey: string;
  kind: string;
  status: string;
  attempts: Attempt[];
  nextAttemptAt?: string;
  createdAt: string;
  completedAt?: string;
}

interface EventWithDeliveries {
  id: string;
  eventKey: string;
  actor: string;
  publishedBy?: string;
  payload: Record<string, unknown>;
  occurredAt: string;
  deliveries: DeliveryRecord[];
}

interface SubscriptionView {
  id: string;
  extensionKey: string;
  eventKey: string;
  enabled: boolean;
  disabledReason: string | null;
}

const when = (iso: string) => iso.slice(0, 23).replace('T', ' ');
const byName = (program: Command, name: string) => {
  const found = program.commands.find((command) => command.name() === name);
  if (!found) throw new Error(`the ${name} command must be registered first`);
  return found;
};

function printDelivery(delivery: DeliveryRecord): void {
  const to = delivery.subscriptionId ? `subscription ${delivery.subscriptionId}` : 'built-in plugin';
  printLine(`delivery ${delivery.id} to ${delivery.extensionKey} (${delivery.kind}, ${to}): ${delivery.status}`);
  printLine(`  ${when(delivery.createdAt)}  created`);
  for (const attempt of delivery.attempts) {
    const status = attempt.httpStatus === undefined ? '' : ` HTTP ${attempt.httpStatus}`;
    const error = attempt.error ? `: ${attempt.error}` : '';
    printLine(`  ${when(attempt.startedAt)}  attempt ${attempt.number} ${attempt.outcome}${status} in ${attempt.durationMs} ms${error}`);
    if (attempt.responseExcerpt) printLine(`      answer: ${attempt.responseExcerpt.replace(/\s+/g, ' ').slice(0, 200)}`);
  }
  if (delivery.nextAttemptAt) printLine(`  ${when(delivery.nextAttemptAt)}  next attempt`);
  if (delivery.completedAt) printLine(`  ${when(delivery.completedAt)}  ${delivery.status.toLowerCase()}`);
}

/** Delivery visibility: `events show`, `deliveries list`, and the subscription controls. Registered after events and subscriptions. */
export function registerDeliveries(program: Command): void {
  byName(program, 'events')
    .command('show <workspace> <eventId>')
    .description('an event, then each of its deliveries as a timeline of attempts')
    .option('--json', 'print JSON')
    .action(async (workspace: string, eventId: string, flags: { json?: boolean }, command: Command) => {
      const event = await clientFor(command).get<EventWithDeliveries>(`/api/workspaces/${urlPath(workspace, 'events', eventId)}`);
      if (flags.json) return printJson(event);
      printLine(`event ${event.id}: ${event.eventKey} at ${when(event.occurredAt)} by ${event.actor} (published by ${event.publishedBy ?? '-'})`);
      printLine(`payload: ${JSON.stringify(event.payload)}`);
      if (event.deliveries.length === 0) return printLine('(no deliveries)');
      for (const delivery of event.deliveries) printDelivery(delivery);
    });

  program
    .command('deliveries')
    .description('delivery records of a workspace')
    .command('list <workspace>')
    .description('deliveries, newest first')
    .option('--status <status>', 'PENDING, SUCCEEDED, DEAD or DISCARDED')
    .option('--subscription <id>', 'only this subscription')
    .option('--event <eventKey>', 'only this event key')
    .option('--since <time>', 'created at or after (ISO 8601)')
    .option('--until <time>', 'created at or before (ISO 8601)')
    .option('--limit <n>', 'how many per page (default 50, at most 500)')
    .option('--all', 'follow the cursors to the last page')
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        flags: { status?: string; subscription?: string; event?: string; since?: string; until?: string; limit?: string; all?: boolean; json?: boolean },
        command: Command,
      ) => {
        const client = clientFor(command);
        const deliveries: DeliveryRecord[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.request<DeliveryRecord[]>('GET', `/api/workspaces/${urlPath(workspace, 'deliveries')}`, {
            query: {
              status: flags.status,
              subscriptionId: flags.subscription,
              eventKey: flags.event,
              since: flags.since,
              until: flags.until,
              limit: flags.limit,
              cursor,
            },
          });
          deliveries.push(...page.data);
          cursor = typeof page.meta?.nextCursor === 'string' ? page.meta.nextCursor : undefined;
        } while (flags.all && cursor);
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
        if (cursor) printLine(`(more: --all to list every page)`);
      },
    );

  const subscriptions = byName(program, 'subscriptions');
  for (const enabled of [true, false]) {
    subscriptions
      .command(`${enabled ? 'enable' : 'disable'} <workspace> <subscriptionId>`)
      .description(enabled ? 'deliver to a subscription again, clearing why it was disabled (ADMIN)' : 'stop new deliveries to a subscription (ADMIN)')
      .option('--json', 'print JSON')
      .action(async (workspace: string, subscriptionId: string, flags: { json?: boolean }, command: Command) => {
        const subscription = await clientFor(command).patch<SubscriptionView>(
          `/api/workspaces/${urlPath(workspace, 'subscriptions', subscriptionId)}`,
          { enabled },
        );
        if (flags.json) return printJson(subscription);
        printLine(`${enabled ? 'enabled' : 'disabled'} subscription ${subscription.id} (${subscription.extensionKey} on ${subscription.eventKey})`);
      });
  }
  subscriptions
    .command('rotate-secret <workspace> <subscriptionId>')
    .description('a new signing secret, printed once; the old one keeps signing during the overlap (ADMIN)')
    .option('--json', 'print JSON')
    .action(async (workspace: string, subscriptionId: string, flags: { json?: boolean }, command: Command) => {
      const { signingSecret } = await clientFor(command).post<{ signingSecret: string }>(
        `/api/workspaces/${urlPath(workspace, 'subscriptions', subscriptionId, 'rotate-secret')}`,
      );
      if (flags.json) return printJson({ signingSecret });
      printLine(`new signing secret (shown only now; deliveries carry both signatures during the overlap): ${signingSecret}`);
    });
  subscriptions
    .command('test <workspace> <subscriptionId>')
    .description('deliver a platform.test event to this subscription only (ADMIN)')
    .option('--payload <json>', 'the payload as a JSON object')
    .option('--json', 'print JSON')
    .action(async (workspace: string, subscriptionId: string, flags: { payload?: string; json?: boolean }, command: Command) => {
      let payload: unknown;
      if (flags.payload !== undefined) {
        try {
          payload = JSON.parse(flags.payload);
        } catch {
          throw usageError('the payload from --payload is not valid JSON');
        }
      }
      const { deliveryId } = await clientFor(command).post<{ deliveryId: string }>(
        `/api/workspaces/${urlPath(workspace, 'subscriptions', subscriptionId, 'test')}`,
        payload === undefined ? {} : { payload },
      );
      if (flags.json) return printJson({ deliveryId });
      printLine(`test delivery ${deliveryId} queued; follow it with: platform deliveries list ${workspace} --event platform.test`);
    });
}

function lastOutcome(attempt: Attempt | undefined): string {
  if (!attempt) return '-';
  return attempt.httpStatus === undefined ? attempt.outcome : `${attempt.outcome} ${attempt.httpStatus}`;
}
