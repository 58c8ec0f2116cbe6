import type { Command } from 'commander';
import { clientFor } from '../client.js';
import { CliError, EXIT, usageError } from '../errors.js';
import { withYes } from '../flags.js';
import { withExample } from '../help.js';
import { type Column, printJson, printLine, printTable } from '../output.js';
import { confirmOrStop } from '../prompt.js';
import { ApiError } from '../../contract/client.js';
import type { Installation, InstalledExtension, Subscription } from '../../contract/types.js';
import { findUser } from './users.js';


/** KEY, KEY@VERSION, KEY@RANGE or KEY@latest: the version part goes to the daemon as given. */
function parseReference(reference: string): { extensionKey: string; version?: string } {
  const at = reference.indexOf('@');
  if (at === 0 || at === reference.length - 1) throw usageError(`expected KEY, KEY@VERSION, KEY@RANGE or KEY@latest, got ${reference}`);
  return at < 0 ? { extensionKey: reference } : { extensionKey: reference.slice(0, at), version: reference.slice(at + 1) };
}

const installationColumns: Column<Installation>[] = [
  { header: 'EXTENSION', value: (installation) => installation.extensionKey },
  { header: 'VERSION', value: (installation) => installation.version },
  { header: 'ENABLED', value: (installation) => (installation.enabled ? 'yes' : 'no') },
  { header: 'INSTALLED', value: (installation) => installation.installedAt.slice(0, 10) },
];

const subscriptionColumns: Column<Subscription>[] = [
  { header: 'ID', value: (subscription) => subscription.id },
  { header: 'EVENT', value: (subscription) => subscription.eventKey },
  { header: 'EXTENSION', value: (subscription) => subscription.extensionKey },
  { header: 'KIND', value: (subscription) => subscription.kind },
  { header: 'DELIVERED TO', value: (subscription) => subscription.deliveryUrl },
];

interface WiringFlags {
  grantPermissions?: boolean;
  yes?: boolean;
  serviceUrl?: string;
}

/** The options of a command that applies a version's manifest: consent, and where its external subscriptions deliver. */
const withWiring = (command: Command) =>
  command
    .option('--grant-permissions', 'grant the permissions the version asks for without asking')
    .option('--yes', 'the same as --grant-permissions')
    .option('--service-url <url>', 'base URL of the extension’s service: its manifest’s external subscriptions deliver below it');

const wiring = (flags: WiringFlags, grantPermissions: string[] | undefined) => ({
  ...(grantPermissions === undefined ? {} : { grantPermissions }),
  ...(flags.serviceUrl === undefined ? {} : { serviceBaseUrl: flags.serviceUrl }),
});

/**
 * Sends the request without consent first: the daemon answers 409
 * CONSENT_REQUIRED with the permissions the version asks for (and writes
 * nothing). They are shown, granted with --grant-permissions or --yes or
 * on a terminal's question, and the request is sent again granting them.
 */
async function withConsent(flags: WiringFlags, send: (grantPermissions: string[] | undefined) => Promise<{ data: InstalledExtension }>): Promise<InstalledExtension> {
  try {
    return (await send(undefined)).data;
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'CONSENT_REQUIRED' || !error.meta?.permissions) throw error;
    const asked = error.meta.permissions;
    process.stderr.write(`${error.message}\n${asked.map((permission) => `  - ${permission}`).join('\n')}\n`);
    await confirmOrStop('Grant these permissions?', { yes: flags.grantPermissions === true || flags.yes === true });
    return (await send(asked)).data;
  }
}

/** What the manifest did: the permissions granted, the subscriptions made (each secret shown this once), the configuration missing. */
function printWiring(installed: InstalledExtension): void {
  if (installed.grantedPermissions.length > 0) printLine(`granted: ${installed.grantedPermissions.join(', ')}`);
  for (const subscription of installed.subscriptions) {
    printLine(`subscribed to ${subscription.eventKey} (${subscription.kind}, id ${subscription.id})${subscription.deliveryUrl ? `: deliveries are POSTed to ${subscription.deliveryUrl}` : ''}`);
    if (subscription.kind === 'EXTERNAL_SERVICE') printLine(`  signing secret (shown only now): ${subscription.signingSecret}`);
  }
  if (installed.installationToken) {
    printLine(`installation token (shown only now; the extension's service publishes its events with it): ${installed.installationToken}`);
  }
  if (installed.missingConfiguration.length > 0) {
    process.stderr.write(
      `platform: warning: ${installed.extensionKey} needs configuration still missing: ${installed.missingConfiguration.join(', ')} (platform ext config set ${installed.extensionKey} …)\n`,
    );
  }
}

export function registerWorkspaces(program: Command): void {
  const workspaces = program.command('workspaces').description('workspaces and their members');

  withExample(workspaces.command('create <id>').description('create a workspace (ADMIN)'), 'platform workspaces create acme --name "Acme Inc"')
    .requiredOption('--name <name>', 'display name')
    .action(async (id: string, flags: { name: string }, command: Command) => {
      const { data: workspace } = await clientFor(command).call('createWorkspace', { body: { id, name: flags.name } });
      printLine(`created workspace ${workspace.id} (${workspace.name})`);
    });

  withExample(workspaces.command('list').description('your workspaces (ADMIN: all)'), 'platform workspaces list --json')
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { data: list } = await clientFor(command).call('listWorkspaces');
      if (flags.json) return printJson(list);
      printTable(list, [
        { header: 'ID', value: (workspace) => workspace.id },
        { header: 'NAME', value: (workspace) => workspace.name },
        { header: 'MEMBERS', value: (workspace) => workspace.members.length },
        { header: 'CREATED', value: (workspace) => workspace.createdAt.slice(0, 10) },
      ]);
    });

  withExample(
    workspaces.command('show <id>').description('a workspace with its members, installed extensions and subscriptions'),
    'platform workspaces show acme',
  )
    .option('--json', 'print JSON')
    .action(async (id: string, flags: { json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const [{ data: workspace }, { data: installations }, { data: subscriptions }] = await Promise.all([
        client.call('getWorkspace', { params: { id } }),
        client.call('listInstallations', { params: { id } }),
        client.call('listSubscriptions', { params: { id } }),
      ]);
      if (flags.json) return printJson({ ...workspace, installations, subscriptions });
      // Member e-mails need the user list, which only an ADMIN may read; others see ids.
      const emails = await client
        .call('listUsers')
        .then(({ data: users }) => new Map(users.map((user) => [user.id, user.email])))
        .catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 403) return new Map<string, string>();
          throw error;
        });
      printLine(`${workspace.id}  ${workspace.name}  (created ${workspace.createdAt.slice(0, 10)})`);
      printLine(`members: ${workspace.members.length > 0 ? workspace.members.map((member) => emails.get(member) ?? member).join(', ') : '(none)'}`);
      printLine('');
      printTable(installations, installationColumns, '(no extensions installed)');
      printLine('');
      printTable(subscriptions, subscriptionColumns, '(no subscriptions)');
    });

  withExample(
    workspaces.command('rename <id>').description('change the display name of a workspace (ADMIN)'),
    'platform workspaces rename acme --name "Acme Corporation"',
  )
    .requiredOption('--name <name>', 'the new display name')
    .action(async (id: string, flags: { name: string }, command: Command) => {
      const { data: workspace } = await clientFor(command).call('renameWorkspace', { params: { id }, body: { name: flags.name } });
      printLine(`renamed workspace ${workspace.id} to ${workspace.name}`);
    });

  withExample(
    withYes(
      workspaces
        .command('delete <id>')
        .description('delete a workspace (ADMIN); refused while extensions are installed or inbound webhooks publish into it, unless --force'),
    ),
    'platform workspaces delete acme --yes',
  )
    .option('--force', 'also remove its installations, subscriptions and dead letters, and the webhook.workspaceId settings naming it')
    .action(async (id: string, flags: { force?: boolean; yes?: boolean }, command: Command) => {
      await confirmOrStop(`Delete workspace ${id}${flags.force ? ' with everything in it' : ''}?`, flags);
      const { data: deleted } = await clientFor(command).call('deleteWorkspace', { params: { id }, query: flags.force ? { force: 'true' } : undefined });
      printLine(`deleted workspace ${id}`);
      for (const extensionKey of deleted.clearedWebhooks) {
        printLine(`removed webhook.workspaceId of ${extensionKey}: its inbound webhook calls fail until it names a workspace again`);
      }
    });

  for (const [name, operation] of [
    ['add-member', 'addMember'],
    ['remove-member', 'removeMember'],
  ] as const) {
    withExample(
      workspaces
        .command(`${name} <workspace> <user>`)
        .description(`${name === 'add-member' ? 'add a user to' : 'remove a user from'} a workspace, by e-mail or id (ADMIN)`),
      `platform workspaces ${name} acme dana@example.com`,
    )
      .action(async (workspace: string, who: string, _flags, command: Command) => {
        const client = clientFor(command);
        const user = await findUser(client, who);
        if (operation === 'removeMember') {
          // The route answers 204 for a non-member too; a typo must not pass as a removal.
          const { members } = (await client.call('getWorkspace', { params: { id: workspace } })).data;
          if (!members.includes(user.id)) throw new CliError(`${user.email} is not a member of ${workspace}: membership not found`, EXIT.daemonError);
        }
        await client.call(operation, { params: { id: workspace, userId: user.id } });
        printLine(`${name === 'add-member' ? 'added' : 'removed'} ${user.email} ${name === 'add-member' ? 'to' : 'from'} ${workspace}`);
      });
  }

  const extensions = program.command('extensions').description('extensions installed in a workspace');

  for (const [group, name] of [
    [program, 'install <workspace> <extension>'],
    [extensions, 'install <workspace> <extension>'],
  ] as const) {
    withWiring(
      withExample(
        group
          .command(name)
          .description(
            'install KEY, KEY@VERSION, KEY@RANGE (e.g. crm@^1.2) or KEY@latest into a workspace (ADMIN); without a version, the newest this daemon runs. ' +
              'The permissions the version asks for are shown and must be granted; its subscriptions are made',
          ),
        'platform extensions install acme crm --service-url https://crm.example.com/hooks',
        'platform install acme crm@1.2.1 --grant-permissions --service-url https://crm.example.com/hooks',
      ),
    )
      .option('--version <version>', 'a version, a range or latest (instead of KEY@VERSION)')
      .option('--json', 'print JSON')
      .action(async (workspace: string, reference: string, flags: WiringFlags & { version?: string; json?: boolean }, command: Command) => {
        const parsed = parseReference(reference);
        const version = flags.version ?? parsed.version;
        const client = clientFor(command);
        const installed = await withConsent(flags, (grantPermissions) =>
          client.call('installExtension', {
            params: { id: workspace },
            body: { extensionKey: parsed.extensionKey, ...(version === undefined ? {} : { version }), ...wiring(flags, grantPermissions) },
          }),
        );
        if (flags.json) return printJson(installed);
        printLine(`installed ${installed.extensionKey}@${installed.version} in ${workspace}`);
        printWiring(installed);
      });
  }

  withExample(extensions.command('list <workspace>').description('installed extensions'), 'platform extensions list acme')
    .option('--json', 'print JSON')
    .action(async (workspace: string, flags: { json?: boolean }, command: Command) => {
      const { data: list } = await clientFor(command).call('listInstallations', { params: { id: workspace } });
      if (flags.json) return printJson(list);
      printTable(list, installationColumns);
    });

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    withExample(
      extensions.command(`${name} <workspace> <key>`).description(`${name} an installed extension (ADMIN)${enabled ? '' : ': its subscriptions get no events'}`),
      `platform extensions ${name} acme crm`,
    )
      .action(async (workspace: string, key: string, _flags, command: Command) => {
        await clientFor(command).call('updateInstallation', { params: { id: workspace, key }, body: { enabled } });
        printLine(`${name}d ${key} in ${workspace}`);
      });
  }

  withWiring(
    withExample(
      extensions
        .command('upgrade <workspace> <extension>')
        .description(
          'move an installed extension to KEY@VERSION, KEY@RANGE or KEY@latest; without a version, the latest (ADMIN). ' +
            'A version that asks for a new permission needs consent again; its manifest’s subscriptions are made and the old ones it drops removed',
        ),
      'platform extensions upgrade acme crm',
    ),
  )
    .option('--allow-downgrade', 'allow moving to a lower version')
    .action(async (workspace: string, reference: string, flags: WiringFlags & { allowDowngrade?: boolean }, command: Command) => {
      const client = clientFor(command);
      const { extensionKey, version } = parseReference(reference);
      // The daemon resolves `latest` and ranges to the highest version it can run.
      const installation = await withConsent(flags, (grantPermissions) =>
        client.call('updateInstallation', {
          params: { id: workspace, key: extensionKey },
          body: { version: version ?? 'latest', ...(flags.allowDowngrade ? { allowDowngrade: true } : {}), ...wiring(flags, grantPermissions) },
        }),
      );
      printLine(`${extensionKey} in ${workspace} is now at ${installation.version}`);
      printWiring(installation);
    });

  withExample(
    extensions
      .command('rotate-token <workspace> <key>')
      .description('issue a new installation token for the extension’s service (ADMIN); the old one stops working; printed once'),
    'platform extensions rotate-token acme crm',
  )
    .option('--json', 'print JSON')
    .action(async (workspace: string, key: string, flags: { json?: boolean }, command: Command) => {
      const { data } = await clientFor(command).call('rotateInstallationToken', { params: { id: workspace, key } });
      if (flags.json) return printJson(data);
      printLine(`installation token of ${key} in ${workspace} (shown only now; the old one no longer works): ${data.installationToken}`);
    });

  withExample(
    withYes(extensions.command('uninstall <workspace> <key>').description('remove an extension from a workspace (ADMIN)')),
    'platform extensions uninstall acme crm --yes',
  )
    .action(async (workspace: string, key: string, flags: { yes?: boolean }, command: Command) => {
      await confirmOrStop(`Uninstall ${key} from ${workspace}?`, flags);
      await clientFor(command).call('uninstallExtension', { params: { id: workspace, key } });
      printLine(`uninstalled ${key} from ${workspace}`);
    });

  const subscriptions = program.command('subscriptions').description('which extensions receive which events');

  withExample(
    subscriptions.command('add <workspace>').description('subscribe an extension to an event key (ADMIN); prints the signing secret once'),
    'platform subscriptions add acme --event crm.deal.closed --extension crm --service-url https://crm.example.com/hooks',
  )
    .requiredOption('--event <eventKey>', 'event key, e.g. crm.deal.closed')
    .requiredOption('--extension <key>', 'the subscribing extension')
    .option('--service-url <url>', 'external service base URL: events are POSTed to <url>/events')
    .option('--in-process', "deliver to the extension's in-process plugin instead")
    .option('--json', 'print JSON')
    .action(
      async (
        workspace: string,
        flags: { event: string; extension: string; serviceUrl?: string; inProcess?: boolean; json?: boolean },
        command: Command,
      ) => {
        if (Boolean(flags.serviceUrl) === Boolean(flags.inProcess)) throw usageError('give either --service-url or --in-process');
        const { data: subscription, meta } = await clientFor(command).call('createSubscription', {
          params: { id: workspace },
          body: {
            eventKey: flags.event,
            extensionKey: flags.extension,
            kind: flags.inProcess ? 'IN_PROCESS' : 'EXTERNAL_SERVICE',
            ...(flags.serviceUrl ? { serviceBaseUrl: flags.serviceUrl } : {}),
          },
        });
        const warnings = meta?.warnings ?? [];
        for (const warning of warnings) process.stderr.write(`platform: warning: ${warning}\n`);
        if (flags.json) return printJson(subscription);
        printLine(`subscribed ${subscription.extensionKey} to ${subscription.eventKey} in ${workspace} (id ${subscription.id})`);
        if (subscription.deliveryUrl) printLine(`deliveries are POSTed to ${subscription.deliveryUrl}`);
        if (subscription.kind === 'EXTERNAL_SERVICE') {
          printLine(`signing secret (shown only now; verify the webhook-signature header with it): ${subscription.signingSecret}`);
        }
      },
    );

  withExample(subscriptions.command('list <workspace>').description('subscriptions of a workspace'), 'platform subscriptions list acme')
    .option('--json', 'print JSON')
    .action(async (workspace: string, flags: { json?: boolean }, command: Command) => {
      const { data: list } = await clientFor(command).call('listSubscriptions', { params: { id: workspace } });
      if (flags.json) return printJson(list);
      printTable(list, subscriptionColumns);
    });

  withExample(
    withYes(subscriptions.command('remove <workspace> <id>').description('delete a subscription (ADMIN); its pending deliveries become dead letters')),
    'platform subscriptions remove acme 4c1e0b7a-2f3d-4e5a-9b8c-1d2e3f4a5b6c --yes',
  )
    .action(async (workspace: string, id: string, flags: { yes?: boolean }, command: Command) => {
      await confirmOrStop(`Remove subscription ${id} from ${workspace}?`, flags);
      await clientFor(command).call('deleteSubscription', { params: { id: workspace, subscriptionId: id } });
      printLine(`removed subscription ${id}`);
    });
}
