import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { NewUser } from '../src/daemon/auth/users.js';
import { conformance, rejection, using, usingTwo } from './helpers/stores.js';
import { waitFor } from './helpers/wait.js';

/**
 * The auth domain's stores (users, revocations, login attempts), held to one
 * contract on both backends: each case runs on a fresh data directory and on
 * a fresh PostgreSQL schema.
 */

const person = (email: string, roles: NewUser['roles'] = ['USER']): NewUser => ({
  email,
  fullName: email.split('@')[0]!,
  roles,
  passwordHash: `hash-of-${email}`,
});


conformance('users: inserted users are found by id, by e-mail ignoring case, and listed in the order of creation', (site) =>
  using(site, async ({ stores: { users } }) => {
    assert.is(await users.count(), 0);
    const ann = await users.insert(person('Ann@Example.test', ['ADMIN']));
    const bob = await users.insert(person('bob@example.test'));
    assert.equal(
      { ...ann, id: '', createdAt: '', updatedAt: '' },
      { id: '', email: 'Ann@Example.test', fullName: 'Ann', roles: ['ADMIN'], active: true, passwordHash: 'hash-of-Ann@Example.test', tokenVersion: 0, createdAt: '', updatedAt: '' },
    );
    assert.ok(!Number.isNaN(Date.parse(ann.createdAt)) && ann.createdAt === ann.updatedAt);
    assert.equal(await users.get(ann.id), ann);
    assert.equal(await users.findByEmail('ann@example.TEST'), ann);
    assert.is(await users.get('no-such-id'), undefined);
    assert.is(await users.findByEmail('nobody@example.test'), undefined);
    assert.equal((await users.list()).map((user) => user.email), ['Ann@Example.test', 'bob@example.test']);
    assert.is(await users.count(), 2);
    assert.equal(await users.get(bob.id), bob);
  }),
);

conformance('users: one account per e-mail address, ignoring case, even when inserted at once', (site) =>
  using(site, async ({ stores: { users } }) => {
    await users.insert(person('taken@example.test'));
    const again = await rejection(users.insert(person('TAKEN@example.test')));
    assert.is(again.code, 'CONFLICT');
    assert.match(again.message, 'already exists');

    const racing = await Promise.allSettled(['race@example.test', 'Race@example.test', 'RACE@example.test', 'race@EXAMPLE.test'].map((email) => users.insert(person(email))));
    assert.is(racing.filter((outcome) => outcome.status === 'fulfilled').length, 1);
    for (const outcome of racing) if (outcome.status === 'rejected') assert.is((outcome.reason as { code: string }).code, 'CONFLICT');
    assert.is(await users.count(), 2);
  }),
);

conformance('users: modify stores the changed copy, and a change that throws stores nothing', (site) =>
  using(site, async ({ stores: { users } }) => {
    const user = await users.insert(person('changing@example.test'));
    const changed = await users.modify(user.id, (record) => {
      record.fullName = 'Renamed';
      record.tokenVersion += 1;
    });
    assert.is(changed.fullName, 'Renamed');
    assert.is(changed.tokenVersion, 1);
    assert.ok(changed.updatedAt >= user.updatedAt);
    assert.equal(await users.get(user.id), changed);

    const failed = await rejection(
      users.modify(user.id, (record) => {
        record.fullName = 'Half-done';
        throw new Error('refused by the caller');
      }),
    );
    assert.is(failed.message, 'refused by the caller');
    assert.equal(await users.get(user.id), changed);
    assert.is((await rejection(users.modify('no-such-id', () => undefined))).code, 'NOT_FOUND');
    assert.is((await rejection(users.remove('no-such-id'))).code, 'NOT_FOUND');
  }),
);

conformance('users: the last active ADMIN can be neither disabled, demoted nor removed', (site) =>
  using(site, async ({ stores: { users } }) => {
    const admin = await users.insert(person('admin@example.test', ['ADMIN']));
    const user = await users.insert(person('user@example.test'));
    for (const change of [(record: { active: boolean }) => (record.active = false), (record: { roles: string[] }) => (record.roles = ['USER'])]) {
      const refused = await rejection(users.modify(admin.id, change as never));
      assert.is(refused.code, 'CONFLICT');
      assert.match(refused.message, 'last active administrator');
    }
    assert.is((await rejection(users.remove(admin.id))).code, 'CONFLICT');
    assert.equal(await users.get(admin.id), admin, 'untouched');

    // A disabled ADMIN does not count as another one.
    const disabled = await users.insert(person('disabled@example.test', ['ADMIN']));
    await users.modify(disabled.id, (record) => (record.active = false));
    assert.is((await rejection(users.modify(admin.id, (record) => (record.roles = ['USER'])))).code, 'CONFLICT');

    await users.remove(user.id);
    assert.is(await users.get(user.id), undefined);
    assert.is(await users.findByEmail('user@example.test'), undefined);
    await users.modify(disabled.id, (record) => (record.active = true));
    await users.modify(admin.id, (record) => (record.roles = ['USER']));
    assert.equal((await users.get(admin.id))!.roles, ['USER'], 'allowed once another ADMIN is active');
  }),
);

conformance('users: of two ADMINs demoted, disabled or removed at once, one change wins and an ADMIN remains', (site) =>
  using(site, async ({ stores: { users } }) => {
    const stepDown = [
      (id: string) => users.modify(id, (record) => (record.roles = ['USER'])),
      (id: string) => users.modify(id, (record) => (record.active = false)),
      (id: string) => users.remove(id),
    ];
    let survivor = await users.insert(person('admin-0@example.test', ['ADMIN']));
    for (let round = 1; round <= 6; round += 1) {
      const other = await users.insert(person(`admin-${round}@example.test`, ['ADMIN']));
      const outcomes = await Promise.allSettled([stepDown[round % 3]!(survivor.id), stepDown[(round + 1) % 3]!(other.id)]);
      assert.is(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, `round ${round}`);
      const remaining = (await users.list()).filter((user) => user.active && user.roles.includes('ADMIN'));
      assert.is(remaining.length, 1, `round ${round}: ${remaining.map((user) => user.email)}`);
      survivor = remaining[0]!;
    }
  }),
);

conformance('users: what was acknowledged is there after a restart', async (site) => {
  const created = await using(site, async ({ stores: { users } }) => {
    const kept = await users.insert(person('kept@example.test', ['ADMIN']));
    const gone = await users.insert(person('gone@example.test'));
    await users.modify(kept.id, (record) => (record.fullName = 'Kept'));
    await users.remove(gone.id);
    return users.list();
  });
  await using(site, async ({ stores: { users } }) => {
    assert.equal(await users.list(), created);
  });
});

conformance('revocations: a revoked id stays revoked across restarts until its token has expired', async (site) => {
  await using(site, async ({ stores: { revocations } }) => {
    assert.is(await revocations.isRevoked('a'), false);
    await revocations.revoke('a', 1_000);
    await revocations.revoke('b', 2_000);
    await revocations.revoke('b', 2_000);
    assert.is(await revocations.isRevoked('a'), true);
  });
  await using(site, async ({ stores: { revocations } }) => {
    assert.is(await revocations.isRevoked('a'), true, 'after a restart');
    assert.is(await revocations.pruneExpired(999), 0);
    assert.is(await revocations.pruneExpired(1_000), 1);
    assert.is(await revocations.isRevoked('a'), false);
    assert.is(await revocations.isRevoked('b'), true);
  });
  await using(site, async ({ stores: { revocations } }) => {
    assert.is(await revocations.isRevoked('a'), false, 'pruning is durable too');
    assert.is(await revocations.isRevoked('b'), true);
  });
});

conformance('users and revocations: many lookups at once each get the answer for their own id, and see what was written before them', (site) =>
  using(site, async ({ stores: { users, revocations } }) => {
    const people = await Promise.all(['one', 'two', 'three'].map((name) => users.insert(person(`${name}@example.test`))));
    await revocations.revoke('revoked', 2_000);
    const ids = [...people.map((user) => user.id), 'missing', people[0]!.id];
    const jtis = ['revoked', 'kept', 'revoked', 'other'];
    const [found, revoked] = await Promise.all([Promise.all(ids.map((id) => users.get(id))), Promise.all(jtis.map((jti) => revocations.isRevoked(jti)))]);
    assert.equal(found, [...people, undefined, people[0]]);
    assert.equal(revoked, [true, false, true, false]);

    // Lookups that start while others are on their way still see what was written before they started.
    const before = Promise.all(jtis.map((jti) => revocations.isRevoked(jti)));
    await revocations.revoke('kept', 2_000);
    const renamed = await users.modify(people[1]!.id, (record) => {
      record.fullName = 'Renamed';
    });
    await before;
    assert.equal(await Promise.all(jtis.map((jti) => revocations.isRevoked(jti))), [true, true, true, false]);
    assert.equal(await Promise.all(people.map((user) => users.get(user.id))), [people[0], renamed, people[2]]);
  }),
);

const WINDOW = 60_000;

conformance('login attempts: failures and checks in flight count up to the limit, and the oldest leaving the window frees a place', async (site) => {
  let now = 1_000_000;
  await using(
    site,
    async ({ stores: { loginAttempts } }) => {
      const reserve = () => loginAttempts.reserve('key', 3, WINDOW);
      const first = await reserve();
      assert.ok('id' in first);
      await loginAttempts.failed('key', first.id);
      now += 10_000;
      const second = await reserve();
      const third = await reserve();
      assert.ok('id' in second && 'id' in third);
      await loginAttempts.failed('key', second.id);
      // Two failures and one check in flight: full. The oldest failure leaves the window first.
      assert.equal(await reserve(), { retryAfterMs: WINDOW - 10_000 });
      assert.ok('id' in (await loginAttempts.reserve('other key', 3, WINDOW)), 'keys are counted apart');

      await loginAttempts.abandoned('key', third.id);
      const fourth = await reserve();
      assert.ok('id' in fourth, 'an abandoned check counts for nothing');
      await loginAttempts.failed('key', fourth.id);
      assert.ok('retryAfterMs' in (await reserve()));
      now += WINDOW - 10_000;
      const fifth = await reserve();
      assert.ok('id' in fifth, 'the first failure has left the window');
      await loginAttempts.succeeded('key', fifth.id);
      for (let n = 0; n < 3; n += 1) assert.ok('id' in (await reserve()), 'a success forgives the failures');
    },
    { now: () => now },
  );
});

conformance('login attempts: reserving at once never lets more attempts through than the limit', async (site) => {
  await using(site, async ({ stores: { loginAttempts } }) => {
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => loginAttempts.reserve('burst', 5, WINDOW)));
    assert.is(outcomes.filter((outcome) => 'id' in outcome).length, 5);
  });
});

conformance('login attempts: prune forgets what no longer counts, and keeps what does', async (site) => {
  let now = 5_000_000;
  await using(
    site,
    async ({ stores: { loginAttempts } }) => {
      const old = await loginAttempts.reserve('key', 2, WINDOW);
      assert.ok('id' in old);
      await loginAttempts.failed('key', old.id);
      now += WINDOW / 2;
      const recent = await loginAttempts.reserve('key', 2, WINDOW);
      assert.ok('id' in recent);
      await loginAttempts.failed('key', recent.id);
      now += WINDOW / 2;
      await loginAttempts.prune(WINDOW);
      const after = await loginAttempts.reserve('key', 2, WINDOW);
      assert.ok('id' in after, 'the old failure was forgotten');
      assert.equal(await loginAttempts.reserve('key', 2, WINDOW), { retryAfterMs: WINDOW / 2 }, 'the recent one still counts');
    },
    { now: () => now },
  );
});

conformance(
  'several daemons: a change on one is reported to the others, not to itself, and a revocation or a throttle place holds on both at once',
  async (site) => {
    await usingTwo(site, async (one, two) => {
      const heard: Array<{ by: string; id: string | null }> = [];
      one.stores.users.onChange((id) => heard.push({ by: 'one', id }));
      two.stores.users.onChange((id) => heard.push({ by: 'two', id }));
      await Promise.all([one.listen(), two.listen()]);
      const user = await one.stores.users.insert(person('shared@example.test'));
      await waitFor('the insert heard by the other daemon', () => heard.some((entry) => entry.by === 'two' && entry.id === user.id));
      await two.stores.users.modify(user.id, (record) => (record.fullName = 'Changed on two'));
      await waitFor('the change heard by the first daemon', () => heard.some((entry) => entry.by === 'one' && entry.id === user.id));
      assert.is((await one.stores.users.get(user.id))!.fullName, 'Changed on two');
      // Notifications arrive in commit order: had the first daemon heard its own insert, it would have come before.
      assert.equal(heard.filter((entry) => entry.by === 'one'), [{ by: 'one', id: user.id }], 'its own insert is not reported to it');

      await one.stores.revocations.revoke('shared-jti', 9_999_999_999);
      assert.is(await two.stores.revocations.isRevoked('shared-jti'), true);
      const places = await Promise.all([one, two, one, two].map((daemon) => daemon.stores.loginAttempts.reserve('shared', 3, WINDOW)));
      assert.is(places.filter((place) => 'id' in place).length, 3);
    });
  },
  { shared: true },
);

test.run();
