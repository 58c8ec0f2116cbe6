import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import { runCli, runCliOnTty } from './helpers/cli.js';
import { createWorkspace, FAST_DISPATCH } from './helpers/fixtures.js';
import type { Api } from './helpers/http.js';
import { tempDir } from './helpers/temp.js';

/** The CLI's side of manifests: publishing one, reading it back, the compatible version, and consent at install. */

let t: TestDaemon;
let admin: Api & { token: string };
let scratch: string;

test.before(async () => {
  t = await startTestDaemon({ dispatch: FAST_DISPATCH });
  admin = await t.admin();
  scratch = await tempDir('platform-manifest-cli-');
});
test.after(async () => {
  await t.destroy();
});

const env = () => ({ XDG_CONFIG_HOME: scratch, PLATFORM_URL: t.url, PLATFORM_TOKEN: admin.token });
const cli = (args: string[]) => runCli(args, { env: env() });

const MANIFEST = {
  manifestVersion: 1,
  extensionKey: 'tickets',
  version: '1.0.0',
  permissions: ['tickets.read', 'tickets.write'],
  publishes: [
    {
      eventKey: 'tickets.ticket.opened',
      schemaVersion: '1',
      description: 'A ticket was opened.',
      schema: { type: 'object', required: ['ticketId'], properties: { ticketId: { type: 'string' } } },
    },
  ],
  subscribes: [{ eventKey: 'tickets.ticket.opened', kind: 'EXTERNAL_SERVICE', path: '/hooks' }],
  configuration: [{ name: 'apiKey', type: 'SECRET', required: true }],
};

test('ext publish --manifest takes the key and version from the manifest; ext show prints it', async () => {
  const file = join(scratch, 'manifest.json');
  writeFileSync(file, JSON.stringify(MANIFEST));
  const published = await cli(['ext', 'publish', '--manifest', file, '--name', 'Tickets', '--artifact-url', 'https://artifacts.example.test/tickets-1.0.0.jar']);
  assert.is(published.code, 0, published.stderr);
  assert.match(published.stdout, 'published tickets 1.0.0');
  assert.equal((await t.anon.get('/api/marketplace/extensions/tickets/versions/1.0.0')).body.data.manifest, MANIFEST);

  const shown = await cli(['ext', 'show', 'tickets', '1.0.0']);
  assert.is(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /permissions:\s+tickets\.read, tickets\.write/);
  assert.match(shown.stdout, /publishes:\s+tickets\.ticket\.opened \(schemaVersion 1\): A ticket was opened\./);
  assert.match(shown.stdout, /subscribes to:\s+tickets\.ticket\.opened \(EXTERNAL_SERVICE, \/hooks\)/);
  assert.match(shown.stdout, /configuration:\s+apiKey \(SECRET, required\)/);

  writeFileSync(file, JSON.stringify({ ...MANIFEST, version: '1.1.0', permissions: ['crm.deals.read'] }));
  const refused = await cli(['ext', 'publish', '--manifest', file, '--artifact-url', 'https://artifacts.example.test/tickets-1.1.0.jar']);
  assert.is(refused.code, 1);
  assert.match(refused.stderr, '/manifest/permissions/0');
});

test('ext show --compatible names the highest version this daemon runs; other versions may be given', async () => {
  await admin.post('/api/admin/marketplace/extensions/tickets/versions', {
    version: '2.0.0',
    artifactUrl: 'https://artifacts.example.test/tickets-2.0.0.jar',
    requiresPlatform: '99.0.0',
  });
  const compatible = await cli(['ext', 'show', 'tickets', '--compatible']);
  assert.is(compatible.code, 0, compatible.stderr);
  assert.match(compatible.stdout, /latest:\s+2\.0\.0/);
  assert.match(compatible.stdout, /compatible:\s+1\.0\.0/);
  const future = await cli(['ext', 'show', 'tickets', '--platform-version', '99.1.0', '--json']);
  assert.is(JSON.parse(future.stdout).compatibleVersion, '2.0.0');
  assert.not.match((await cli(['ext', 'show', 'tickets'])).stdout, 'compatible:', 'only when asked');
});

test('install shows the permissions and needs consent: refused without a terminal, granted with --grant-permissions or on the question', async () => {
  await createWorkspace(admin, 'desk');
  const refused = await cli(['extensions', 'install', 'desk', 'tickets', '--version', '1.0.0', '--service-url', 'https://tickets.example.test']);
  assert.is(refused.code, 2, refused.stderr);
  assert.match(refused.stderr, 'tickets.read');
  assert.match(refused.stderr, 'pass --yes');
  assert.equal((await admin.get('/api/workspaces/desk/extensions')).body.data, [], 'nothing installed');

  const granted = await cli(['extensions', 'install', 'desk', 'tickets@1.0.0', '--grant-permissions', '--service-url', 'https://tickets.example.test']);
  assert.is(granted.code, 0, granted.stderr);
  assert.match(granted.stdout, 'installed tickets@1.0.0 in desk');
  assert.match(granted.stdout, 'granted: tickets.read, tickets.write');
  assert.match(granted.stdout, 'deliveries are POSTed to https://tickets.example.test/hooks');
  assert.match(granted.stdout, /signing secret \(shown only now\): whsec_/);
  assert.match(granted.stderr, 'needs configuration still missing: apiKey');

  await createWorkspace(admin, 'desk2');
  const asked = await runCliOnTty(['install', 'desk2', 'tickets@1.0.0', '--service-url', 'https://tickets.example.test'], {
    env: env(),
    answers: 'y\r',
    waitFor: 'Grant these permissions?',
  });
  assert.is(asked.code, 0, asked.stdout);
  assert.match(asked.stdout, 'tickets.write');
  assert.match(asked.stdout, 'installed tickets@1.0.0 in desk2');
});

test('a typed event that does not match its schema is refused with the field named', async () => {
  const result = await cli(['events', 'publish', 'desk', 'tickets.ticket.opened', '--payload', '{"ticket":1}']);
  assert.is(result.code, 1);
  assert.match(result.stderr, '/payload/ticketId');
});

test.run();
