import { randomBytes, randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CatalogService } from '../src/daemon/catalog/service.js';
import { SecretBox } from '../src/daemon/secrets/box.js';
import { openWorkspaceServices, type WorkspaceServices } from '../src/daemon/workspaces/open.js';
import type { InstallationChange } from '../src/daemon/workspaces/store.js';
import type { StoredInstallation, StoredSubscription, Workspace } from '../src/daemon/workspaces/types.js';
import { conformance, rejection, type OpenedStores, type StoreSite, using } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * The workspace store (workspaces, members, installations, subscriptions),
 * held to one contract on both backends: each case runs on a fresh data
 * directory and on a fresh PostgreSQL schema. The cases of several daemons
 * run the workspace service on two sets of stores sharing one schema.
 */

const AT = '2026-01-02T03:04:05.678Z';

const workspace = (id: string): Workspace => ({ id, name: `The ${id}`, members: [], createdAt: AT });

const installation = (workspaceId: string, extensionKey: string, version = '1.0.0'): StoredInstallation => ({
  workspaceId,
  extensionKey,
  version,
  enabled: true,
  installedAt: AT,
  grantedPermissions: [],
});

/** An installation's change that wires nothing. */
const only = (next: StoredInstallation): InstallationChange => ({ installation: next, subscribe: [], update: [], unsubscribe: [] });

const subscription = (workspaceId: string, eventKey: string, extensionKey: string, url: string | null = 'https://hooks.example.test/a'): StoredSubscription => ({
  id: randomUUID(),
  workspaceId,
  eventKey,
  extensionKey,
  kind: url === null ? 'IN_PROCESS' : 'EXTERNAL_SERVICE',
  serviceBaseUrl: url,
  createdAt: AT,
  enabled: true,
  disabledReason: null,
  sealedSigningSecret: `sealed-${randomUUID()}`,
});

/** The service's rule, as it passes it to subscribe. */
const sameSubscriber = (mine: StoredSubscription) => (other: StoredSubscription) =>
  other.extensionKey === mine.extensionKey && other.kind === mine.kind && other.serviceBaseUrl === mine.serviceBaseUrl;


/** A user the shared store knows (PostgreSQL's members refer to users). */
const aUser = (opened: OpenedStores, name: string) =>
  opened.stores.users.insert({ email: `${name}@example.test`, fullName: name, roles: ['USER'], passwordHash: 'x' });

conformance('workspaces: created ones are read back and listed in the order of creation; an id is taken once, even at once', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    await workspaces.createWorkspace(workspace('beta'));
    await workspaces.createWorkspace(workspace('alpha'));
    assert.equal(await workspaces.getWorkspace('beta'), workspace('beta'));
    assert.is(await workspaces.getWorkspace('nothing'), undefined);
    assert.is(await workspaces.hasWorkspace('alpha'), true);
    assert.is(await workspaces.hasWorkspace('nothing'), false);
    assert.equal((await workspaces.listWorkspaces()).map((stored) => stored.id), ['beta', 'alpha']);
    const again = await rejection(workspaces.createWorkspace(workspace('beta')));
    assert.is(again.code, 'CONFLICT');
    assert.is(again.message, 'workspace beta already exists');

    const racing = await Promise.allSettled([1, 2, 3, 4].map(() => workspaces.createWorkspace(workspace('gamma'))));
    assert.is(racing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
    assert.is((await workspaces.listWorkspaces()).length, 3);
    assert.equal(await workspaces.renameWorkspace('gamma', 'Gamma'), { ...workspace('gamma'), name: 'Gamma' });
    assert.is((await rejection(workspaces.renameWorkspace('nothing', 'x'))).code, 'NOT_FOUND');
  }),
);

conformance('workspaces: members in the order they were added, once each; a deleted user leaves every workspace', (site) =>
  using(site, async (opened) => {
    const { workspaces } = opened.stores;
    const [ann, bob] = [await aUser(opened, 'ann'), await aUser(opened, 'bob')];
    await workspaces.createWorkspace(workspace('acme'));
    await workspaces.createWorkspace(workspace('other'));
    await workspaces.addMember('acme', bob.id);
    await workspaces.addMember('acme', ann.id);
    assert.equal((await workspaces.addMember('acme', bob.id)).members, [bob.id, ann.id], 'a member is added once');
    await workspaces.addMember('other', bob.id);
    assert.is(await workspaces.isMember('acme', ann.id), true);
    assert.is(await workspaces.isMember('acme', 'someone-else'), false);
    assert.is(await workspaces.isMember('nothing', ann.id), false);
    assert.equal((await workspaces.listWorkspaces(ann.id)).map((stored) => stored.id), ['acme']);
    assert.equal((await workspaces.listWorkspaces(bob.id)).map((stored) => stored.id), ['acme', 'other']);

    await workspaces.removeMember('acme', ann.id);
    await workspaces.removeMember('acme', ann.id);
    assert.equal((await workspaces.getWorkspace('acme'))!.members, [bob.id]);
    await workspaces.removeMemberEverywhere(bob.id);
    assert.equal((await workspaces.listWorkspaces(bob.id)), []);
    assert.equal((await workspaces.getWorkspace('other'))!.members, []);
    for (const refused of [workspaces.addMember('nothing', ann.id), workspaces.removeMember('nothing', ann.id)]) {
      assert.is((await rejection(refused)).code, 'NOT_FOUND');
    }
  }),
);

conformance('installations: one per extension and workspace, even when installed at once; changes read-modify-write', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    await workspaces.createWorkspace(workspace('acme'));
    await workspaces.install(installation('acme', 'crm'));
    assert.equal(await workspaces.getInstallation('acme', 'crm'), installation('acme', 'crm'));
    assert.is(await workspaces.getInstallation('acme', 'nothing'), undefined);
    const again = await rejection(workspaces.install(installation('acme', 'crm', '2.0.0')));
    assert.is(again.code, 'CONFLICT');
    assert.is(again.message, 'crm is already installed in acme');

    const racing = await Promise.allSettled(['1.0.0', '1.1.0', '1.2.0'].map((version) => workspaces.install(installation('acme', 'chat', version))));
    assert.is(racing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
    assert.equal((await workspaces.listInstallations('acme')).map((stored) => stored.extensionKey), ['crm', 'chat']);
    assert.is((await rejection(workspaces.install(installation('nothing', 'crm')))).code, 'NOT_FOUND');

    const moved = await workspaces.updateInstallation('acme', 'crm', (current) => only({ ...current, version: '1.5.0', enabled: false }));
    assert.equal(moved, { ...installation('acme', 'crm'), version: '1.5.0', enabled: false });
    assert.equal(await workspaces.getInstallation('acme', 'crm'), moved);
    assert.equal(await workspaces.updateInstallation('acme', 'crm', () => null), moved);
    const refused = await rejection(
      workspaces.updateInstallation('acme', 'crm', () => {
        throw new Error('refused by the caller');
      }),
    );
    assert.is(refused.message, 'refused by the caller');
    assert.equal(await workspaces.getInstallation('acme', 'crm'), moved);
    assert.is((await rejection(workspaces.updateInstallation('acme', 'nothing', () => null))).code, 'NOT_FOUND');

    await workspaces.uninstall('acme', 'crm');
    assert.is(await workspaces.getInstallation('acme', 'crm'), undefined);
    const gone = await rejection(workspaces.uninstall('acme', 'crm'));
    assert.is(gone.code, 'NOT_FOUND');
    assert.is(gone.message, 'installation of crm in acme not found');
  }),
);

conformance('an installation is stored with the subscriptions its manifest wires, and its change rewires them, all or nothing', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    await workspaces.createWorkspace(workspace('acme'));
    const deals = { ...subscription('acme', 'crm.deal.closed', 'crm'), deliveryPath: '/hooks/deals' };
    const notes = subscription('acme', 'platform.notification', 'crm');
    await workspaces.install({ ...installation('acme', 'crm'), grantedPermissions: ['crm.read'] }, [deals, notes]);
    assert.equal((await workspaces.getInstallation('acme', 'crm'))?.grantedPermissions, ['crm.read']);
    assert.equal(await workspaces.listSubscriptions('acme'), [deals, notes], 'stored with their delivery path');
    assert.is((await rejection(workspaces.install(installation('acme', 'crm'), [subscription('acme', 'x.y', 'crm')]))).code, 'CONFLICT');
    assert.is((await workspaces.listSubscriptions('acme')).length, 2, 'a refused install stores none of its subscriptions');

    const added = subscription('acme', 'crm.product.created', 'crm');
    const moved = { ...deals, deliveryPath: '/hooks/v2' };
    let seen: readonly StoredSubscription[] = [];
    await workspaces.updateInstallation('acme', 'crm', (current, own) => {
      seen = own;
      return { installation: { ...current, version: '2.0.0', grantedPermissions: [] }, subscribe: [added], update: [moved], unsubscribe: [notes.id] };
    });
    assert.equal(seen, [deals, notes], 'the change sees the extension’s subscriptions');
    assert.equal(await workspaces.getInstallation('acme', 'crm'), { ...installation('acme', 'crm'), version: '2.0.0' });
    assert.equal(await workspaces.listSubscriptions('acme'), [moved, added]);

    const refused = await rejection(
      workspaces.updateInstallation('acme', 'crm', (current) => {
        throw new Error(`no change of ${current.extensionKey}`);
      }),
    );
    assert.is(refused.message, 'no change of crm');
    assert.equal(await workspaces.listSubscriptions('acme'), [moved, added]);
  }),
);

conformance('subscriptions: stored as given, a duplicate refused even when subscribed at once, active ones by topic', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    await workspaces.createWorkspace(workspace('acme'));
    await workspaces.install(installation('acme', 'crm'));
    const first = {
      ...subscription('acme', 'deal.closed', 'crm'),
      serviceBaseUrl: 'https://****@hooks.example.test/a',
      sealedServiceBaseUrl: 'sealed-url',
      sealedPreviousSigningSecret: 'sealed-previous',
      previousSecretUntil: 1_767_323_045_678,
      failingSince: 1_767_323_000_000,
    };
    await workspaces.subscribe(first, sameSubscriber(first));
    assert.equal(await workspaces.getSubscription('acme', first.id), first);
    assert.is(await workspaces.getSubscription('other', first.id), undefined, 'only in its own workspace');

    const duplicate = { ...first, id: randomUUID() };
    const refused = await rejection(workspaces.subscribe(duplicate, sameSubscriber(duplicate)));
    assert.is(refused.code, 'CONFLICT');
    assert.is(refused.message, 'crm is already subscribed to deal.closed in acme');
    const racing = await Promise.allSettled(
      [1, 2, 3, 4].map(() => {
        const candidate = subscription('acme', 'deal.lost', 'crm', 'https://hooks.example.test/b');
        return workspaces.subscribe(candidate, sameSubscriber(candidate));
      }),
    );
    assert.is(racing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
    const [, raced] = await workspaces.listSubscriptions('acme');

    const inProcess = subscription('acme', 'deal.closed', 'crm', null);
    const notInstalled = subscription('acme', 'deal.closed', 'chat');
    const disabled = { ...subscription('acme', 'deal.closed', 'crm', 'https://hooks.example.test/c'), enabled: false, disabledReason: 'disabled by an administrator' };
    for (const added of [inProcess, notInstalled, disabled]) await workspaces.subscribe(added, sameSubscriber(added));
    assert.is((await rejection(workspaces.subscribe(subscription('nothing', 'a.b', 'crm'), () => false))).code, 'NOT_FOUND');

    assert.equal((await workspaces.listSubscriptions('acme')).map((stored) => stored.id), [first.id, raced!.id, inProcess.id, notInstalled.id, disabled.id]);
    assert.equal((await workspaces.activeSubscriptions('acme', 'deal.closed')).map((stored) => stored.id), [first.id, inProcess.id]);
    await workspaces.updateInstallation('acme', 'crm', (current) => only({ ...current, enabled: false }));
    assert.equal(await workspaces.activeSubscriptions('acme', 'deal.closed'), [], 'none while the extension is disabled');
    assert.equal(await workspaces.activeSubscriptions('acme', 'nothing'), []);
  }),
);

conformance('workspaces and subscriptions: many lookups at once each get the answer for their own workspace and topic', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    for (const id of ['north', 'south']) {
      await workspaces.createWorkspace(workspace(id));
      await workspaces.install(installation(id, 'crm'));
    }
    const added = [subscription('north', 'deal.closed', 'crm'), subscription('north', 'deal.lost', 'crm'), subscription('south', 'deal.closed', 'crm'), subscription('north', 'deal.closed', 'crm', null)];
    for (const each of added) await workspaces.subscribe(each, sameSubscriber(each));
    const topics: Array<[string, string]> = [
      ['north', 'deal.closed'],
      ['south', 'deal.closed'],
      ['north', 'deal.lost'],
      ['south', 'deal.lost'],
      ['east', 'deal.closed'],
      ['north', 'deal.closed'],
    ];
    const [exists, active] = await Promise.all([
      Promise.all(['north', 'east', 'south', 'north'].map((id) => workspaces.hasWorkspace(id))),
      Promise.all(topics.map(([id, eventKey]) => workspaces.activeSubscriptions(id, eventKey))),
    ]);
    assert.equal(exists, [true, false, true, true]);
    const [northClosed, northLost, southClosed, inProcess] = added.map((each) => each.id);
    assert.equal(
      active.map((list) => list.map((stored) => stored.id)),
      [[northClosed, inProcess], [southClosed], [northLost], [], [], [northClosed, inProcess]],
    );
  }),
);

conformance('subscriptions: changes of one at once are applied one after the other, each seeing the one before', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    await workspaces.createWorkspace(workspace('acme'));
    const busy = subscription('acme', 'deal.closed', 'crm');
    await workspaces.subscribe(busy, sameSubscriber(busy));
    const marks = Array.from({ length: 12 }, (_, n) => `[${n}]`);
    // Each change appends its mark: a change made on a stale copy would drop another's.
    await Promise.all(
      marks.map((mark) =>
        workspaces.updateSubscription('acme', busy.id, (current) => ({ ...current, disabledReason: `${current.disabledReason ?? ''}${mark}` })),
      ),
    );
    const stored = (await workspaces.getSubscription('acme', busy.id))!;
    assert.equal(stored.disabledReason!.match(/\[\d+\]/g)!.sort(), [...marks].sort());

    const { failingSince: _none, ...withoutStreak } = await workspaces.updateSubscription('acme', busy.id, (current) => ({
      ...current,
      failingSince: 1_000,
      sealedSigningSecret: 'rotated',
    }));
    assert.equal((await workspaces.getSubscription('acme', busy.id))!.failingSince, 1_000);
    await workspaces.updateSubscription('acme', busy.id, () => withoutStreak);
    assert.not.ok('failingSince' in (await workspaces.getSubscription('acme', busy.id))!, 'a field left out is removed');
    assert.is((await rejection(workspaces.updateSubscription('other', busy.id, () => null))).code, 'NOT_FOUND');

    await workspaces.unsubscribe('acme', busy.id);
    assert.equal(await workspaces.listSubscriptions('acme'), []);
    const gone = await rejection(workspaces.unsubscribe('acme', busy.id));
    assert.is(gone.message, `subscription ${busy.id} not found in acme`);
  }),
);

conformance('workspaces: deleted only with force while extensions are installed, then with everything in them', (site) =>
  using(site, async (opened) => {
    const { workspaces } = opened.stores;
    const member = await aUser(opened, 'member');
    for (const id of ['acme', 'other']) {
      await workspaces.createWorkspace(workspace(id));
      await workspaces.addMember(id, member.id);
      await workspaces.install(installation(id, 'crm'));
      await workspaces.install(installation(id, 'chat'));
      const added = subscription(id, 'deal.closed', 'crm');
      await workspaces.subscribe(added, sameSubscriber(added));
    }
    const refused = await rejection(workspaces.deleteWorkspace('acme', false));
    assert.is(refused.code, 'CONFLICT');
    assert.is(refused.message, 'workspace acme has 2 installed extensions (crm, chat); uninstall them first, or delete with force');
    assert.ok(await workspaces.hasWorkspace('acme'));

    await workspaces.deleteWorkspace('acme', true);
    assert.is(await workspaces.getWorkspace('acme'), undefined);
    assert.equal(await workspaces.listInstallations('acme'), []);
    assert.equal(await workspaces.listSubscriptions('acme'), []);
    assert.equal((await workspaces.listWorkspaces(member.id)).map((stored) => stored.id), ['other']);
    const everything = await workspaces.contents(null);
    assert.equal([...new Set(everything.installations.map((stored) => stored.workspaceId))], ['other']);
    assert.equal(everything.subscriptions.map((stored) => stored.workspaceId), ['other']);
    assert.equal(await workspaces.contents('other'), everything);
    assert.is((await rejection(workspaces.deleteWorkspace('acme', true))).code, 'NOT_FOUND');

    await workspaces.uninstall('other', 'crm');
    await workspaces.uninstall('other', 'chat');
    await workspaces.deleteWorkspace('other', false);
    assert.equal(await workspaces.listWorkspaces(), []);
  }),
);

conformance('workspaces: an installation acknowledged while the workspace is deleted without force is never deleted with it', (site) =>
  using(site, async ({ stores: { workspaces } }) => {
    for (let round = 0; round < 8; round += 1) {
      const id = `round-${round}`;
      await workspaces.createWorkspace(workspace(id));
      const [installed, deleted] = await Promise.allSettled([workspaces.install(installation(id, 'crm')), workspaces.deleteWorkspace(id, false)]);
      if (installed.status === 'fulfilled') {
        assert.is(deleted.status, 'rejected', `round ${round}: the deletion saw the installation`);
        assert.ok(await workspaces.getInstallation(id, 'crm'), `round ${round}`);
      } else {
        assert.is((installed.reason as { code: string }).code, 'NOT_FOUND', `round ${round}`);
        assert.is(deleted.status, 'fulfilled', `round ${round}`);
      }
    }
  }),
);

conformance('workspaces: what was acknowledged is there after a restart', async (site) => {
  const before = await using(site, async (opened) => {
    const { workspaces } = opened.stores;
    const member = await aUser(opened, 'kept');
    await workspaces.createWorkspace(workspace('kept'));
    await workspaces.addMember('kept', member.id);
    await workspaces.install(installation('kept', 'crm'));
    const added = subscription('kept', 'deal.closed', 'crm');
    await workspaces.subscribe(added, sameSubscriber(added));
    await workspaces.updateSubscription('kept', added.id, (current) => ({ ...current, failingSince: 5 }));
    await workspaces.createWorkspace(workspace('gone'));
    await workspaces.deleteWorkspace('gone', false);
    return { listed: await workspaces.listWorkspaces(), contents: await workspaces.contents(null) };
  });
  await using(site, async ({ stores: { workspaces } }) => {
    assert.equal(await workspaces.listWorkspaces(), before.listed);
    assert.equal(await workspaces.contents(null), before.contents);
  });
});

// Several daemons: the workspace service on each, as the daemon builds it.

/** The master key every daemon of a platform shares. */
const BOX = SecretBox.fromKeys([randomBytes(32)]);
const ACTOR = { id: 'admin', email: 'admin@example.test', fullName: 'Admin' };
const HOOK = 'https://hooks.example.test/crm';

async function serviceOf(opened: OpenedStores): Promise<WorkspaceServices> {
  const catalog = await CatalogService.open(opened.stores.catalog, { fullNameOf: () => undefined });
  return openWorkspaceServices(opened.stores.workspaces, {
    catalog,
    handlers: { declares: () => true },
    box: BOX,
    users: opened.stores.users,
    configuredNames: () => [],
    configurationOf: () => ({}),
    denyPrivateTargets: false,
  });
}

/** Two daemons on one schema, with a workspace `acme` and a catalog extension `crm` to install. */
async function twoDaemons(site: StoreSite, run: (first: WorkspaceServices, second: WorkspaceServices, opened: OpenedStores[]) => Promise<void>): Promise<void> {
  const opened = [await site.open(), await site.open()];
  try {
    const catalog = await CatalogService.open(opened[0]!.stores.catalog, { fullNameOf: () => undefined });
    await catalog.create(ACTOR, { extensionKey: 'crm', name: 'CRM' });
    await catalog.publishVersion(ACTOR, 'crm', { version: '1.0.0', artifactUrl: 'https://artifacts.example.test/crm.jar' });
    const [first, second] = [await serviceOf(opened[0]!), await serviceOf(opened[1]!)];
    await first.workspaces.create({ id: 'acme', name: 'Acme' });
    await run(first, second, opened);
  } finally {
    for (const one of opened) await one.close();
  }
}

conformance(
  'several daemons: of two installs of one extension at once, one on each daemon, exactly one wins',
  (site) =>
    twoDaemons(site, async (first, second) => {
      for (let round = 0; round < 5; round += 1) {
        const outcomes = await Promise.allSettled([first.installations.install('acme', { extensionKey: 'crm' }), second.installations.install('acme', { extensionKey: 'crm' })]);
        assert.is(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, `round ${round}`);
        const lost = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
        assert.is(lost.reason.code, 'CONFLICT');
        assert.equal((await second.installations.listInstallations('acme')).length, 1);
        await (round % 2 ? first : second).installations.uninstall('acme', 'crm');
      }
    }),
  { shared: true },
);

conformance(
  'several daemons: the same subscription made at once on both is stored once',
  (site) =>
    twoDaemons(site, async (first, second) => {
      const credentials = 'https://user:pa55@hooks.example.test/crm';
      for (const [round, url] of [HOOK, credentials, `${HOOK}/2`, `${credentials}/2`].entries()) {
        const input = { eventKey: 'deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE' as const, serviceBaseUrl: url };
        const outcomes = await Promise.allSettled([first.subscriptions.subscribe('acme', input), second.subscriptions.subscribe('acme', input)]);
        assert.is(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, `round ${round}: ${url}`);
      }
      assert.is((await first.subscriptions.listSubscriptions('acme')).length, 4);
    }),
  { shared: true },
);

conformance(
  'several daemons: a membership removed on one is refused by the next request to the other',
  (site) =>
    twoDaemons(site, async (first, second, [one]) => {
      const member = await one!.stores.users.insert({ email: 'm@example.test', fullName: 'M', roles: ['USER'], passwordHash: 'x' });
      await first.workspaces.addMember('acme', member.id);
      await second.workspaces.assertMember(member, 'acme');
      assert.equal((await second.workspaces.visibleTo(member)).map((stored) => stored.id), ['acme']);
      await first.workspaces.removeMember('acme', member.id);
      assert.is((await rejection(second.workspaces.assertMember(member, 'acme'))).code, 'FORBIDDEN');
      assert.equal(await second.workspaces.visibleTo(member), []);
      await first.workspaces.delete('acme', false);
      assert.is((await rejection(second.workspaces.get('acme'))).code, 'NOT_FOUND', 'a deleted workspace too');
    }),
  { shared: true },
);

conformance(
  'several daemons: an event published on the other at once goes to a new subscription, and its delivery finds it active',
  (site) =>
    twoDaemons(site, async (first, second) => {
      // The other daemon does not listen: only what publishing reads tells it of the change.
      await first.installations.install('acme', { extensionKey: 'crm' });
      const { subscription: made } = await first.subscriptions.subscribe('acme', { eventKey: 'deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: HOOK });
      assert.is(second.subscribers.inactivity(made.id), 'subscription deleted', 'not heard of yet');
      assert.equal((await second.subscriptions.activeSubscriptions('acme', 'deal.closed')).map((stored) => stored.id), [made.id]);
      assert.is(second.subscribers.inactivity(made.id), null, 'memory caught up before the delivery is queued');
      assert.is(second.subscribers.deliveryUrl(made.id), `${HOOK}/events`);
      assert.is(second.subscribers.signingKeys(made.id, Date.now()).length, 1);
    }),
  { shared: true },
);

conformance(
  'several daemons: changes on one reach what the other dispatches with, also after its feed connection was lost',
  (site) =>
    twoDaemons(site, async (first, second, opened) => {
      await Promise.all(opened.map((one) => one.listen()));
      await first.installations.install('acme', { extensionKey: 'crm' });
      const { subscription: made } = await first.subscriptions.subscribe('acme', { eventKey: 'deal.closed', extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: HOOK });
      await waitFor('the subscription active on the other daemon', () => second.subscribers.inactivity(made.id) === null);
      const before = second.subscribers.signingKeys(made.id, Date.now())[0]!;
      await first.subscriptions.rotateSecret('acme', made.id, 60_000, Date.now());
      await waitFor('the rotation heard', () => second.subscribers.signingKeys(made.id, Date.now()).length === 2);
      assert.equal(second.subscribers.signingKeys(made.id, Date.now())[1], before, 'the previous secret signs during the overlap');
      await first.subscriptions.updateSubscription('acme', made.id, { serviceBaseUrl: 'https://user:pa55@hooks.example.test/moved' });
      await waitFor('the new URL, credentials included', () => second.subscribers.deliveryUrl(made.id) === 'https://user:pa55@hooks.example.test/moved/events');
      await first.installations.updateInstallation('acme', 'crm', { enabled: false });
      await waitFor('the extension disabled', () => second.subscribers.inactivity(made.id) === 'extension disabled');

      // Every LISTEN connection is cut; the feeds connect again a second later.
      await opened[0]!.database!.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`);
      await first.subscriptions.updateSubscription('acme', made.id, { enabled: false });
      await waitFor('the change made meanwhile seen by the other daemon', () => second.subscribers.inactivity(made.id) === 'subscription disabled');
      assert.ok(opened[1]!.feedErrors.length > 0, 'the other daemon did lose its connection');
      await first.workspaces.delete('acme', true);
      await waitFor('the deletion seen', () => second.subscribers.inactivity(made.id) === 'subscription deleted');
      assert.equal(second.subscribers.signingKeys(made.id, Date.now()), []);
    }),
  { shared: true },
);

conformance(
  'several daemons: of failures recorded at once on both after the streak has lasted, one disables the subscription',
  (site) =>
    twoDaemons(site, async (first, second, opened) => {
      await Promise.all(opened.map((one) => one.listen()));
      await first.installations.install('acme', { extensionKey: 'crm' });
      for (let round = 0; round < 5; round += 1) {
        const { subscription: made } = await first.subscriptions.subscribe('acme', { eventKey: `deal.${round}`, extensionKey: 'crm', kind: 'EXTERNAL_SERVICE', serviceBaseUrl: HOOK });
        await first.subscriptions.recordHealth(made.id, false, 1_000, 60_000);
        // Unknown to its memory, the other daemon would record nothing at all.
        await waitFor('the subscription heard of', () => second.subscribers.inactivity(made.id) === null);
        const outcomes = await Promise.all([first.subscriptions.recordHealth(made.id, false, 61_000, 60_000), second.subscriptions.recordHealth(made.id, false, 61_000, 60_000)]);
        assert.is(outcomes.filter((outcome) => outcome !== null).length, 1, `round ${round}: one daemon announces it`);
        assert.is(outcomes.find((outcome) => outcome !== null)!.reason, `every delivery failed since ${new Date(1_000).toISOString()}`);
        assert.is((await second.subscriptions.subscription('acme', made.id)).enabled, false);
      }
    }),
  { shared: true },
);

test.run();
