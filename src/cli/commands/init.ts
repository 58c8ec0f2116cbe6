import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { examples } from '../help.js';
import { printLine } from '../output.js';
import { checkedNewPassword, askNewPassword } from '../passwords.js';
import { askText, readStdin } from '../prompt.js';

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('prepare a data directory and create its first administrator')
    .addHelpText('after', examples('platform init --data-dir ./data --email admin@example.com'))
    .option('--data-dir <dir>', 'data directory (PLATFORM_DATA_DIR; default ./data)')
    .option('--email <email>', "the administrator's e-mail")
    .option('--password-stdin', 'read the password from stdin instead of prompting')
    .action(async (flags: { dataDir?: string; email?: string; passwordStdin?: boolean }) => {
      const config = await daemonConfig({ dataDir: flags.dataDir });
      const { Email } = await import('../../contract/schemas.js');
      const v = await import('valibot');
      const emailProblem = (value: string) => {
        const result = v.safeParse(Email, value);
        return result.success ? null : result.issues[0].message;
      };

      const email = flags.email ?? (await askText('Administrator e-mail', '--email', (value) => emailProblem(value) ?? true));
      const problem = emailProblem(email);
      if (problem !== null) throw usageError(`e-mail ${problem}`);
      const password = flags.passwordStdin ? checkedNewPassword(await readStdin('the password')) : await askNewPassword('Password');

      const { initDataDir } = await import('../../daemon/init.js');
      const created = await initDataDir(config, { email, password });
      if (!created) throw new CliError(`${config.dataDir} already has users; nothing was changed`, EXIT.daemonError);
      printLine(`initialized ${config.dataDir}: administrator ${created.email} created. Start the daemon with \`platform serve --data-dir ${shellWord(config.dataDir)}\`.`);
    });
}

/** A path as one word a shell reads back unchanged. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
