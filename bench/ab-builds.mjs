// Scenario 1's request (catalog detail GET, 50 connections) against the daemons of several builds
// at once, in alternated rounds, to find which change moved its cost: each daemon pinned to core 0,
// the load from this process (run it on core 1), CPU per request read from /proc.
//
//   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/ && (cd /tmp/before && npm run build)
//   taskset -c 1 node bench/ab-builds.mjs before=/tmp/before main=.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';

const ADMIN = { email: 'admin@example.test', password: 'correct horse battery staple' };
const ROUNDS = 4;
const SECONDS = 4;
const builds = Object.fromEntries(process.argv.slice(2).map((arg) => arg.split('=')).map(([name, root]) => [name, resolve(root)]));
if (Object.keys(builds).length === 0) throw new Error('usage: node bench/ab-builds.mjs NAME=BUILD_ROOT ...');

function start(root) {
  const dir = mkdtempSync(join(tmpdir(), 'platform-ab-'));
  const child = spawn('taskset', ['-c', '0', `${root}/bin/platform`, 'serve', '--port', '0', '--data-dir', dir, '--quiet'], {
    env: { ...process.env, PLATFORM_ADMIN_EMAIL: ADMIN.email, PLATFORM_ADMIN_PASSWORD: ADMIN.password },
  });
  return new Promise((done, fail) => {
    let out = '';
    const hear = (chunk) => {
      out += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (url) done({ url, child, dir });
    };
    child.stdout.on('data', hear);
    child.stderr.on('data', hear);
    child.on('exit', () => fail(new Error(out)));
  });
}

async function call(url, cookie, path, body) {
  const response = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body: JSON.stringify(body) });
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response;
}

const cpuMs = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

const daemons = {};
try {
  for (const [name, root] of Object.entries(builds)) {
    const daemon = await start(root);
    daemons[name] = daemon;
    const login = await call(daemon.url, null, '/api/auth/login', ADMIN);
    const cookie = login.headers.getSetCookie().find((value) => value.startsWith('platform_token=')).split(';', 1)[0];
    await call(daemon.url, cookie, '/api/admin/marketplace/extensions', { extensionKey: 'ext-00042', name: 'Ledger 42', description: 'A ledger extension.', category: 'finance' });
    for (let v = 0; v < 5; v += 1) {
      await call(daemon.url, cookie, '/api/admin/marketplace/extensions/ext-00042/versions', { version: `1.${v}.0`, artifactUrl: `https://artifacts.example.test/ext-00042/1.${v}.0.jar` });
    }
  }
  const results = Object.fromEntries(Object.keys(builds).map((name) => [name, []]));
  for (let round = 0; round < ROUNDS; round += 1) {
    const names = Object.keys(builds);
    for (const name of round % 2 ? names.reverse() : names) {
      const { url, child } = daemons[name];
      const before = cpuMs(child.pid);
      const load = await autocannon({ url: `${url}/api/marketplace/extensions/ext-00042`, connections: 50, duration: SECONDS });
      results[name].push(`${Math.round(load.requests.average)} req/s ${Math.round(((cpuMs(child.pid) - before) * 1000) / load['2xx'])} µs`);
    }
  }
  // The first round warms each daemon up: read the others.
  for (const [name, runs] of Object.entries(results)) console.log(`${name}: ${runs.join(', ')}`);
} finally {
  for (const { child, dir } of Object.values(daemons)) {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
