import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiError } from '../../contract/client.js';
import type { AuditRecord, ExtensionDetail, VersionRecord } from '../../contract/types.js';
import { type Client, clientFor } from '../client.js';
import { usageError } from '../errors.js';
import { withYes } from '../flags.js';
import { withExample } from '../help.js';
import { printJson, printLine, printTable } from '../output.js';
import { fetchListing, printPageHint, withPaging, type PageFlags } from '../paging.js';
import { askText, confirmOrStop } from '../prompt.js';


/** What `ext publish` sends, from a file, flags and prompts: the API's own field names. */
interface PublishFields {
  extensionKey?: string;
  name?: string;
  description?: string;
  category?: string;
  permissions?: string[];
  version?: string;
  artifactUrl?: string;
  manifestUrl?: string;
  requiresPlatform?: string;
  requiresSdk?: string;
  changelog?: string;
  manifest?: Record<string, unknown>;
}

interface ListFlags extends PageFlags {
  search?: string;
  category?: string;
  json?: boolean;
}

interface PublishFlags {
  key?: string;
  name?: string;
  description?: string;
  category?: string;
  permission?: string[];
  version?: string;
  artifactUrl?: string;
  manifestUrl?: string;
  requiresPlatform?: string;
  requiresSdk?: string;
  changelog?: string;
  manifest?: string;
  json?: boolean;
}

const TEXT_FIELDS = [
  'extensionKey',
  'name',
  'description',
  'category',
  'version',
  'artifactUrl',
  'manifestUrl',
  'requiresPlatform',
  'requiresSdk',
  'changelog',
] as const;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON file holding an object: a publish file or a manifest. */
async function readJsonObjectFile(file: string, what: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'does not exist' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'cannot be read (permission denied)' : `cannot be read (${code ?? String(error)})`;
    throw usageError(`${what} ${file} ${reason}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw usageError(`${what} ${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (!isObject(parsed)) throw usageError(`${file} must hold a JSON object`);
  return parsed;
}

/** Reads a publish file; its fields are checked for type here, for meaning by the daemon. */
async function readPublishFile(file: string): Promise<PublishFields> {
  const parsed = await readJsonObjectFile(file, 'publish file');
  const fields: PublishFields = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (name === 'manifest') {
      if (value === null) continue;
      if (!isObject(value)) throw usageError(`${file}: manifest must be a JSON object`);
      fields.manifest = value;
    } else if (name === 'permissions') {
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
        throw usageError(`${file}: permissions must be an array of strings`);
      }
      fields.permissions = value as string[];
    } else if ((TEXT_FIELDS as readonly string[]).includes(name)) {
      if (value === null) continue;
      if (typeof value !== 'string') throw usageError(`${file}: ${name} must be a string`);
      fields[name as (typeof TEXT_FIELDS)[number]] = value;
    } else {
      throw usageError(`${file}: unknown field ${name} (known: ${[...TEXT_FIELDS, 'permissions', 'manifest'].join(', ')})`);
    }
  }
  return fields;
}

/**
 * Commander gives an option that takes a value the next word, whatever it is:
 * `--category release.json` would lose the file, and `--permission a.b.c
 * release.json` (variadic) would take it as a permission. An existing .json
 * file in an option's place is taken back as the file, or refused.
 */
function reclaimFile(file: string | undefined, flags: PublishFlags): string | undefined {
  if (file !== undefined) return file;
  const isFile = (value: string) => /\.json$/i.test(value) && existsSync(value);
  const last = flags.permission?.at(-1);
  if (last !== undefined && isFile(last)) {
    flags.permission = flags.permission!.slice(0, -1);
    if (flags.permission.length === 0) throw usageError(`--permission took ${last} as a permission: give the permissions before the file`);
    return last;
  }
  for (const [name, value] of Object.entries(flags)) {
    // --manifest takes a file: its value is where it belongs.
    if (name !== 'manifest' && typeof value === 'string' && isFile(value)) {
      const flag = `--${name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;
      throw usageError(`${flag} took ${value} as its value; give ${flag} a value, or put the file before the options`);
    }
  }
  return undefined;
}

/** Flags win over the file. */
function fromFlags(flags: PublishFlags): PublishFields {
  const fields: PublishFields = {
    extensionKey: flags.key,
    name: flags.name,
    description: flags.description,
    category: flags.category,
    permissions: flags.permission,
    version: flags.version,
    artifactUrl: flags.artifactUrl,
    manifestUrl: flags.manifestUrl,
    requiresPlatform: flags.requiresPlatform,
    requiresSdk: flags.requiresSdk,
    changelog: flags.changelog,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
}

const required = (value: string | undefined, question: string, flag: string) => value ?? askText(question, flag);

/**
 * Publishes the version; when the daemon answers that the extension does not
 * exist, creates it and publishes again. Trying the version first means a
 * version the daemon refuses (400 comes before 404) creates nothing.
 */
async function publish(client: Client, fields: PublishFields): Promise<{ key: string; record: VersionRecord; created: boolean }> {
  const key = await required(fields.extensionKey, 'Extension key', '--key');
  const versionBody = {
    version: await required(fields.version, 'Version', '--version'),
    artifactUrl: await required(fields.artifactUrl, 'Artifact URL', '--artifact-url'),
    manifestUrl: fields.manifestUrl,
    requiresPlatform: fields.requiresPlatform,
    requiresSdk: fields.requiresSdk,
    changelog: fields.changelog,
    manifest: fields.manifest,
  };
  const publishVersion = async () => (await client.call('publishVersion', { params: { key }, body: versionBody })).data;
  try {
    return { key, record: await publishVersion(), created: false };
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 'NOT_FOUND')) throw error;
  }
  await client.call('createExtension', {
    body: {
      extensionKey: key,
      name: await required(fields.name, `Display name of the new extension ${key}`, '--name'),
      description: fields.description,
      category: fields.category,
      permissions: fields.permissions,
    },
  });
  return { key, record: await publishVersion(), created: true };
}

/**
 * On an existing extension, the name, description, category or permissions
 * given to publish that differ from the catalog's are updated (PUT) too.
 * Returns the names of the fields changed.
 */
async function updateChangedFields(client: Client, key: string, fields: PublishFields): Promise<string[]> {
  const given = { name: fields.name, description: fields.description, category: fields.category, permissions: fields.permissions };
  if (Object.values(given).every((value) => value === undefined)) return [];
  const { data: current } = await client.call('getExtension', { params: { key } });
  const changes = Object.fromEntries(
    Object.entries(given).filter(([name, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(current[name as keyof typeof given])),
  );
  if (Object.keys(changes).length === 0) return [];
  await client.call('updateExtension', { params: { key }, body: changes });
  return Object.keys(changes);
}

function printVersion(key: string, record: VersionRecord): void {
  printLine(`${key} ${record.version}${record.yanked ? '  (yanked)' : ''}`);
  printLine(`  released:           ${record.releaseDate}`);
  printLine(`  artifact:           ${record.artifactUrl}`);
  if (record.manifestUrl) printLine(`  manifest:           ${record.manifestUrl}`);
  if (record.requiresPlatform) printLine(`  requires platform:  ${record.requiresPlatform}`);
  if (record.requiresSdk) printLine(`  requires SDK:       ${record.requiresSdk}`);
  printLine(`  changelog:          ${record.changelog ?? '(none)'}`);
  const { manifest } = record;
  if (!manifest) return;
  printLine('  manifest:');
  printLine(`    permissions:      ${manifest.permissions?.join(', ') || '(none)'}`);
  for (const type of manifest.publishes ?? []) {
    printLine(`    publishes:        ${type.eventKey} (schemaVersion ${type.schemaVersion})${type.description ? `: ${type.description}` : ''}`);
  }
  for (const entry of manifest.subscribes ?? []) {
    printLine(`    subscribes to:    ${entry.eventKey} (${entry.kind}${entry.path ? `, ${entry.path}` : ''})`);
  }
  for (const field of manifest.configuration ?? []) {
    printLine(`    configuration:    ${field.name} (${field.type}${field.required ? ', required' : ''})${field.description ? `: ${field.description}` : ''}`);
  }
}

function printDetail(detail: ExtensionDetail): void {
  printLine(`${detail.extensionKey}  ${detail.name}`);
  if (detail.description) printLine(`  description:  ${detail.description}`);
  printLine(`  category:     ${detail.category}`);
  printLine(`  latest:       ${detail.latestVersion ?? '(no versions)'}`);
  if (detail.compatibleVersion !== undefined) printLine(`  compatible:   ${detail.compatibleVersion ?? '(no version runs there)'}`);
  printLine(`  permissions:  ${detail.permissions.length > 0 ? detail.permissions.join(', ') : '(none)'}`);
  printLine('');
  printTable(
    [...detail.versions],
    [
      { header: 'VERSION', value: (entry) => entry.version },
      { header: 'DATE', value: (entry) => entry.releaseDate },
      { header: 'YANKED', value: (entry) => (entry.yanked ? 'yes' : 'no') },
    ],
    '(no versions published)',
  );
}

function describeAudit(record: AuditRecord): string {
  if (record.reason) return record.reason;
  if (record.changes) return Object.keys(record.changes).join(', ');
  return '';
}

interface ShowFlags {
  compatible?: boolean;
  platformVersion?: string;
  sdkVersion?: string;
  json?: boolean;
}

/** The versions to find a compatible version for: those given, else with --compatible the daemon's own (its health answer says them). */
async function compatibilityQuery(client: Client, flags: ShowFlags): Promise<{ platformVersion?: string; sdkVersion?: string }> {
  const given = {
    ...(flags.platformVersion === undefined ? {} : { platformVersion: flags.platformVersion }),
    ...(flags.sdkVersion === undefined ? {} : { sdkVersion: flags.sdkVersion }),
  };
  if (Object.keys(given).length > 0 || !flags.compatible) return given;
  const { data: health } = await client.call('getHealth');
  return { platformVersion: health.version, sdkVersion: health.sdkVersion };
}

/** Returns the `ext` command, for the command groups that live under it (`ext config`). */
export function registerExt(program: Command): Command {
  const ext = program.command('ext').description('browse the marketplace; publish, update and yank extensions (ADMIN)');

  withExample(
    withPaging(
      ext
        .command('list')
        .description('list the extensions of the marketplace, sorted by name')
        .option('--search <terms>', 'only extensions whose key, name or description contain every term')
        .option('--category <category>', 'only this category'),
      500,
    ),
    'platform ext list --search "deal" --category sales',
    'platform ext list --all --json',
  )
    .option('--json', 'print JSON')
    .action(async (flags: ListFlags, command: Command) => {
      const query = { search: flags.search, category: flags.category };
      const client = clientFor(command);
      const listing = await fetchListing((page) => client.call('listExtensions', { query: { ...query, ...page } }), flags, 500);
      if (flags.json) return printJson(listing.items);
      printTable(
        listing.items,
        [
          { header: 'KEY', value: (item) => item.extensionKey },
          { header: 'NAME', value: (item) => item.name },
          { header: 'CATEGORY', value: (item) => item.category },
          { header: 'LATEST', value: (item) => item.latestVersion },
          { header: 'AUTHOR', value: (item) => item.author },
        ],
        '(no extensions match)',
      );
      printPageHint(listing);
    });

  withExample(
    ext
      .command('show <key> [version]')
      .description('show an extension and its versions, or one version with its artifact URL and changelog'),
    'platform ext show weather',
    'platform ext show weather 1.2.0',
    'platform ext show weather --compatible',
  )
    .option('--compatible', 'also the highest version that runs on this daemon (its platform and SDK versions)')
    .option('--platform-version <version>', 'the highest version that runs on this platform version instead')
    .option('--sdk-version <version>', 'the highest version that runs with this plugin SDK version instead')
    .option('--json', 'print JSON')
    .action(async (key: string, version: string | undefined, flags: ShowFlags, command: Command) => {
      const client = clientFor(command);
      if (version !== undefined) {
        const { data: record } = await client.call('getVersion', { params: { key, version } });
        if (flags.json) printJson(record);
        else printVersion(key, record);
        return;
      }
      const { data: detail } = await client.call('getExtension', { params: { key }, query: await compatibilityQuery(client, flags) });
      if (flags.json) printJson(detail);
      else printDetail(detail);
    });

  withExample(
    ext
      .command('publish [file]')
      .description(
        'publish a version, creating the extension first if it does not exist, updating its name, description, category or permissions if given and changed (fields from flags or FILE.json)',
      ),
    'platform ext publish --key weather --name Weather --version 1.0.0 --artifact-url https://example.com/weather-1.0.0.tgz',
    'platform ext publish weather-1.0.0.json',
  )
    .option('--key <key>', 'extension key (required: from the flag, FILE.json or a prompt)')
    .option('--name <name>', 'display name (required to create the extension; updated when it differs)')
    .option('--description <text>', 'short description (updated when it differs)')
    .option('--category <category>', 'category (updated when it differs)')
    .option('--permission <names...>', 'permissions such as crm.deals.read (the full list; updated when it differs)')
    .option('--version <version>', 'semantic version, e.g. 1.4.0 or 2.0.0-beta.1 (required)')
    .option('--artifact-url <url>', 'http(s) URL of the artifact (required)')
    .option('--manifest-url <url>', 'http(s) URL of the manifest')
    .option('--manifest <file>', 'the version’s manifest (JSON): permissions, events published with their schemas, subscriptions, configuration; its extensionKey and version fill --key and --version')
    .option('--requires-platform <version>', 'lowest platform version it runs on')
    .option('--requires-sdk <version>', 'lowest SDK version it needs')
    .option('--changelog <text>', 'release notes')
    .option('--json', 'print the published version record as JSON')
    .action(async (fileArgument: string | undefined, flags: PublishFlags, command: Command) => {
      const file = reclaimFile(fileArgument, flags);
      const fields = { ...(file ? await readPublishFile(file) : {}), ...fromFlags(flags) };
      if (flags.manifest !== undefined) {
        const manifest = await readJsonObjectFile(flags.manifest, 'manifest');
        fields.manifest = manifest;
        // The manifest names its extension and version; flags and the publish file win, and the daemon refuses a mismatch.
        if (typeof manifest.extensionKey === 'string') fields.extensionKey ??= manifest.extensionKey;
        if (typeof manifest.version === 'string') fields.version ??= manifest.version;
      }
      const client = clientFor(command);
      const { key, record, created } = await publish(client, fields);
      const updated = created ? [] : await updateChangedFields(client, key, fields);
      if (flags.json) return printJson(record);
      if (created) printLine(`created extension ${key}`);
      if (updated.length > 0) printLine(`updated ${updated.join(', ')} of ${key}`);
      printLine(`published ${key} ${record.version} (${record.releaseDate})`);
    });

  withExample(
    ext.command('update <key>').description("change an extension's name, description, category or permissions"),
    'platform ext update weather --category productivity',
  )
    .option('--name <name>', 'display name')
    .option('--description <text>', 'short description')
    .option('--category <category>', 'category')
    .option('--permission <names...>', 'the full list of permissions, replacing the current one')
    .option('--json', 'print the updated extension as JSON')
    .action(
      async (
        key: string,
        flags: { name?: string; description?: string; category?: string; permission?: string[]; json?: boolean },
        command: Command,
      ) => {
        const body = {
          name: flags.name,
          description: flags.description,
          category: flags.category,
          permissions: flags.permission,
        };
        if (Object.values(body).every((value) => value === undefined)) {
          throw usageError('nothing to update: pass --name, --description, --category or --permission');
        }
        const { data: detail } = await clientFor(command).call('updateExtension', { params: { key }, body });
        if (flags.json) printJson(detail);
        else printLine(`updated ${detail.extensionKey}`);
      },
    );

  withExample(
    withYes(
      ext
        .command('yank <key> <version>')
        .description('yank a version: it can no longer be newly installed; existing installations keep it')
        .option('--reason <text>', 'why; kept in the audit trail'),
    ),
    'platform ext yank weather 1.0.0 --reason "wrong artifact" --yes',
  )
    .action(async (key: string, version: string, flags: { reason?: string; yes?: boolean }, command: Command) => {
      await confirmOrStop(`Yank ${key} ${version}? New installations will refuse it.`, flags);
      await clientFor(command).call('yankVersion', { params: { key, version }, query: { reason: flags.reason } });
      printLine(`yanked ${key} ${version}`);
    });

  withExample(ext.command('unyank <key> <version>').description('make a yanked version installable again'), 'platform ext unyank weather 1.0.0')
    .action(async (key: string, version: string, _flags, command: Command) => {
      const { data: record } = await clientFor(command).call('unyankVersion', { params: { key, version } });
      printLine(`${key} ${record.version} is available`);
    });

  withExample(
    withPaging(ext.command('audit [key]').description('show the audit trail of catalog changes, newest first (ADMIN)'), 1000, 100_000),
    'platform ext audit weather --limit 10',
  )
    .option('--json', 'print JSON')
    .action(async (key: string | undefined, flags: PageFlags & { json?: boolean }, command: Command) => {
      const client = clientFor(command);
      const listing = await fetchListing((page) => client.call('listAuditRecords', { query: { extensionKey: key, ...page } }), flags, 1000);
      if (flags.json) return printJson(listing.items);
      printTable(
        listing.items,
        [
          { header: 'TIME', value: (record) => record.at },
          { header: 'ACTOR', value: (record) => record.actor.email },
          { header: 'ACTION', value: (record) => record.action },
          { header: 'EXTENSION', value: (record) => record.extensionKey },
          { header: 'VERSION', value: (record) => record.version },
          { header: 'DETAILS', value: describeAudit },
        ],
        '(no catalog changes recorded)',
      );
      printPageHint(listing);
    });

  withExample(
    ext.command('categories').description('list the categories in use, with their number of extensions'),
    'platform ext categories --json',
  )
    .option('--json', 'print JSON')
    .action(async (flags: { json?: boolean }, command: Command) => {
      const { data: categories } = await clientFor(command).call('listCategories');
      if (flags.json) return printJson(categories);
      printTable(
        categories,
        [
          { header: 'CATEGORY', value: (item) => item.category },
          { header: 'COUNT', value: (item) => item.count },
        ],
        '(no extensions yet)',
      );
    });

  return ext;
}
