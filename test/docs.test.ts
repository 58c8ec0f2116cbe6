import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildRoutes } from '../src/daemon/http/index.js';
import { startTestDaemon } from './helpers/daemon.js';

/** "GET /api/x/:id/y" and "GET /api/x/{extensionKey}/y?limit=" both become "GET /api/x/{}/y". */
const normalise = (route: string) => route.replace(/\?.*$/, '').replace(/(:[A-Za-z]+|\{[A-Za-z]+\})/g, '{}');

test('docs/api.md documents every endpoint the daemon serves, and no other', async () => {
  const t = await startTestDaemon();
  try {
    const served = buildRoutes(t.daemon.services, t.daemon.config).list().map(normalise).sort();
    const doc = readFileSync(fileURLToPath(new URL('../docs/api.md', import.meta.url)), 'utf8');
    const documented = [...doc.matchAll(/^### `((?:GET|POST|PUT|PATCH|DELETE) [^`]+)`/gm)].map((match) => normalise(match[1]!)).sort();
    assert.equal(
      served.filter((route) => !documented.includes(route)),
      [],
      'served but not documented',
    );
    assert.equal(
      documented.filter((route) => !served.includes(route)),
      [],
      'documented but not served',
    );
    assert.ok(served.length >= 40, `${served.length} endpoints`);
  } finally {
    await t.destroy();
  }
});

test('the docs stand alone: none cites a document or tracker outside the repository', () => {
  const root = fileURLToPath(new URL('../', import.meta.url));
  const files = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const outside of [/CONTRACT(\.md)?\b/, /MACHINE-NOTES/, /DESIGN\.md/, /\bshared\//, /\bissue \d+/i]) {
      assert.not.match(text, outside, `${file} cites ${outside}`);
    }
  }
});

test.run();
