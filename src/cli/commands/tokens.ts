import type { Command } from 'commander';
import { SCOPES, type Scope } from '../../contract/requests.js';
import type { ApiToken } from '../../contract/types.js';
import { clientFor } from '../client.js';
import * as v from 'valibot';
import { eachOf, integerFlag, parseWith, withYes } from '../flags.js';
import { withExample } from '../help.js';
import { type Column, printJson, printLine, printTable } from '../output.js';
import { confirmOrStop } from '../prompt.js';

/** A scope as written: lower case, as the API names it. */
const scopeFlag = parseWith(v.picklist(SCOPES, `must be ${SCOPES.join(', ')}`));

const columns: Column<ApiToken>[] = [
  { header: 'ID', value: (token) => token.id },
  { header: 'NAME', value: (token) => token.name },
  { header: 'SCOPES', value: (token) => token.scopes.join(' ') },
  { header: 'WORKSPACES', value: (token) => token.workspaces?.join(' ') ?? '(all)' },
  { header: 'EXPIRES', value: (token) => token.expiresAt.slice(0, 10) },
  { header: 'LAST USED', value: (token) => token.lastUsedAt?.slice(0, 16).replace('T', ' ') ?? 'never' },
];

/** `platform tokens`: personal API tokens for scripts (PLATFORM_TOKEN=plt_… works with every command). */
export function registerTokens(program: Command): void {
  const tokens = program.command('tokens').description('personal API tokens for scripts: PLATFORM_TOKEN=plt_… works with every command');

  withExample(
    tokens.command('create').description('create a token acting as you, within its scopes; it is printed once'),
    'platform tokens create --name deploy --scope events:publish events:read --workspace acme --expires-in-days 30',
  )
    .requiredOption('--name <name>', 'what it is for')
    .requiredOption('--scope <scopes...>', `what it may do: ${SCOPES.join(', ')}`, eachOf(scopeFlag))
    .option('--workspace <ids...>', 'only these workspaces (default: every workspace you may use)')
    .option('--expires-in-days <days>', 'lifetime, 1-365 (default 90)', integerFlag(1, 365))
    .option('--json', 'print JSON')
    .action(async (flags: { name: string; scope: Scope[]; workspace?: string[]; expiresInDays?: number; json?: boolean }, command: Command) => {
      const { data: created } = await clientFor(command).call('createApiToken', {
        body: {
          name: flags.name,
          scopes: flags.scope,
          ...(flags.workspace ? { workspaces: flags.workspace } : {}),
          ...(flags.expiresInDays === undefined ? {} : { expiresInDays: flags.expiresInDays }),
        },
      });
      if (flags.json) return printJson(created);
      printLine(`created token ${created.id} (${created.name}), expires ${created.expiresAt}`);
      printLine(`token (shown only now; use it as PLATFORM_TOKEN or Authorization: Bearer): ${created.token}`);
    });

  withExample(tokens.command('list').description('your tokens (ADMIN: --all for every user’s)'), 'platform tokens list', 'platform tokens list --all --json')
    .option('--all', 'every user’s tokens (ADMIN)')
    .option('--json', 'print JSON')
    .action(async (flags: { all?: boolean; json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const { data: list } = flags.all ? await client.call('listAllApiTokens') : await client.call('listApiTokens');
      if (flags.json) return printJson(list);
      printTable(list, flags.all ? [{ header: 'USER', value: (token) => token.userId }, ...columns] : columns, '(no tokens)');
    });

  withExample(
    withYes(tokens.command('revoke <id>').description('revoke a token: it stops working at once (ADMIN: --any for another user’s)')),
    'platform tokens revoke 4c1e0b7a-2f3d-4e5a-9b8c-1d2e3f4a5b6c --yes',
  )
    .option('--any', 'a token of any user (ADMIN)')
    .action(async (id: string, flags: { yes?: boolean; any?: boolean }, command: Command) => {
      await confirmOrStop(`Revoke token ${id}?`, flags);
      const client = clientFor(command);
      if (flags.any) await client.call('revokeAnyApiToken', { params: { tokenId: id } });
      else await client.call('revokeApiToken', { params: { tokenId: id } });
      printLine(`revoked token ${id}`);
    });
}
