import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

const run = promisify(execFile);
const repository = fileURLToPath(new URL('..', import.meta.url));

/** The `npm …` lines of docs/deploy.md's "Install" block, without `sudo` and comments. */
function documentedNpmLines(deployDoc: string): string[] {
  const section = deployDoc.slice(deployDoc.indexOf('\n## Install\n'), deployDoc.indexOf('\n## ', deployDoc.indexOf('\n## Install\n') + 1));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').replace(/^sudo /, '').trim())
    .filter((line) => line.startsWith('npm '));
}

// Slow (about 10-30 s: a clone, an install from the npm cache and a build), and
// it needs the npm registry or a cache holding every package of package-lock.json.
// Files only: installing does not depend on the storage backend.
filesOnly(test)(
  'docs/deploy.md install: its npm lines, run in a fresh clone, leave a release that serves without dev packages (slow; files only: the install is the same for both backends)',
  async () => {
    const dir = await tempDir('platform-install-');
    const clone = join(dir, 'release');
    // What a clone gets: the committed tree of this repository (HEAD), not uncommitted changes.
    await run('git', ['clone', '--quiet', repository, clone]);
    const lines = documentedNpmLines(readFileSync(join(clone, 'docs', 'deploy.md'), 'utf8'));
    assert.equal(lines, ['npm ci', 'npm prune --omit=dev'], 'docs/deploy.md installs with npm ci, then prunes the dev packages');

    // npm reads its own configuration, not that of an `npm test` around this run.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')));
    for (const line of lines) {
      // --prefer-offline: packages come from the local npm cache when it has them, to keep the run short.
      await run('sh', ['-c', `${line} --prefer-offline --no-audit --no-fund`], { cwd: clone, env, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 });
    }
    assert.ok(existsSync(join(clone, 'dist', 'cli', 'main.js')), 'npm ci built the daemon and the CLI');
    assert.ok(existsSync(join(clone, 'dist', 'console', 'index.html')), 'and the console');
    assert.not.ok(existsSync(join(clone, 'node_modules', 'uvu')), 'npm prune removed the dev packages');

    const daemon = spawn(process.execPath, [join(clone, 'bin', 'platform'), 'serve', '--port', '0', '--data-dir', join(dir, 'data')], {
      env: { PATH: process.env.PATH ?? '', HOME: dir, PLATFORM_BCRYPT_COST: '4' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    daemon.stdout.on('data', (chunk) => (output += chunk));
    daemon.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => daemon.on('exit', (code) => resolve(code)));
    try {
      const url = await waitFor('the daemon start line', () => /listening on (http:\/\/\S+)/.exec(output)?.[1] ?? '');
      const health = await fetch(`${url}/api/health`);
      assert.is(health.status, 200, output);
      const version = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')).version;
      assert.is(((await health.json()) as { data: { version: string } }).data.version, version);
      const page = await fetch(`${url}/`);
      assert.match(await page.text(), '<!doctype html>', 'the console is served');
    } finally {
      daemon.kill('SIGTERM');
    }
    assert.is(await exited, 0, output);
  },
);

test.run();
