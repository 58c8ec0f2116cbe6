import type { Command } from 'commander';
import { clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { examples } from '../help.js';
import { printJson, printLine } from '../output.js';
import { askNewPassword, checkedNewPassword } from '../passwords.js';
import { askSecret, askText, readStdin, readStdinLines } from '../prompt.js';
import { clearSession, readSession, resolveUrl, saveSession } from '../session.js';
import { ApiError } from '../../contract/client.js';
import type { User } from '../../contract/types.js';

/** The login answer carries the token only in its Set-Cookie header (`__Host-` prefixed behind TLS). */
function tokenFromSetCookie(headers: Headers): string {
  for (const cookie of headers.getSetCookie()) {
    const match = /^(?:__Host-)?platform_token=([^;]+)/.exec(cookie);
    if (match) return match[1]!;
  }
  throw new CliError('the daemon answered the login without a session cookie', EXIT.daemonError);
}

const describe = (user: User) => `${user.email} (${user.fullName}), roles: ${user.roles.join(', ')}`;

export function registerAuth(program: Command): void {
  program
    .command('login')
    .description('log in and keep the session for later commands')
    .addHelpText('after', examples('platform login --url http://127.0.0.1:8080 --email admin@example.com'))
    .option('--email <email>', 'your e-mail (prompted on a terminal)')
    .option('--password-stdin', 'read the password from stdin')
    .action(async (flags: { email?: string; passwordStdin?: boolean }, command: Command) => {
      const url = resolveUrl(command.optsWithGlobals().url);
      const email = flags.email ?? (await askText('E-mail', '--email'));
      const password = flags.passwordStdin ? await readStdin('the password') : await askSecret('Password', '--password-stdin');
      if (!password) throw usageError('the password is empty');
      const client = clientFor(command, { token: null });
      const response = await client.call('createSession', { body: { email, password } });
      saveSession({ url, token: tokenFromSetCookie(response.headers), email: response.data.email });
      printLine(`logged in to ${url} as ${describe(response.data)}`);
    });

  program
    .command('logout')
    .description('end the session on the daemon and forget it here')
    .addHelpText('after', examples('platform logout'))
    .action(async (_flags, command: Command) => {
      const session = readSession();
      try {
        await clientFor(command).call('endSession');
      } catch (error) {
        // An expired or revoked session is as logged out as it gets; anything else is reported.
        if (!(error instanceof ApiError || (error instanceof CliError && error.exitCode === EXIT.daemonError))) throw error;
      }
      clearSession();
      printLine(session ? `logged out ${session.email}` : 'logged out');
    });

  program
    .command('whoami')
    .description('show the user of the current session')
    .addHelpText('after', examples('platform whoami --json'))
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { data: user } = await clientFor(command).call('getCurrentUser');
      if (flags.json) printJson(user);
      else printLine(`${describe(user)}${user.active ? '' : ' [disabled]'}`);
    });

  program
    .command('passwd')
    .description('change your password (ends your other sessions)')
    .addHelpText('after', examples('platform passwd', "printf '%s\\n%s\\n' \"$OLD\" \"$NEW\" | platform passwd --password-stdin"))
    .option('--password-stdin', 'read the current and the new password from stdin, one per line')
    .action(async (flags: { passwordStdin?: boolean }, command: Command) => {
      const url = resolveUrl(command.optsWithGlobals().url);
      let currentPassword: string;
      let newPassword: string;
      if (flags.passwordStdin) {
        [currentPassword, newPassword] = (await readStdinLines(2, 'the current and the new password')) as [string, string];
        checkedNewPassword(newPassword);
      } else {
        currentPassword = await askSecret('Current password', '--password-stdin');
        newPassword = await askNewPassword('New password');
      }
      const response = await clientFor(command).call('changePassword', { body: { currentPassword, newPassword } });
      const session = readSession();
      if (session && session.url === url && !process.env.PLATFORM_TOKEN) {
        saveSession({ ...session, token: tokenFromSetCookie(response.headers) });
      }
      printLine('password changed; your other sessions have ended');
    });
}
