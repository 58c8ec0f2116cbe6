import { Command, CommanderError } from 'commander';
import { registerAuth } from './commands/auth.js';
import { registerDeliveries } from './commands/deliveries.js';
import { registerDlq } from './commands/dlq.js';
import { registerEvents } from './commands/events.js';
import { registerExt } from './commands/ext.js';
import { registerExtConfig } from './commands/ext-config.js';
import { registerInit } from './commands/init.js';
import { registerKeys } from './commands/keys.js';
import { registerServe } from './commands/serve.js';
import { registerStatus } from './commands/status.js';
import { registerUsers } from './commands/users.js';
import { registerWorkspaces } from './commands/workspaces.js';
import { CliError, EXIT } from './errors.js';

const program = new Command('platform')
  .description('a self-hosted extension platform: the daemon and its admin CLI')
  .option('--url <url>', 'daemon URL (PLATFORM_URL; default: the logged-in one, else http://127.0.0.1:8080)')
  .showHelpAfterError()
  .exitOverride();

registerServe(program);
registerInit(program);
registerAuth(program);
registerUsers(program);
registerExtConfig(registerExt(program));
registerWorkspaces(program);
registerEvents(program);
registerDeliveries(program);
registerDlq(program);
registerStatus(program);
registerKeys(program);

function fail(message: string, exitCode: number): never {
  process.stderr.write(`platform: ${message}\n`);
  process.exit(exitCode);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and --version end here too, with exit code 0.
    process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage);
  }
  if (error instanceof CliError) fail(error.message, error.exitCode);
  if (error instanceof Error && error.name === 'StartupError') fail(error.message, EXIT.daemonError);
  fail(`unexpected error: ${error instanceof Error ? error.message : String(error)}`, EXIT.daemonError);
}
