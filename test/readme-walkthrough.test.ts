import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PLATFORM_BIN, runCliOnTty } from './helpers/cli.js';
import { freePort } from './helpers/ports.js';
import { filesOnly } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';
import { waitFor } from './helpers/wait.js';

/** The shell blocks of README.md's "First steps", up to "Locked out", in order. */
function firstStepsBlocks(): string[] {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('\n## First steps\n'), readme.indexOf('\n### Locked out\n'));
  return [...section.matchAll(/^( *)```sh\n([\s\S]*?)^ *```/gm)].map(([, indent, body]) => body!.replace(new RegExp(`^${indent}`, 'gm'), ''));
}

/** A daemon as a person starts one in the first terminal; SIGTERM is its Ctrl-C. */
function startDaemon(commandLine: string, cwd: string, env: Record<string, string>) {
  const child = spawn('sh', ['-c', `exec ${commandLine}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    listening: () => waitFor(`${commandLine} listening`, () => output.includes('listening on')),
    stop: async () => {
      child.kill('SIGTERM');
      return { code: await exited, output };
    },
  };
}

/** Runs one pasted block in bash; every command that fails is reported on stderr as FAILED(code): command. */
function paste(block: string, cwd: string, env: Record<string, string>, input: string): Promise<{ stdout: string; stderr: string }> {
  const script = `set -o pipefail\ntrap 'echo "FAILED($?): $BASH_COMMAND" >&2' ERR\n${block}`;
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', () => resolve({ stdout, stderr }));
    child.stdin.end(input);
  });
}

// Files only: the walk-through keeps its data in ./data, as the README says.
filesOnly(test)(
  "README's First steps run in order, pasted block by block, against the one daemon it starts (files only: the README's daemon keeps ./data)",
  async () => {
    const clone = await tempDir('platform-readme-');
    mkdirSync(join(clone, 'bin'));
    writeFileSync(join(clone, 'bin', 'platform'), `#!/bin/sh\nexec "${process.execPath}" "${PLATFORM_BIN}" "$@"\n`);
    chmodSync(join(clone, 'bin', 'platform'), 0o755);
    const port = String(await freePort());
    const env = {
      PATH: `${join(clone, 'bin')}:${process.env.PATH ?? ''}`,
      HOME: clone,
      XDG_CONFIG_HOME: join(clone, 'config'),
      // The README's daemon and CLI meet on the default address; here, on a free port.
      PLATFORM_PORT: port,
      PLATFORM_URL: `http://127.0.0.1:${port}`,
      PLATFORM_BCRYPT_COST: '4',
    };

    // "Install and run": the first start, which creates ./data, stopped before First steps.
    const first = startDaemon('platform serve', clone, env);
    await first.listening();
    assert.is((await first.stop()).code, 0);

    const [serve, ...blocks] = firstStepsBlocks();
    assert.match(serve!, /^platform serve /, 'First steps starts the daemon first');
    const daemon = startDaemon(serve!.trim(), clone, env);
    await daemon.listening();
    const failures: string[] = [];
    const outputs: string[] = [];
    try {
      const adminPassword = readFileSync(join(clone, 'data', 'initial-admin-password'), 'utf8').trim();
      const ownPassword = 'my-own-admin-password';
      for (const block of blocks) {
        if (block.trim() === 'platform passwd') {
          // It asks: answered on a terminal, as a person would.
          const asked = await runCliOnTty(['passwd'], {
            env,
            steps: [
              { after: 'Current password', type: `${adminPassword}\r` },
              { after: 'New password', type: `${ownPassword}\r` },
              { after: 'again', type: `${ownPassword}\r` },
            ],
          });
          assert.is(asked.code, 0, asked.stdout);
          continue;
        }
        if (block.includes('platform events show acme')) {
          // The README says the delivery is a dead letter "by now": a reader gets there after its retries
          // (each attempt waits on a name lookup that cannot succeed here), so the test waits for it too.
          await waitFor(
            'the README delivery to be a dead letter',
            async () => (await paste('platform dlq list --workspace acme --json', clone, { ...env, PASSWORD: ownPassword }, '')).stdout.includes('"id"'),
            60_000,
          );
        }
        // A live tail runs until Ctrl-C: two seconds of it.
        const pasted = block.startsWith('platform events tail') ? `timeout -s INT 2 ${block.replace(/#.*/, '')}` : block;
        // PASSWORD for the scripted login; stdin for a command that reads a secret from it.
        const { stdout, stderr } = await paste(pasted, clone, { ...env, PASSWORD: ownPassword }, 'webhook-secret-from-stdin');
        outputs.push(stdout);
        failures.push(...stderr.split('\n').filter((line) => line.startsWith('FAILED(')));
      }
    } finally {
      assert.is((await daemon.stop()).code, 0);
    }
    assert.equal(
      failures,
      [
        'FAILED(1): platform dlq replay "$id" --wait',
        'FAILED(124): timeout -s INT 2 platform events tail acme', // timeout(1) ended it, as Ctrl-C would
      ],
      'only the failures the README announces',
    );
    const all = outputs.join('');
    assert.match(all, /attempt 3 FAILED in \d+ ms: network error/, 'the delivery was watched to its end');
    assert.match(all, 'failed again after 3 attempts');
    assert.match(all, 'removed webhook.workspaceId of github-sync');
  },
);

test.run();
