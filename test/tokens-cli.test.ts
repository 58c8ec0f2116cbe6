import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli } from './helpers/cli.js';
import { createWorkspace } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { tempDir } from './helpers/temp.js';

/** `platform tokens …`, and a token in PLATFORM_TOKEN for every other command. */

let t: TestDaemon;
let admin: Api & { token: string };
let config: string;

test.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
  config = await tempDir('platform-tokens-cli-');
  await createWorkspace(admin, 'acme');
});
test.after(async () => {
  await t.destroy();
});

const cli = (args: string[], token = admin.token) => runCli(args, { env: { XDG_CONFIG_HOME: config, PLATFORM_URL: t.url, PLATFORM_TOKEN: token } });

test('tokens create prints the token once; PLATFORM_TOKEN=plt_… works with the commands its scopes allow', async () => {
  const created = await cli(['tokens', 'create', '--name', 'deploy', '--scope', 'events:publish', 'events:read', '--workspace', 'acme', '--expires-in-days', '7', '--json']);
  assert.is(created.code, 0, created.stderr);
  const { token, id, workspaces } = JSON.parse(created.stdout);
  assert.match(token, /^plt_/);
  assert.equal(workspaces, ['acme']);

  const published = await cli(['events', 'publish', 'acme', 'deploy.finished', '--payload', '{"release":"1.2"}'], token);
  assert.is(published.code, 0, published.stderr);
  assert.is((await cli(['whoami'], token)).stdout.trim().startsWith('admin@example.test'), true);
  const refused = await cli(['workspaces', 'create', 'nope', '--name', 'Nope'], token);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, 'lacks the workspaces:write scope');

  const listed = await cli(['tokens', 'list']);
  assert.is(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, /deploy\s+events:publish events:read\s+acme/);
  assert.not.match(listed.stdout, token, 'never shown again');
  const all = JSON.parse((await cli(['tokens', 'list', '--all', '--json'])).stdout);
  assert.ok(all.some((entry: { id: string }) => entry.id === id));

  const badScope = await cli(['tokens', 'create', '--name', 'x', '--scope', 'everything']);
  assert.is(badScope.code, 2, 'a scope that does not exist is a usage error, before any request');

  const revoked = await cli(['tokens', 'revoke', id, '--yes']);
  assert.is(revoked.code, 0, revoked.stderr);
  const after = await cli(['whoami'], token);
  assert.is(after.code, 1);
  assert.match(after.stderr, 'invalid, expired or revoked');
});

test.run();
