import type { Command } from 'commander';
import { type Client, clientFor } from '../client.js';
import { usageError } from '../errors.js';
import { printJson, printLine, printTable } from '../output.js';

interface DeadLetter {
  id: string;
  deliveryId: string;
  event: { id: string; eventKey: string; tenantId: string; payload: unknown; occurredAt: string };
  subscriber: { subscriptionId: string | null; extensionKey: string; kind: string; serviceBaseUrl: string | null };
  attempts: number;
  lastError: { message: string; status: number | null };
  firstAttemptAt: string | null;
  deadAt: string;
  replayCount: number;
}

interface FilterFlags {
  workspace?: string;
  event?: string;
  extension?: string;
}

const filterOf = (flags: FilterFlags) => ({ workspaceId: flags.workspace, eventKey: flags.event, extensionKey: flags.extension });

const withFilters = (command: Command) =>
  command
    .option('--workspace <id>', 'only this workspace')
    .option('--event <eventKey>', 'only this event key')
    .option('--extension <key>', 'only this subscriber extension');

/** Replays in batches so that a terminal can show progress; a script gets one summary line. */
async function replayAll(client: Client, flags: FilterFlags): Promise<void> {
  const filter = filterOf(flags);
  const first = await client.request<DeadLetter[]>('GET', '/api/admin/dead-letters', { query: { ...filter, limit: 1 } });
  const total = Number(first.meta?.total ?? 0);
  const showProgress = Boolean(process.stderr.isTTY);
  let replayed = 0;
  let skipped = 0;
  for (;;) {
    const batch = await client.post<{ replayed: number; skipped: number }>('/api/admin/dead-letters/replay', {
      ...Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)),
      limit: 100,
    });
    replayed += batch.replayed;
    skipped = batch.skipped;
    if (showProgress) process.stderr.write(`\r${progressBar(replayed, total - skipped)}`);
    if (batch.replayed === 0) break;
  }
  if (showProgress) process.stderr.write('\n');
  printLine(`replayed ${replayed} dead letter${replayed === 1 ? '' : 's'}` + (skipped ? `; ${skipped} skipped (subscriber gone or disabled)` : ''));
}

function progressBar(done: number, total: number): string {
  const width = 30;
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : width;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${Math.max(total, done)}`;
}

export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('dead letters: deliveries that failed for good (ADMIN)');

  withFilters(dlq.command('list').description('dead letters, newest first'))
    .option('--limit <n>', 'how many (default 50)')
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags & { limit?: string; json?: boolean }, command: Command) => {
      const response = await clientFor(command).request<DeadLetter[]>('GET', '/api/admin/dead-letters', {
        query: { ...filterOf(flags), limit: flags.limit },
      });
      if (flags.json) return printJson(response.data);
      printTable(response.data, [
        { header: 'ID', value: (letter) => letter.id },
        { header: 'WORKSPACE', value: (letter) => letter.event.tenantId },
        { header: 'EVENT', value: (letter) => letter.event.eventKey },
        { header: 'EXTENSION', value: (letter) => letter.subscriber.extensionKey },
        { header: 'ATTEMPTS', value: (letter) => letter.attempts },
        { header: 'ERROR', value: (letter) => letter.lastError.message },
        { header: 'DEAD AT', value: (letter) => letter.deadAt },
      ]);
      if (response.meta && Number(response.meta.total) > response.data.length) {
        printLine(`(${response.data.length} of ${String(response.meta.total)}; use --limit for more)`);
      }
    });

  dlq
    .command('show <id>')
    .description('one dead letter in full')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const letter = await clientFor(command).get<DeadLetter>(`/api/admin/dead-letters/${encodeURIComponent(id)}`);
      if (flags.json) return printJson(letter);
      printLine(`dead letter ${letter.id} (delivery ${letter.deliveryId})`);
      printLine(`event:      ${letter.event.eventKey} ${letter.event.id} in ${letter.event.tenantId}, ${letter.event.occurredAt}`);
      printLine(`subscriber: ${letter.subscriber.extensionKey} (${letter.subscriber.kind}${letter.subscriber.serviceBaseUrl ? ` ${letter.subscriber.serviceBaseUrl}` : ''})`);
      printLine(`attempts:   ${letter.attempts}, first ${letter.firstAttemptAt ?? '-'}, dead ${letter.deadAt}, replayed ${letter.replayCount} times`);
      printLine(`last error: ${letter.lastError.message}${letter.lastError.status ? ` (HTTP ${letter.lastError.status})` : ''}`);
      printLine(`payload:    ${JSON.stringify(letter.event.payload)}`);
    });

  withFilters(dlq.command('replay [ids...]').description('send dead letters again, to their one subscriber'))
    .option('--all', 'every dead letter matching the filters')
    .action(async (ids: string[], flags: FilterFlags & { all?: boolean }, command: Command) => {
      const client = clientFor(command);
      if (flags.all) {
        if (ids.length > 0) throw usageError('give ids or --all, not both');
        return replayAll(client, flags);
      }
      if (ids.length === 0) throw usageError('give dead letter ids, or --all');
      for (const id of ids) {
        await client.post(`/api/admin/dead-letters/${encodeURIComponent(id)}/replay`);
        printLine(`replaying ${id}`);
      }
    });

  dlq
    .command('discard <ids...>')
    .description('delete dead letters for good')
    .action(async (ids: string[], _flags, command: Command) => {
      const client = clientFor(command);
      for (const id of ids) {
        await client.delete(`/api/admin/dead-letters/${encodeURIComponent(id)}`);
        printLine(`discarded ${id}`);
      }
    });
}
