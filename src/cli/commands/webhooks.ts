import type { Command } from 'commander';
import { clientFor } from '../client.js';
import { integerFlag } from '../flags.js';
import { fetchCursorListing } from '../paging.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';

/** With --all, pages are as large as the daemon allows: the log holds at most 1,000 calls. */
const ALL_PAGE_SIZE = 1000;

export function registerWebhooks(program: Command): void {
  const webhooks = program.command('webhooks').description('inbound webhooks (ADMIN)');

  withExample(
    webhooks.command('log <extensionKey>').description("the extension's latest inbound webhook calls, newest first"),
    'platform webhooks log github',
    'platform webhooks log github --all --json',
  )
    .option('--limit <n>', 'how many, 1-1000 (default 50); with --all, how many per request', integerFlag(1, ALL_PAGE_SIZE))
    .option('--all', 'every call kept (the latest 1,000)')
    .option('--json', 'print JSON, with headers and body excerpts')
    .action(async (extensionKey: string, flags: { limit?: number; all?: boolean; json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const { items: entries, more } = await fetchCursorListing((page) => client.call('listWebhookRequests', { params: { extensionKey }, query: page }), {
        limit: flags.limit ?? (flags.all ? ALL_PAGE_SIZE : undefined),
        all: flags.all,
      });
      if (flags.json) return printJson(entries);
      printTable(entries, [
        { header: 'TIME', value: (entry) => entry.receivedAt },
        { header: 'OUTCOME', value: (entry) => entry.outcome },
        { header: 'REASON', value: (entry) => entry.reason },
        { header: 'EVENT', value: (entry) => entry.eventId },
      ]);
      if (more) printLine(`(${entries.length} shown; more: --all, or a larger --limit)`);
    });
}
