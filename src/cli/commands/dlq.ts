import type { Command } from 'commander';
import { type Client, clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { withYes } from '../flags.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';
import { fetchListing, printPageHint, withPaging, type PageFlags } from '../paging.js';
import { confirmOrStop } from '../prompt.js';
import type { DeadLetter } from '../../contract/types.js';

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
  const first = await client.call('listDeadLetters', { query: { ...filter, limit: 1 } });
  const total = first.meta.total;
  const showProgress = Boolean(process.stderr.isTTY);
  let replayed = 0;
  let skipped = 0;
  for (;;) {
    const { data: batch } = await client.call('replayDeadLetters', { body: { ...definedOf(filter), limit: 100 } });
    replayed += batch.replayed;
    skipped = batch.skipped;
    if (showProgress) process.stderr.write(`\r${progressBar(replayed, total - skipped)}`);
    // A replay that fails at once is a dead letter again: never chase it round, stop at the count asked for.
    if (batch.replayed === 0 || replayed >= total) break;
  }
  if (showProgress) process.stderr.write('\n');
  printLine(`queued ${plural(replayed, 'dead letter')} for replay` + (skipped ? `; ${skipped} skipped (subscriber gone or disabled)` : ''));
}

const definedOf = (filter: Record<string, string | undefined>) => Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined));
const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

function progressBar(done: number, total: number): string {
  const width = 30;
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : width;
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${Math.max(total, done)}`;
}

const POLL_MS = 500;

/**
 * Waits for the outcome of replays: a replay that fails again comes back as a
 * dead letter under the same id (`dead`); one that no longer is a dead letter
 * nor queued was delivered (`gone`). Returns the ids that failed again.
 */
async function waitForReplays(client: Client, ids: string[]): Promise<string[]> {
  const waiting = new Set(ids);
  const failed: string[] = [];
  const started = Date.now();
  let nextLogAt = 0;
  while (waiting.size > 0) {
    for (const id of [...waiting]) {
      const { state } = (await client.call('getDeadLetterState', { params: { id } })).data;
      if (state === 'queued') continue;
      waiting.delete(id);
      if (state === 'gone') {
        process.stderr.write(clearLine());
        printLine(`${id}: delivered`);
      } else {
        const { data: letter } = await client.call('getDeadLetter', { params: { id } });
        process.stderr.write(clearLine());
        printLine(`${id}: failed again after ${plural(letter.attempts, 'attempt')}: ${describeError(letter.lastError)}`);
        failed.push(id);
      }
    }
    if (waiting.size === 0) break;
    const seconds = Math.round((Date.now() - started) / 1000);
    const progress = `waiting for ${plural(waiting.size, 'replay')} (retries follow the daemon's schedule): ${seconds} s`;
    // A terminal line is rewritten in place; a log gets a line now and then, not one per poll.
    if (process.stderr.isTTY) process.stderr.write(`${clearLine()}${progress}`);
    else if (seconds >= nextLogAt) {
      process.stderr.write(`${progress}\n`);
      nextLogAt = seconds + 30;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  process.stderr.write(clearLine());
  return failed;
}

/** On a terminal the progress line is rewritten in place; elsewhere each is its own line. */
const clearLine = () => (process.stderr.isTTY ? '\r\x1b[K' : '');

/** "subscriber answered HTTP 500" already says the status: never "HTTP 500 (HTTP 500)". */
const describeError = (error: DeadLetter['lastError']) =>
  error.status !== null && !error.message.includes(String(error.status)) ? `${error.message} (HTTP ${error.status})` : error.message;

export function registerDlq(program: Command): void {
  const dlq = program.command('dlq').description('dead letters: deliveries that failed for good (ADMIN)');

  withExample(
    withPaging(withFilters(dlq.command('list').description('dead letters, newest first')), 500),
    'platform dlq list --workspace acme --event crm.deal.closed',
    'platform dlq list --all --json > dead-letters.json',
  )
    .option('--json', 'print JSON')
    .action(async (flags: FilterFlags & PageFlags & { json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const listing = await fetchListing((page) => client.call('listDeadLetters', { query: { ...filterOf(flags), ...page } }), flags, 500);
      if (flags.json) return printJson(listing.items);
      printTable(listing.items, [
        { header: 'ID', value: (letter) => letter.id },
        { header: 'WORKSPACE', value: (letter) => letter.event.tenantId },
        { header: 'EVENT', value: (letter) => letter.event.eventKey },
        { header: 'EXTENSION', value: (letter) => letter.subscriber.extensionKey },
        { header: 'ATTEMPTS', value: (letter) => letter.attempts },
        { header: 'ERROR', value: (letter) => describeError(letter.lastError) },
        { header: 'DEAD AT', value: (letter) => letter.deadAt },
      ]);
      printPageHint(listing);
    });

  withExample(dlq.command('show <id>').description('one dead letter in full'), 'platform dlq show 9d2f0c1e-5b7a-4c55-9a43-0d0f6f1c2b3a')
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const { data: letter } = await clientFor(command).call('getDeadLetter', { params: { id } });
      if (flags.json) return printJson(letter);
      printLine(`dead letter ${letter.id} (delivery ${letter.deliveryId})`);
      printLine(`event:      ${letter.event.eventKey} ${letter.event.id} in ${letter.event.tenantId}, ${letter.event.occurredAt}`);
      printLine(`subscriber: ${letter.subscriber.extensionKey} (${letter.subscriber.kind}${letter.subscriber.serviceBaseUrl ? ` ${letter.subscriber.serviceBaseUrl}` : ''})`);
      printLine(`attempts:   ${letter.attempts}, first ${letter.firstAttemptAt ?? '-'}, dead ${letter.deadAt}, replayed ${letter.replayCount} times`);
      printLine(`last error: ${describeError(letter.lastError)}`);
      printLine(`payload:    ${JSON.stringify(letter.event.payload)}`);
    });

  withExample(
    withFilters(
      dlq
        .command('replay [ids...]')
        .description('queue dead letters to be sent again, to their one subscriber; a replay that fails again keeps its id'),
    ),
    'platform dlq replay 9d2f0c1e-5b7a-4c55-9a43-0d0f6f1c2b3a --wait',
    'platform dlq replay --all --workspace acme',
  )
    .option('--all', 'every dead letter matching the filters')
    .option('--wait', 'wait for the outcome of each replay (by id); exit 1 if one fails again')
    .action(async (ids: string[], flags: FilterFlags & { all?: boolean; wait?: boolean }, command: Command) => {
      const client = clientFor(command);
      if (flags.all) {
        if (ids.length > 0) throw usageError('give ids or --all, not both');
        if (flags.wait) throw usageError('--wait works with ids, not with --all');
        return replayAll(client, flags);
      }
      if (ids.length === 0) throw usageError('give dead letter ids, or --all');
      if (flags.workspace || flags.event || flags.extension) throw usageError('--workspace, --event and --extension go with --all');
      for (const id of ids) {
        await client.call('replayDeadLetter', { params: { id } });
        printLine(`queued ${id} for replay`);
      }
      if (flags.wait && (await waitForReplays(client, ids)).length > 0) throw new CliError('a replay failed again', EXIT.daemonError);
    });

  withExample(
    withYes(withFilters(dlq.command('discard [ids...]').description('delete dead letters for good'))),
    'platform dlq discard 9d2f0c1e-5b7a-4c55-9a43-0d0f6f1c2b3a --yes',
    'platform dlq discard --all --workspace acme --event crm.deal.closed',
  )
    .option('--all', 'every dead letter matching the filters')
    .action(async (ids: string[], flags: FilterFlags & { all?: boolean; yes?: boolean }, command: Command) => {
      const client = clientFor(command);
      if (flags.all) {
        if (ids.length > 0) throw usageError('give ids or --all, not both');
        const filter = filterOf(flags);
        const { meta } = await client.call('listDeadLetters', { query: { ...filter, limit: 1 } });
        const total = meta.total;
        if (total === 0) return printLine('no dead letters match; nothing discarded');
        await confirmOrStop(`Discard ${plural(total, 'dead letter')} for good?`, flags);
        const { discarded } = (await client.call('discardDeadLetters', { body: definedOf(filter) })).data;
        return printLine(`discarded ${plural(discarded, 'dead letter')}`);
      }
      if (ids.length === 0) throw usageError('give dead letter ids, or --all');
      if (flags.workspace || flags.event || flags.extension) throw usageError('--workspace, --event and --extension go with --all');
      await confirmOrStop(`Discard ${plural(ids.length, 'dead letter')} for good?`, flags);
      for (const id of ids) {
        await client.call('discardDeadLetter', { params: { id } });
        printLine(`discarded ${id}`);
      }
    });
}
