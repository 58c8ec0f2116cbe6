import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UserNames } from '../src/daemon/auth/names.js';
import { CatalogService } from '../src/daemon/catalog/service.js';
import type { AuditRecord, StoredExtension, StoredVersion } from '../src/daemon/catalog/types.js';
import { newestFirst, samePrecedence } from '../src/daemon/catalog/versions.js';
import { conformance, rejection, type OpenedStores, using, usingTwo } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * The catalog store, held to one contract on both backends: each case runs on
 * a fresh data directory and on a fresh PostgreSQL schema.
 */

const ACTOR = { id: 'user-1', email: 'admin@example.test' };

const extension = (extensionKey: string, versions: StoredVersion[] = []): StoredExtension => ({
  extensionKey,
  name: `The ${extensionKey}`,
  description: '',
  category: 'other',
  permissions: [`${extensionKey}.items.read`],
  createdBy: ACTOR.id,
  authorName: 'Admin',
  createdAt: '2026-01-02T03:04:05.678Z',
  updatedAt: '2026-01-02T03:04:05.678Z',
  versions,
});

const version = (number: string, yanked = false): StoredVersion => ({
  version: number,
  releaseDate: '2026-01-02',
  yanked,
  artifactUrl: `https://artifacts.example.test/${number}.jar`,
  manifest: null,
  manifestUrl: null,
  requiresPlatform: number.startsWith('2') ? '>=1.0.0' : null,
  requiresSdk: null,
  changelog: null,
  publishedAt: '2026-01-02T12:00:00.000Z',
});

const record = (action: AuditRecord['action'], extensionKey: string, details: Partial<AuditRecord> = {}): AuditRecord => ({
  id: randomUUID(),
  at: new Date().toISOString(),
  actor: ACTOR,
  action,
  extensionKey,
  ...details,
});

/** The catalog's own publish check, as CatalogService makes it inside update. */
const publishing = (number: string) => (current: StoredExtension) => {
  if (current.versions.some((published) => samePrecedence(published.version, number))) throw new Error(`${number} clashes`);
  return {
    next: { ...current, versions: [...current.versions, version(number)].sort((a, b) => newestFirst(a.version, b.version)) },
    record: record('publish', current.extensionKey, { version: number }),
  };
};


conformance('catalog: a created extension is read back as it was given, and a key is created once, even at once', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    const weather = extension('weather');
    await catalog.create(weather, record('create', 'weather', { changes: { name: { from: null, to: weather.name } } }));
    assert.equal(await catalog.get('weather'), weather);
    assert.is(await catalog.get('nothing'), undefined);
    const again = await rejection(catalog.create(extension('weather'), record('create', 'weather')));
    assert.is(again.code, 'CONFLICT');
    assert.is(again.message, 'extension weather already exists');

    const racing = await Promise.allSettled([1, 2, 3, 4].map(() => catalog.create(extension('radar'), record('create', 'radar'))));
    assert.is(racing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
    assert.equal((await catalog.loadAll()).map((stored) => stored.extensionKey).sort(), ['radar', 'weather']);
    assert.is((await catalog.auditTrail({ limit: 100 })).length, 2, 'one audit record per stored change');
  }),
);

conformance('catalog: update stores what the change returns, and nothing for null, a throw, or an unknown key', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    await catalog.create(extension('crm'), record('create', 'crm'));
    const renamed = await catalog.update('crm', (current) => ({
      next: { ...current, name: 'CRM', permissions: ['crm.deals.write', 'crm.deals.read'], updatedAt: '2026-02-03T04:05:06.789Z' },
      record: record('update', 'crm', { changes: { name: { from: current.name, to: 'CRM' } } }),
    }));
    assert.is(renamed.name, 'CRM');
    assert.equal(await catalog.get('crm'), renamed);
    assert.equal((await catalog.get('crm'))!.permissions, ['crm.deals.write', 'crm.deals.read'], 'permissions keep their order');

    assert.equal(await catalog.update('crm', () => null), renamed);
    const refused = await rejection(
      catalog.update('crm', (current) => {
        current.name = 'mutated, then refused';
        throw new Error('refused');
      }),
    );
    assert.is(refused.message, 'refused');
    assert.equal(await catalog.get('crm'), renamed);
    assert.is((await rejection(catalog.update('nothing', () => null))).code, 'NOT_FOUND');
    assert.is((await catalog.auditTrail({ limit: 100 })).length, 2, 'create and the one update');
  }),
);

conformance('catalog: versions come back newest first by semver precedence, with their fields, yanked or not', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    await catalog.create(extension('tools'), record('create', 'tools'));
    for (const number of ['1.9.0', '1.10.0', '1.10.0-beta.2', '2.0.0+build.7', '1.0.0']) await catalog.update('tools', publishing(number));
    await catalog.update('tools', (current) => ({
      next: { ...current, versions: current.versions.map((stored) => (stored.version === '1.9.0' ? { ...stored, yanked: true } : stored)) },
      record: record('yank', 'tools', { version: '1.9.0', reason: 'broken' }),
    }));
    const stored = (await catalog.get('tools'))!;
    assert.equal(
      stored.versions.map((entry) => (entry.yanked ? `${entry.version} yanked` : entry.version)),
      ['2.0.0+build.7', '1.10.0', '1.10.0-beta.2', '1.9.0 yanked', '1.0.0'],
    );
    assert.equal(stored.versions[0], version('2.0.0+build.7'));
  }),
);

conformance('catalog: a version’s manifest comes back as it was published, its keys in their order', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    const manifest = {
      version: '1.0.0',
      manifestVersion: 1 as const,
      extensionKey: 'tools',
      publishes: [{ schemaVersion: '1', eventKey: 'tools.done', schema: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } }],
    };
    await catalog.create(extension('tools', [{ ...version('1.0.0'), manifest }]), record('create', 'tools'));
    const stored = (await catalog.get('tools'))!.versions[0]!;
    assert.is(JSON.stringify(stored.manifest), JSON.stringify(manifest));
    await catalog.update('tools', publishing('1.1.0'));
    assert.is((await catalog.get('tools'))!.versions[0]!.manifest, null);
  }),
);

conformance('catalog: changes of one extension at once are applied one after the other, each seeing the one before', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    await catalog.create(extension('busy'), record('create', 'busy'));
    const numbers = Array.from({ length: 12 }, (_, n) => `1.${n}.0`);
    // Each change also appends to the description: a change made on a stale copy would drop another's mark.
    await Promise.all(
      numbers.map((number) =>
        catalog.update('busy', (current) => {
          const published = publishing(number)(current);
          return { ...published, next: { ...published.next, description: `${current.description}[${number}]` } };
        }),
      ),
    );
    const busy = (await catalog.get('busy'))!;
    assert.equal(busy.versions.map((entry) => entry.version).sort(), [...numbers].sort(), 'no version lost');
    assert.equal(busy.description.match(/\[[^\]]+\]/g)!.sort(), numbers.map((number) => `[${number}]`).sort(), 'no change lost');

    // Versions of equal precedence: the check inside update sees the other's change, so one of them wins.
    const clashing = await Promise.allSettled(['3.0.0+a', '3.0.0+b', '3.0.0+c'].map((number) => catalog.update('busy', publishing(number))));
    assert.is(clashing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
  }),
);

conformance('catalog: the audit trail is newest first, by extension, in pages, and as it was recorded', (site) =>
  using(site, async ({ stores: { catalog } }) => {
    const written: AuditRecord[] = [];
    for (const key of ['alpha', 'beta']) {
      const created = record('create', key, { changes: { name: { from: null, to: `The ${key}` }, permissions: { from: null, to: [`${key}.items.read`] } } });
      await catalog.create(extension(key), created);
      written.push(created);
    }
    for (const number of ['1.0.0', '1.1.0']) {
      const published = await catalog.update('alpha', publishing(number));
      written.push(record('publish', 'alpha', { version: number }));
      assert.ok(published);
    }
    const trail = await catalog.auditTrail({ limit: 10 });
    assert.equal(
      trail.map((entry) => `${entry.action} ${entry.extensionKey}${entry.version ? ` ${entry.version}` : ''}`),
      ['publish alpha 1.1.0', 'publish alpha 1.0.0', 'create beta', 'create alpha'],
    );
    assert.equal(trail[3], written[0], 'a record reads back as it was given, without the fields it lacks');
    assert.equal(Object.keys(trail[3]!.changes!), ['name', 'permissions'], 'changes keep their order');
    assert.not.ok('reason' in trail[0]!);
    assert.equal((await catalog.auditTrail({ extensionKey: 'alpha', limit: 10 })).map((entry) => entry.action), ['publish', 'publish', 'create']);
    assert.equal((await catalog.auditTrail({ extensionKey: 'alpha', limit: 1, offset: 1 })).map((entry) => entry.version), ['1.0.0']);
    assert.equal(await catalog.auditTrail({ extensionKey: 'nothing', limit: 10 }), []);
  }),
);

conformance('catalog: what was acknowledged is there after a restart', async (site) => {
  const before = await using(site, async ({ stores: { catalog } }) => {
    await catalog.create(extension('kept'), record('create', 'kept'));
    await catalog.update('kept', publishing('1.0.0'));
    return { extensions: await catalog.loadAll(), trail: await catalog.auditTrail({ limit: 10 }) };
  });
  await using(site, async ({ stores: { catalog } }) => {
    assert.equal(await catalog.loadAll(), before.extensions);
    assert.equal(await catalog.auditTrail({ limit: 10 }), before.trail);
  });
});

/** One daemon's catalog as the daemon builds it: the service on its stores, with the author names. */
async function catalogOf(opened: OpenedStores): Promise<CatalogService> {
  const names = await UserNames.load(opened.stores.users);
  return CatalogService.open(opened.stores.catalog, { fullNameOf: (id) => names.fullNameOf(id) });
}

conformance(
  'several daemons: a catalog change on one reaches search, detail and the author names on the other',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      const author = await one.stores.users.insert({ email: 'author@example.test', fullName: 'Author', roles: ['ADMIN'], passwordHash: 'x' });
      const [first, second] = [await catalogOf(one), await catalogOf(two)];
      await one.listen();
      const actor = { id: author.id, email: author.email, fullName: author.fullName };

      await first.create(actor, { extensionKey: 'lighthouse', name: 'Lighthouse', description: 'audits pages' });
      assert.is(first.browse({ search: 'light', limit: 10, offset: 0 }).total, 1, 'at once on the daemon that made it');
      // The other daemon is not listening yet, so it has not heard of the extension: changes go to the store all the same.
      assert.not.ok(second.has('lighthouse'));
      await second.publishVersion(actor, 'lighthouse', { version: '1.2.0', artifactUrl: 'https://artifacts.example.test/l.jar' });
      assert.is(second.detail('lighthouse').latestVersion, '1.2.0', 'read back on the daemon that published');
      assert.is(second.browse({ search: 'audits', limit: 10, offset: 0 }).total, 1);
      await two.listen();
      await waitFor('the version on the first daemon', () => first.detail('lighthouse').latestVersion === '1.2.0');
      await first.update(actor, 'lighthouse', { name: 'Beacon' });
      await waitFor('the new name searchable on the other daemon', () => second.browse({ search: 'beacon', limit: 10, offset: 0 }).total === 1);
      assert.is(second.browse({ search: 'lighthouse', limit: 10, offset: 0 }).total, 1, 'the key still matches');

      // A conflicting publish on the other daemon is refused there: the check runs in the store.
      const clash = await rejection(second.publishVersion(actor, 'lighthouse', { version: '1.2.0+other', artifactUrl: 'https://a.example.test/x.jar' }));
      assert.is(clash.code, 'CONFLICT');

      await one.stores.users.modify(author.id, (record) => (record.fullName = 'Renamed Author'));
      await waitFor('the author renamed on the other daemon', () => second.browse({ limit: 10, offset: 0 }).items[0]?.author === 'Renamed Author');
    });
  },
  { shared: true },
);

conformance(
  'several daemons: a change made while the other lost its feed connection reaches it once it is back',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      const actor = { id: 'someone', email: 'someone@example.test', fullName: 'Someone' };
      const [first, second] = [await catalogOf(one), await catalogOf(two)];
      await Promise.all([one.listen(), two.listen()]);
      await first.create(actor, { extensionKey: 'before', name: 'Before' });
      await waitFor('the first change heard', () => second.has('before'));

      // Every LISTEN connection is cut; the feeds connect again a second later.
      await one.database!.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`);
      await first.create(actor, { extensionKey: 'meanwhile', name: 'Made while nobody listened' });
      await waitFor('the change made meanwhile found on the other daemon', () => second.browse({ search: 'nobody', limit: 10, offset: 0 }).total === 1);
      assert.ok(two.feedErrors.length > 0, 'the other daemon did lose its connection');
    });
  },
  { shared: true },
);

test.run();
