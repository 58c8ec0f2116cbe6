import type { Command } from 'commander';
import { type Client, clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { printJson, printLine, printTable } from '../output.js';
import { askSecret, readStdin } from '../prompt.js';

/** The User resource of the API. */
export interface PublicUser {
  id: string;
  email: string;
  fullName: string;
  roles: string[];
  active: boolean;
}


/** Accepts an e-mail (case-insensitive) or a user id. */
export async function findUser(client: Client, who: string): Promise<PublicUser> {
  const users = await client.get<PublicUser[]>('/api/admin/users');
  const match = users.find((user) => user.id === who || user.email.toLowerCase() === who.toLowerCase());
  if (!match) throw new CliError(`no user ${who}`, EXIT.daemonError);
  return match;
}

export function registerUsers(program: Command): void {
  const users = program.command('users').description('manage user accounts (ADMIN)');

  users
    .command('add')
    .description('create a user')
    .requiredOption('--email <email>', 'e-mail, unique')
    .requiredOption('--full-name <name>', 'display name')
    .option('--role <role...>', 'ADMIN and/or USER (default USER)')
    .option('--password-stdin', 'read the password from stdin instead of prompting')
    .action(async (flags: { email: string; fullName: string; role?: string[]; passwordStdin?: boolean }, command: Command) => {
      let password: string;
      if (flags.passwordStdin) password = await readStdin();
      else {
        password = await askSecret('Password for the new user (8-72 bytes)', '--password-stdin');
        if ((await askSecret('Password again', '--password-stdin')) !== password) throw usageError('the passwords do not match');
      }
      const roles = flags.role?.map((role) => role.toUpperCase());
      const user = await clientFor(command).post<PublicUser>('/api/admin/users', {
        email: flags.email,
        fullName: flags.fullName,
        password,
        ...(roles ? { roles } : {}),
      });
      printLine(`created ${user.email} (${user.roles.join(', ')}), id ${user.id}`);
    });

  users
    .command('list')
    .description('list users')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const list = await clientFor(command).get<PublicUser[]>('/api/admin/users');
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
    users
      .command(`${name} <user>`)
      .description(`${name} an account, by e-mail or id${active ? '' : ' (its requests get 403 ACCOUNT_DISABLED)'}`)
      .action(async (who: string, _flags, command: Command) => {
        const client = clientFor(command);
        const user = await findUser(client, who);
        await client.patch(`/api/admin/users/${user.id}`, { active });
        printLine(`${name}d ${user.email}`);
      });
  }

  users
    .command('set-roles <user>')
    .description('replace the roles of an account, by e-mail or id')
    .requiredOption('--role <role...>', 'ADMIN and/or USER')
    .action(async (who: string, flags: { role: string[] }, command: Command) => {
      const client = clientFor(command);
      const user = await findUser(client, who);
      const updated = await client.patch<PublicUser>(`/api/admin/users/${user.id}`, {
        roles: flags.role.map((role) => role.toUpperCase()),
      });
      printLine(`${updated.email} now has ${updated.roles.join(', ')}`);
    });

  users
    .command('delete <user>')
    .description('delete an account, by e-mail or id: its sessions end and it leaves every workspace')
    .action(async (who: string, _flags, command: Command) => {
      const client = clientFor(command);
      const user = await findUser(client, who);
      await client.delete(`/api/admin/users/${user.id}`);
      printLine(`deleted ${user.email}`);
    });

  users
    .command('reset-password <user>')
    .description("set another user's password (ends their sessions); with --data-dir, offline, for a locked-out administrator")
    .option('--password-stdin', 'read the new password from stdin instead of prompting')
    .option('--data-dir <dir>', 'reset in this data directory directly, with the daemon stopped (no login needed)')
    .action(async (who: string, flags: { passwordStdin?: boolean; dataDir?: string }, command: Command) => {
      const password = await newPassword(flags.passwordStdin);
      if (flags.dataDir !== undefined) {
        const { resolveConfig, ConfigError } = await import('../../daemon/config.js');
        const { resetPasswordOffline } = await import('../../daemon/init.js');
        let config;
        try {
          config = resolveConfig({ dataDir: flags.dataDir });
        } catch (error) {
          if (error instanceof ConfigError) throw usageError(error.message);
          throw error;
        }
        const user = await resetPasswordOffline(config, who, password);
        printLine(`reset the password of ${user.email} in ${config.dataDir}; its sessions have ended`);
        return;
      }
      const client = clientFor(command);
      const user = await findUser(client, who);
      await client.post(`/api/admin/users/${user.id}/password`, { password });
      printLine(`reset the password of ${user.email}; its sessions have ended`);
    });
}

async function newPassword(fromStdin: boolean | undefined): Promise<string> {
  if (fromStdin) return readStdin();
  const password = await askSecret('New password (8-72 bytes)', '--password-stdin');
  if ((await askSecret('Password again', '--password-stdin')) !== password) throw usageError('the passwords do not match');
  return password;
}
