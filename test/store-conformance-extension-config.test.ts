import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CatalogService } from '../src/daemon/catalog/service.js';
import { ExtensionConfigService } from '../src/daemon/extension-config/service.js';
import type { StoredField } from '../src/daemon/extension-config/store.js';
import { SecretBox } from '../src/daemon/secrets/box.js';
import { openWorkspaceServices } from '../src/daemon/workspaces/open.js';
import { conformance, rejection, type OpenedStores, using } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * The extension configuration store, held to one contract on both backends:
 * each case runs on a fresh data directory and on a fresh PostgreSQL schema.
 * The cases of several daemons run the configuration service on two sets of
 * stores sharing one schema.
 */

const AT = '2026-01-02T03:04:05.678Z';

const field = (name: string, value: StoredField['value'], type: StoredField['type'] = 'STRING'): StoredField => ({ name, type, value, updatedAt: AT });

/** What the service does for a PUT of one field: set it in place, or add it last. */
const setting = (set: StoredField) => (current: readonly StoredField[]) => {
  const index = current.findIndex((stored) => stored.name === set.name);
  return index < 0 ? [...current, set] : current.map((stored, at) => (at === index ? set : stored));
};


conformance('extension config: fields in the order first set, values of every type as given; unknown extensions have none', (site) =>
  using(site, async ({ stores: { extensionConfig } }) => {
    assert.equal(await extensionConfig.fields('crm'), []);
    const fields = [
      field('url', 'https://crm.example.test'),
      field('retries', 3, 'NUMBER'),
      field('ratio', -0.125, 'NUMBER'),
      field('big', 1e21, 'NUMBER'),
      field('verbose', false, 'BOOLEAN'),
      field('token', 'sealed:v1:opaque', 'SECRET'),
      field('unset', null),
      field('quoted', 'a "quoted" {value}, with \\ and\nnewline'),
    ];
    for (const set of fields) await extensionConfig.update('crm', setting(set));
    assert.equal(await extensionConfig.fields('crm'), fields);
    const replaced = field('retries', 5, 'NUMBER');
    assert.equal((await extensionConfig.update('crm', setting(replaced)))[1], replaced, 'set in its place');
    assert.equal((await extensionConfig.fields('crm')).map((stored) => stored.name), fields.map((stored) => stored.name));

    await extensionConfig.update('chat', setting(field('channel', 'general')));
    assert.equal(await extensionConfig.loadAll(), new Map([['crm', await extensionConfig.fields('crm')], ['chat', [field('channel', 'general')]]]));
  }),
);

conformance('extension config: update stores what the change returns, and nothing for null or a throw', (site) =>
  using(site, async ({ stores: { extensionConfig } }) => {
    await extensionConfig.update('crm', setting(field('a', 'one')));
    assert.equal(await extensionConfig.update('crm', () => null), [field('a', 'one')]);
    const refused = await rejection(
      extensionConfig.update('crm', () => {
        throw new Error('refused by the caller');
      }),
    );
    assert.is(refused.message, 'refused by the caller');
    assert.equal(await extensionConfig.update('crm', (current) => current.filter((stored) => stored.name !== 'a')), []);
    assert.equal(await extensionConfig.fields('crm'), []);
    assert.equal(await extensionConfig.update('nothing', () => null), [], 'null stores nothing for an extension never configured');
  }),
);

conformance('extension config: changes of one extension at once are applied one after the other, each seeing the one before', (site) =>
  using(site, async ({ stores: { extensionConfig } }) => {
    const names = Array.from({ length: 12 }, (_, n) => `field-${n}`);
    await Promise.all(names.map((name) => extensionConfig.update('busy', setting(field(name, name)))));
    assert.equal((await extensionConfig.fields('busy')).map((stored) => stored.name).sort(), [...names].sort(), 'no field lost');
  }),
);

conformance('extension config: what was acknowledged is there after a restart', async (site) => {
  const before = await using(site, async ({ stores: { extensionConfig } }) => {
    await extensionConfig.update('crm', setting(field('kept', 'yes')));
    await extensionConfig.update('crm', setting(field('secret', 'sealed:v1:x', 'SECRET')));
    await extensionConfig.update('crm', (current) => current.filter((stored) => stored.name !== 'kept'));
    return extensionConfig.loadAll();
  });
  await using(site, async ({ stores: { extensionConfig } }) => {
    assert.equal(await extensionConfig.loadAll(), before);
  });
});

// The service on the stores, as the daemon builds it.

/** The master key every daemon of a platform shares. */
const BOX = SecretBox.fromKeys([randomBytes(32)]);
const ACTOR = { id: 'admin', email: 'admin@example.test', fullName: 'Admin' };
const PLAIN_SECRET = 'plain-webhook-secret-4711';

async function configOf(opened: OpenedStores): Promise<ExtensionConfigService> {
  const catalog = await CatalogService.open(opened.stores.catalog, { fullNameOf: () => undefined });
  const { workspaces } = await openWorkspaceServices(opened.stores.workspaces, {
    catalog,
    handlers: { declares: () => true },
    box: BOX,
    users: opened.stores.users,
    denyPrivateTargets: false,
    configuredNames: () => [],
    configurationOf: () => ({}),
  });
  return ExtensionConfigService.open(opened.stores.extensionConfig, { catalog, box: BOX, workspaces });
}

/** A catalog extension `github` and a workspace `acme` on a site. */
async function seed(opened: OpenedStores): Promise<void> {
  const catalog = await CatalogService.open(opened.stores.catalog, { fullNameOf: () => undefined });
  await catalog.create(ACTOR, { extensionKey: 'github', name: 'GitHub' });
  await opened.stores.workspaces.createWorkspace({ id: 'acme', name: 'Acme', members: [], createdAt: AT });
}

conformance('extension config: a SECRET is stored sealed by the master key, never in clear, and opens for handlers', (site) =>
  using(site, async (opened) => {
    await seed(opened);
    const config = await configOf(opened);
    await config.update('github', [
      { name: 'webhook.scheme', type: 'STRING', value: 'github' },
      { name: 'webhook.secret', type: 'SECRET', value: PLAIN_SECRET },
    ]);
    const stored = (await opened.stores.extensionConfig.fields('github')).find((candidate) => candidate.name === 'webhook.secret')!;
    assert.ok(SecretBox.isSealed(stored.value), 'sealed');
    assert.not.match(JSON.stringify(await opened.stores.extensionConfig.loadAll()), PLAIN_SECRET);
    assert.is(BOX.open(stored.value as string), PLAIN_SECRET);
    if (opened.database) {
      const { rows } = await opened.database.query<{ all: string }>('SELECT string_agg(value::text, \' \') AS all FROM extension_config');
      assert.not.match(rows[0]!.all, PLAIN_SECRET, 'the column holds the sealed value');
    }
    assert.is(config.values('github')['webhook.secret'], PLAIN_SECRET);
    assert.equal((await config.view('github')).fields[1], { name: 'webhook.secret', type: 'SECRET', value: '********', set: true });

    // Sent as null it keeps the stored one.
    await config.update('github', [{ name: 'webhook.secret', type: 'SECRET', value: null }]);
    assert.is(config.webhookSettings('github')!.secret, PLAIN_SECRET);
  }),
);

conformance(
  'several daemons: changes of one extension made at once on both are all kept',
  async (site) => {
    const opened = [await site.open(), await site.open()];
    try {
      await seed(opened[0]!);
      const [first, second] = [await configOf(opened[0]!), await configOf(opened[1]!)];
      for (let round = 0; round < 6; round += 1) {
        await Promise.all([
          first.update('github', [{ name: `first-${round}`, type: 'NUMBER', value: round }]),
          second.update('github', [{ name: `second-${round}`, type: 'NUMBER', value: round }]),
        ]);
      }
      const names = (await second.view('github')).fields.map((stored) => stored.name);
      assert.is(names.length, 12, names.join(', '));
    } finally {
      for (const one of opened) await one.close();
    }
  },
  { shared: true },
);

conformance(
  'several daemons: a change on one is in the next answer of the other, and reaches its handlers and webhook endpoint',
  async (site) => {
    const opened = [await site.open(), await site.open()];
    try {
      await seed(opened[0]!);
      const [first, second] = [await configOf(opened[0]!), await configOf(opened[1]!)];
      await Promise.all(opened.map((one) => one.listen()));
      await first.update('github', [
        { name: 'webhook.scheme', type: 'STRING', value: 'github' },
        { name: 'webhook.secret', type: 'SECRET', value: PLAIN_SECRET },
        { name: 'webhook.workspaceId', type: 'STRING', value: 'acme' },
      ]);
      assert.is((await second.view('github')).fields.length, 3, 'the admin API reads the store');
      await waitFor('the webhook settings on the other daemon', () => second.webhookSettings('github')?.secret === PLAIN_SECRET);
      assert.is(second.values('github')['webhook.workspaceId'], 'acme');

      await first.update('github', [{ name: 'webhook.secret', type: 'SECRET', value: 'rotated-secret' }]);
      await waitFor('the new secret on the other daemon', () => second.webhookSettings('github')?.secret === 'rotated-secret');
      await second.remove('github', 'webhook.scheme');
      await waitFor('the removal on the first daemon', () => first.webhookSettings('github') === null);
      assert.is((await rejection(first.remove('github', 'webhook.scheme'))).code, 'NOT_FOUND', 'the store has it removed already');
    } finally {
      for (const one of opened) await one.close();
    }
  },
  { shared: true },
);

test.run();
