import type { Command } from 'commander';
import { clientFor } from '../client.js';
import { examples } from '../help.js';
import { printJson, printLine } from '../output.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description("the daemon's queues: pending and in-flight deliveries, dead letters, events (ADMIN)")
    .addHelpText('after', examples('platform status --json'))
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { data: status } = await clientFor(command).call('getDaemonStatus');
      if (flags.json) return printJson(status);
      const oldest = status.oldestPendingAgeMs === null ? '-' : `${(status.oldestPendingAgeMs / 1000).toFixed(1)} s`;
      printLine(`platform ${status.version}, up ${status.uptimeSeconds} s`);
      printLine(`deliveries: ${status.pendingDeliveries} pending (oldest ${oldest}), ${status.inFlightDeliveries} in flight`);
      printLine(`dead letters: ${status.deadLetters}`);
      printLine(`events stored: ${status.eventsStored}`);
    });
}
