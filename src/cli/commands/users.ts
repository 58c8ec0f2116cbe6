import type { Command } from 'commander';
import { daemonConfig } from '../daemon-config.js';
import { type Client, clientFor } from '../client.js';
import { CliError, EXIT } from '../errors.js';
import { choiceFlag, eachOf, withYes } from '../flags.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';
import { askNewPassword, checkedNewPassword } from '../passwords.js';
import { confirmOrStop, readStdin } from '../prompt.js';
import type { Role, User } from '../../contract/types.js';


/** Accepts an e-mail (case-insensitive) or a user id. */
export async function findUser(client: Client, who: string): Promise<User> {
  const { data: users } = await client.call('listUsers');
  const match = users.find((user) => user.id === who || user.email.toLowerCase() === who.toLowerCase());
  if (!match) throw new CliError(`user ${who} not found`, EXIT.daemonError);
  return match;
}

export function registerUsers(program: Command): void {
  const users = program.command('users').description('manage user accounts (ADMIN)');

  withExample(
    users.command('add').description('create a user'),
    "printf '%s' \"$PASSWORD\" | platform users add --email dana@example.com --full-name Dana --role USER --password-stdin",
  )
    .requiredOption('--email <email>', 'e-mail, unique')
    .requiredOption('--full-name <name>', 'display name')
    .option('--role <role...>', 'ADMIN and/or USER (default USER)', eachOf(choiceFlag(['ADMIN', 'USER'])))
    .option('--password-stdin', 'read the password from stdin instead of prompting')
    .action(async (flags: { email: string; fullName: string; role?: Role[]; passwordStdin?: boolean }, command: Command) => {
      const password = await newPassword(flags.passwordStdin, 'Password for the new user');
      const roles = flags.role;
      const { data: user } = await clientFor(command).call('createUser', {
        body: {
          email: flags.email,
          fullName: flags.fullName,
          password,
          ...(roles ? { roles } : {}),
        },
      });
      printLine(`created ${user.email} (${user.roles.join(', ')}), id ${user.id}`);
    });

  withExample(users.command('list').description('list users'), 'platform users list --json')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { data: list } = await clientFor(command).call('listUsers');
      if (flags.json) return printJson(list);
      printTable(list, [
        { header: 'EMAIL', value: (user) => user.email },
        { header: 'NAME', value: (user) => user.fullName },
        { header: 'ROLES', value: (user) => user.roles.join(',') },
        { header: 'ACTIVE', value: (user) => (user.active ? 'yes' : 'no') },
        { header: 'ID', value: (user) => user.id },
      ]);
    });

  for (const [name, active] of [
    ['disable', false],
    ['enable', true],
  ] as const) {
    const toggle = withExample(
      users
        .command(`${name} <user>`)
        .description(`${name} an account, by e-mail or id${active ? '' : ' (its requests get 403 ACCOUNT_DISABLED)'}`),
      `platform users ${name} dana@example.com${active ? '' : ' --yes'}`,
    );
    if (!active) withYes(toggle);
    toggle.action(async (who: string, flags: { yes?: boolean }, command: Command) => {
      const client = clientFor(command);
      const user = await findUser(client, who);
      if (!active) await confirmOrStop(`Disable ${user.email}? Their sessions stop working.`, flags);
      await client.call('updateUser', { params: { id: user.id }, body: { active } });
      printLine(`${name}d ${user.email}`);
    });
  }

  withExample(
    users.command('set-roles <user>').description('replace the roles of an account, by e-mail or id'),
    'platform users set-roles dana@example.com --role ADMIN USER',
  )
    .requiredOption('--role <role...>', 'ADMIN and/or USER', eachOf(choiceFlag(['ADMIN', 'USER'])))
    .action(async (who: string, flags: { role: Role[] }, command: Command) => {
      const client = clientFor(command);
      const user = await findUser(client, who);
      const { data: updated } = await client.call('updateUser', { params: { id: user.id }, body: { roles: flags.role } });
      printLine(`${updated.email} now has ${updated.roles.join(', ')}`);
    });

  withExample(
    withYes(users.command('delete <user>').description('delete an account, by e-mail or id: its sessions end and it leaves every workspace')),
    'platform users delete dana@example.com --yes',
  )
    .action(async (who: string, flags: { yes?: boolean }, command: Command) => {
      const client = clientFor(command);
      const user = await findUser(client, who);
      await confirmOrStop(`Delete the account ${user.email}?`, flags);
      await client.call('deleteUser', { params: { id: user.id } });
      printLine(`deleted ${user.email}`);
    });

  withExample(
    users
      .command('reset-password <user>')
      .description("set another user's password (ends their sessions); with --data-dir, offline, for a locked-out administrator"),
    'platform users reset-password dana@example.com',
    'platform users reset-password admin@localhost --data-dir ./data   # daemon stopped',
  )
    .option('--password-stdin', 'read the new password from stdin instead of prompting')
    .option('--data-dir <dir>', 'reset in this data directory directly, with the daemon stopped (no login needed)')
    .action(async (who: string, flags: { passwordStdin?: boolean; dataDir?: string }, command: Command) => {
      const password = await newPassword(flags.passwordStdin);
      if (flags.dataDir !== undefined) {
        const config = await daemonConfig({ dataDir: flags.dataDir });
        const { resetPasswordOffline } = await import('../../daemon/init.js');
        const user = await resetPasswordOffline(config, who, password);
        printLine(`reset the password of ${user.email} in ${config.dataDir}; its sessions have ended`);
        return;
      }
      const client = clientFor(command);
      const user = await findUser(client, who);
      await client.call('resetPassword', { params: { id: user.id }, body: { password } });
      printLine(`reset the password of ${user.email}; its sessions have ended`);
    });
}

const newPassword = async (fromStdin: boolean | undefined, label = 'New password'): Promise<string> =>
  fromStdin ? checkedNewPassword(await readStdin('the password')) : askNewPassword(label);
