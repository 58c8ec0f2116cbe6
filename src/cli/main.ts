import { Command, CommanderError, Help, Option } from 'commander';
import { registerAuth } from './commands/auth.js';
import { registerBackup } from './commands/backup.js';
import { registerCompletion } from './commands/completion.js';
import { registerDb } from './commands/db.js';
import { registerDeliveries } from './commands/deliveries.js';
import { registerDlq } from './commands/dlq.js';
import { registerEvents } from './commands/events.js';
import { registerExt } from './commands/ext.js';
import { registerExtConfig } from './commands/ext-config.js';
import { registerInit } from './commands/init.js';
import { registerKeys } from './commands/keys.js';
import { registerOpenApi } from './commands/openapi.js';
import { registerRestore } from './commands/restore.js';
import { registerServe } from './commands/serve.js';
import { registerStatus } from './commands/status.js';
import { registerTokens } from './commands/tokens.js';
import { registerUsers } from './commands/users.js';
import { registerWebhooks } from './commands/webhooks.js';
import { registerWorkspaces } from './commands/workspaces.js';
import { CliError, EXIT, Interrupted, usageError } from './errors.js';
import { ApiError } from '../contract/client.js';
import { DEFAULT_TIMEOUT_SECONDS } from './client.js';
import { secondsFlag } from './flags.js';
import { commandPath, examples, finishCommandTree, withExample } from './help.js';
import { PLATFORM_VERSION } from '../daemon/version.js';

// A reader that goes away (`platform ext list | head -1`) is not an error: stop quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(EXIT.ok);
  throw error;
});

const program: Command = new Command('platform')
  .description('a self-hosted extension platform: the daemon and its admin CLI')
  .option('--url <url>', 'daemon URL (PLATFORM_URL; default: the logged-in one, else http://127.0.0.1:8080)')
  .option('--timeout <seconds>', `how long to wait for the daemon's answer (default ${DEFAULT_TIMEOUT_SECONDS})`, secondsFlag)
  .helpCommand(false)
  .exitOverride()
  .configureHelp({
    // Listed, not registered: see the --version handling below.
    visibleOptions(command): Option[] {
      const options = Help.prototype.visibleOptions.call(this, command);
      return command === program ? [new Option('-V, --version', 'print the version'), ...options] : options;
    },
  });

registerServe(program);
registerInit(program);
registerAuth(program);
registerUsers(program);
registerTokens(program);
registerExtConfig(registerExt(program));
registerWorkspaces(program);
registerEvents(program);
registerDeliveries(program);
registerDlq(program);
registerStatus(program);
registerKeys(program);
registerWebhooks(program);
registerBackup(program);
registerRestore(program);
registerDb(program);
registerOpenApi(program);
registerCompletion(program);

withExample(
  program.command('help [command...]').description('show the help of a command, e.g. `platform help events publish`'),
  'platform help dlq replay',
).action((words: string[]) => {
  let command: Command = program;
  for (const word of words) {
    const next = command.commands.find((child) => child.name() === word || child.aliases().includes(word));
    if (!next) throw usageError(`no command '${commandPath(command)} ${word}' (run '${commandPath(command)} --help')`);
    command = next;
  }
  command.help();
});

finishCommandTree(program);
// Not commander's .version(): a program option is recognised after any subcommand too, and `ext publish --version` is taken.
program.addHelpText('after', examples('platform --version', 'platform help events publish', 'source <(platform completion bash)'));
const [first] = process.argv.slice(2);
if (first === '--version' || first === '-V') {
  process.stdout.write(`${PLATFORM_VERSION}\n`);
  process.exit(EXIT.ok);
}

function fail(message: string, exitCode: number): never {
  process.stderr.write(`platform: ${message}\n`);
  process.exit(exitCode);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and --version end here too, with exit code 0; every other parse error is a usage error.
    process.exit(error.exitCode === 0 ? EXIT.ok : EXIT.usage);
  }
  // The prompt has already left the cursor at the start of a line: exit as a shell does on Ctrl-C.
  if (error instanceof Interrupted) process.exit(error.exitCode);
  if (error instanceof CliError) fail(error.message, error.exitCode);
  if (error instanceof ApiError) fail(error.message, EXIT.daemonError);
  if (error instanceof Error && error.name === 'StartupError') fail(error.message, EXIT.daemonError);
  fail(`unexpected error: ${error instanceof Error ? error.message : String(error)}`, EXIT.daemonError);
}
