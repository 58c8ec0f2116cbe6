import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { examples } from '../help.js';
import { printLine } from '../output.js';
import { askSecret, askText, readStdin } from '../prompt.js';

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
      const { Email, Password } = await import('../../daemon/auth/schemas.js');
      const v = await import('valibot');
      const check = (schema: typeof Email | typeof Password) => (value: string) => {
        const result = v.safeParse(schema, value);
        return result.success ? true : result.issues[0].message;
      };

      const email = flags.email ?? (await askText('Administrator e-mail', '--email', check(Email)));
      let password: string;
      if (flags.passwordStdin) password = await readStdin('the password');
      else {
        password = await askSecret('Password (8-72 bytes)', '--password-stdin', check(Password));
        const again = await askSecret('Password again', '--password-stdin');
        if (again !== password) throw usageError('the passwords do not match');
      }

      for (const [name, schema, value] of [
        ['e-mail', Email, email],
        ['password', Password, password],
      ] as const) {
        const verdict = check(schema)(value);
        if (verdict !== true) throw usageError(`${name} ${verdict}`);
      }

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
