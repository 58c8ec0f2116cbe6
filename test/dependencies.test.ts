import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * Imports run one way:
 * - Domain code never depends on storage: the stores are reached through the
 *   contracts each domain defines (events/store.ts, dispatch/store.ts, …), and
 *   only wiring chooses and opens a backend. Every folder of src/daemon is a
 *   domain except store/ (the backends) and http/ (the edge, which wires routes
 *   to services); so is every top-level file except the wiring below. Reading
 *   the configuration (config.ts) loads no backend.
 * - A route module (src/daemon/http/routes/) serves its routes with the
 *   services; it imports no other route module.
 * - No module imports itself through others, in src/ or bench/.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DAEMON = 'src/daemon/';

const NOT_DOMAIN_FOLDERS = ['store', 'http'];

/** Top-level files that assemble the daemon; they may open stores. */
const WIRING = new Map([
  ['services.ts', 'opens the stores of the chosen backend and hands them to the services'],
  ['index.ts', 'starts the daemon: takes the data directory lock, repairs torn files, opens the services'],
  ['init.ts', '`platform init`: creates a data directory and its first administrator without a daemon'],
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts|vue)$/.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.d.mts') ? [path] : [];
  });
}

const toPosix = (path: string) => path.split(sep).join('/');

/** The file a relative specifier names (`./x.js` is `./x.ts` in the source), or null for one outside the scan. */
function resolveSpecifier(from: string, specifier: string, known: Set<string>): string | null {
  const base = toPosix(relative(ROOT, resolve(dirname(join(ROOT, from)), specifier)));
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), `${base}.ts`];
  return candidates.find((candidate) => known.has(candidate)) ?? null;
}

/** Relative specifiers of `import … from`, `export … from`, `import '…'` and `import('…')`, `import type` included. */
function specifiersOf(path: string): string[] {
  const source = readFileSync(join(ROOT, path), 'utf8');
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((match) => match[1]!).filter((specifier) => specifier.startsWith('.'));
}

const scanned = ['src', 'bench'].filter((dir) => existsSync(join(ROOT, dir))).flatMap((dir) => sourceFiles(join(ROOT, dir)).map((file) => toPosix(relative(ROOT, file))));
const known = new Set(scanned);
/** Every scanned file with the scanned files it imports (paths from the repository root). */
const graph = new Map(scanned.map((path) => [path, specifiersOf(path).flatMap((specifier) => resolveSpecifier(path, specifier, known) ?? [])]));

const daemonFiles = scanned
  .filter((path) => path.startsWith(DAEMON))
  .map((path) => ({ path: path.slice(DAEMON.length), imports: graph.get(path)!.filter((target) => target.startsWith(DAEMON)).map((target) => target.slice(DAEMON.length)) }));

const isDomain = (path: string) => {
  const [first, ...rest] = path.split('/');
  return rest.length === 0 ? !WIRING.has(first!) : !NOT_DOMAIN_FOLDERS.includes(first!);
};

/** Groups of files that import one another, directly or through others (Tarjan's strongly connected components). */
function cycles(edges: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    lowest.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowest.set(node, Math.min(lowest.get(node)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(node, Math.min(lowest.get(node)!, index.get(next)!));
      }
    }
    if (lowest.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || edges.get(node)!.includes(node)) found.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}

test('the scan sees the imports it judges, dynamic and type-only ones included', () => {
  const of = (path: string) => daemonFiles.find((file) => file.path === path)?.imports ?? [];
  assert.ok(of('services.ts').includes('store/stores.ts'), 'services.ts imports store/stores.ts');
  assert.ok(of('store/rotate-master-key.ts').includes('store/postgres/connect.ts'), 'a dynamic import is seen');
  assert.ok(of('dispatch/store.ts').includes('dispatch/types.ts'), 'an `import type` is seen');
  assert.ok(graph.get('bench/run.ts')!.includes('bench/kit.ts'), 'bench/ is scanned');
  assert.ok(daemonFiles.length > 100, `${daemonFiles.length} files under src/daemon`);
});

test('no domain file imports from src/daemon/store/, nor does the configuration', () => {
  const offending = daemonFiles
    .filter((file) => isDomain(file.path))
    .flatMap((file) => file.imports.filter((target) => target.startsWith('store/')).map((target) => `${file.path} imports ${target}`));
  assert.equal(offending, []);
  assert.ok(isDomain('config.ts'), 'config.ts is judged as a domain file');
});

test('no route module imports another', () => {
  const offending = daemonFiles
    .filter((file) => file.path.startsWith('http/routes/'))
    .flatMap((file) => file.imports.filter((target) => target.startsWith('http/routes/')).map((target) => `${file.path} imports ${target}`));
  assert.equal(offending, []);
});

test('no import cycle in src/ or bench/', () => {
  assert.equal(cycles(graph), []);
  // The detector itself finds one.
  assert.equal(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), [['a', 'b', 'c']]);
});

test.run();
