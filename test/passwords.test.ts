import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PasswordHasher } from '../src/daemon/auth/passwords.js';
import { waitFor } from './helpers/wait.js';

test('bcrypt workers start with the first job, stop when idle, and come back on demand', async () => {
  const hasher = new PasswordHasher(4, 2, 50);
  try {
    assert.is(hasher.threads, 0, 'no thread before any job');
    const hash = await hasher.hash('correct horse battery');
    assert.match(hash, /^\$2[aby]\$04\$/);
    assert.ok(hasher.threads >= 1);
    await waitFor('the idle workers to stop', () => hasher.threads === 0, 5_000);
    assert.is(await hasher.verify('correct horse battery', hash), true);
    assert.is(await hasher.verify('wrong horse battery', hash), false);
  } finally {
    await hasher.close();
  }
});

test('concurrent jobs spread over at most `size` workers', async () => {
  const hasher = new PasswordHasher(4, 2, 10_000);
  try {
    const hashes = await Promise.all(Array.from({ length: 6 }, (_, i) => hasher.hash(`password-${i}`)));
    assert.is(new Set(hashes).size, 6);
    assert.is(hasher.threads, 2);
  } finally {
    await hasher.close();
  }
});

test.run();
