import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * Domain code never depends on storage: the stores are reached through the
 * contracts each domain defines (events/store.ts, dispatch/store.ts, …), and
 * only wiring chooses and opens a backend. Every folder of src/daemon is a
 * domain except store/ (the backends) and http/ (the edge, which wires routes
 * to services); so is every top-level file except the wiring below.
 */
const DAEMON = fileURLToPath(new URL('../src/daemon/', import.meta.url));

const NOT_DOMAIN_FOLDERS = ['store', 'http'];

/** Top-level files that assemble the daemon; they may open stores. */
const WIRING = new Map([
  ['services.ts', 'opens the stores of the chosen backend and hands them to the services'],
  ['index.ts', 'starts the daemon: takes the data directory lock, repairs torn files, opens the services'],
  ['init.ts', '`platform init`: creates a data directory and its first administrator without a daemon'],
  ['config.ts', 'reads flags and environment into the settings of every part, the database settings of store/postgres included'],
]);

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative specifiers of `import … from`, `export … from`, `import '…'` and `import('…')`, `import type` included. */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((match) => match[1]!);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => relative(DAEMON, resolve(dirname(file), specifier.replace(/\.js$/, '.ts'))).split(sep).join('/'));
}

const isDomain = (path: string) => {
  const [first, ...rest] = path.split('/');
  return rest.length === 0 ? !WIRING.has(first!) : !NOT_DOMAIN_FOLDERS.includes(first!);
};

const files = tsFiles(DAEMON).map((file) => ({ path: relative(DAEMON, file).split(sep).join('/'), imports: importsOf(file) }));
const importsStore = (imports: string[]) => imports.filter((target) => target.startsWith('store/'));

test('the scan sees the imports it judges, dynamic and type-only ones included', () => {
  const of = (path: string) => files.find((file) => file.path === path)?.imports ?? [];
  assert.ok(of('services.ts').includes('store/stores.ts'), 'services.ts imports store/stores.ts');
  assert.ok(of('store/rotate-master-key.ts').includes('store/postgres/connect.ts'), 'a dynamic import is seen');
  assert.ok(of('dispatch/store.ts').includes('dispatch/types.ts'), 'an `import type` is seen');
  assert.ok(files.length > 100, `${files.length} files under src/daemon`);
});

test('no domain file imports from src/daemon/store/', () => {
  const offending = files
    .filter((file) => isDomain(file.path))
    .flatMap((file) => importsStore(file.imports).map((target) => `${file.path} imports ${target}`));
  assert.equal(offending, []);
});

test.run();
