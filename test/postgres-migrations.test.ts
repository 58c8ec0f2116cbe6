import { test } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { StartupError } from '../src/daemon/errors.js';
import { Database } from '../src/daemon/store/postgres/database.js';
import { migrate } from '../src/daemon/store/postgres/migrate.js';
import { MIGRATIONS } from '../src/daemon/store/postgres/migrations/index.js';
import { runCli } from './helpers/cli.js';
import { closedPort } from './helpers/ports.js';
import { freshDatabase } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';

// The tests named "tables:" look into PostgreSQL's catalog: where migrations put things is what they are about.

const ALL = MIGRATIONS.map((migration) => migration.version);
const noIdleErrors = (error: Error) => {
  throw error;
};

async function tablesIn(url: string, schema: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema]);
    return rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

async function appliedIn(url: string, schema: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    return rows.map((row) => row.version);
  } finally {
    await client.end();
  }
}

test('tables: migrate creates the schema and its tables, and a second run applies nothing', async () => {
  const url = await freshDatabase();
  const database = new Database({ url, schema: 'platform' }, noIdleErrors);
  try {
    assert.equal((await migrate(database)).map((migration) => migration.version), ALL);
    assert.equal(await migrate(database), []);
    const tables = await tablesIn(url, 'platform');
    for (const table of ['schema_migrations', 'users', 'revoked_tokens', 'login_attempts', 'extensions', 'extension_versions', 'catalog_audit']) {
      assert.ok(tables.includes(table), `${table} in ${tables.join(', ')}`);
    }
    assert.equal(await tablesIn(url, 'public'), [], 'nothing outside the schema');
    assert.equal(await appliedIn(url, 'platform'), ALL);
  } finally {
    await database.close();
  }
});

test('tables: daemons migrating at once apply each migration once', async () => {
  const url = await freshDatabase();
  const databases = [1, 2, 3].map(() => new Database({ url, schema: 'platform' }, noIdleErrors));
  try {
    const applied = await Promise.all(databases.map((database) => migrate(database)));
    assert.equal(applied.flat().map((migration) => migration.version).sort((a, b) => a - b), ALL);
    assert.equal(await appliedIn(url, 'platform'), ALL);
  } finally {
    await Promise.all(databases.map((database) => database.close()));
  }
});

test('tables: another schema keeps a platform of its own beside the first', async () => {
  const url = await freshDatabase();
  const first = new Database({ url, schema: 'platform' }, noIdleErrors);
  const second = new Database({ url, schema: 'staging' }, noIdleErrors);
  try {
    await migrate(first);
    assert.equal((await migrate(second)).length, MIGRATIONS.length);
    await second.query(`INSERT INTO revoked_tokens (jti, expires_at) VALUES ('only-in-staging', 1)`);
    const count = async (database: Database) => (await database.query('SELECT count(*)::int AS n FROM revoked_tokens')).rows[0]!.n;
    assert.equal([await count(first), await count(second)], [0, 1]);
  } finally {
    await Promise.all([first.close(), second.close()]);
  }
});

test('a schema migrated by a newer platform is refused, and left as it is', async () => {
  const url = await freshDatabase();
  const database = new Database({ url, schema: 'platform' }, noIdleErrors);
  try {
    await migrate(database);
    await database.query(`INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')`);
    const error = await migrate(database).then(
      () => null,
      (failure: unknown) => failure,
    );
    assert.instance(error, StartupError);
    assert.match((error as Error).message, /newer platform .*upgrade platform/);
    assert.equal(await appliedIn(url, 'platform'), [...ALL, 999]);
  } finally {
    await database.close();
  }
});

test('platform db migrate applies the migrations once, then says the schema is up to date', async () => {
  const url = await freshDatabase();
  const first = await runCli(['db', 'migrate', '--database-url', url]);
  assert.is(first.code, 0, first.stderr);
  assert.is(first.stdout, `applied ${MIGRATIONS.map((m) => `${m.version} (${m.name})`).join(', ')} to schema platform\n`);
  const again = await runCli(['db', 'migrate'], { env: { PLATFORM_DATABASE_URL: url, PLATFORM_DATABASE_SCHEMA: 'platform' } });
  assert.is(again.code, 0, again.stderr);
  const latest = MIGRATIONS[MIGRATIONS.length - 1]!;
  assert.is(again.stdout, `schema platform is up to date (migration ${latest.version}, ${latest.name})\n`);
});

test('platform db migrate: a bad URL or schema is a usage error, and an unreachable database says which, never with its password', async () => {
  const missing = await runCli(['db', 'migrate']);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /--database-url or PLATFORM_DATABASE_URL/);

  const wrongScheme = await runCli(['db', 'migrate', '--database-url', 'mysql://admin:hunter2-secret@db/platform']);
  assert.is(wrongScheme.code, 2);
  assert.match(wrongScheme.stderr, /postgres:\/\/ or postgresql:\/\/ URL/);
  assert.not.match(wrongScheme.stderr, /hunter2/);

  const badSchema = await runCli(['db', 'migrate', '--database-url', 'postgres://db/platform', '--database-schema', 'Drop Table']);
  assert.is(badSchema.code, 2);
  assert.match(badSchema.stderr, /--database-schema/);

  const port = await closedPort();
  const unreachable = await runCli(['db', 'migrate', '--database-url', `postgres://platform:hunter2-secret@127.0.0.1:${port}/platform`]);
  assert.is(unreachable.code, 1);
  assert.match(unreachable.stderr, new RegExp(`^platform: database postgres://platform:\\*\\*\\*@127\\.0\\.0\\.1:${port}/platform: .*ECONNREFUSED`));
  assert.not.match(unreachable.stderr, /hunter2/);
});

test('platform serve --database-url on a database it cannot reach stops in one line naming it, the password hidden', async () => {
  const port = await closedPort();
  const url = `postgres://platform:hunter2-secret@127.0.0.1:${port}/platform`;
  for (const run of [
    async () => runCli(['serve', '--port', '0', '--data-dir', await tempDir(), '--database-url', url]),
    async () => runCli(['serve', '--port', '0', '--data-dir', await tempDir()], { env: { PLATFORM_DATABASE_URL: url } }),
  ]) {
    const result = await run();
    assert.is(result.code, 1);
    assert.is(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`database postgres://platform:\\*\\*\\*@127\\.0\\.0\\.1:${port}/platform: .*ECONNREFUSED`));
    assert.not.match(result.stderr, /hunter2/);
  }
});

test.run();
