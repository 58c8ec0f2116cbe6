import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, startTestDaemon, type TestDaemon } from './helpers/daemon.js';
import type { Api } from './helpers/http.js';

let t: TestDaemon;
let admin: Api;

test.before(async () => {
  t = await startTestDaemon();
  admin = await t.admin();
});
test.after(async () => {
  await t.destroy();
});

const BROWSE = '/api/marketplace/extensions';
const ADMIN_BASE = '/api/admin/marketplace/extensions';

interface Fixture {
  extensionKey: string;
  name: string;
  description: string;
  category: string;
}

const keysOf = (data: Array<{ extensionKey: string }>) => data.map((item) => item.extensionKey);
const browse = async (query: string) => {
  const result = await t.anon.get(`${BROWSE}?${query}`);
  assert.is(result.status, 200, `${query}: ${result.text}`);
  return result.body;
};
const keys = async (query: string) => keysOf((await browse(query)).data);

const FIXTURES: Fixture[] = [
  { extensionKey: 'weather', name: 'Weather Station', description: 'Forecasts and RAINFALL alerts', category: 'Environment' },
  { extensionKey: 'rain-gauge', name: 'rain gauge', description: 'Measures rainfall per hour', category: 'environment' },
  { extensionKey: 'umbrella', name: 'Umbrella', description: 'Reminds you when rain is coming', category: 'Lifestyle' },
  { extensionKey: 'alpha-b', name: 'Alpha', description: 'the second alpha', category: 'Sorting' },
  { extensionKey: 'zulu', name: 'zulu', description: 'last letter', category: 'sorting' },
  { extensionKey: 'alpha-a', name: 'Alpha', description: 'the first alpha', category: 'SORTING' },
  { extensionKey: 'beta', name: 'Beta', description: 'second letter', category: 'sorting' },
  { extensionKey: 'apple-ext', name: 'apple', description: 'a fruit, lower case', category: 'sorting' },
];

test('fixtures are created', async () => {
  for (const fixture of FIXTURES) assert.is((await admin.post(ADMIN_BASE, fixture)).status, 201, fixture.extensionKey);
});

test('no filter: every extension, sorted by name case-insensitively, then by extensionKey', async () => {
  const body = await browse('');
  assert.equal(keysOf(body.data), ['alpha-a', 'alpha-b', 'apple-ext', 'beta', 'rain-gauge', 'umbrella', 'weather', 'zulu']);
  assert.equal(body.meta, { total: 8, limit: 50, offset: 0 });
});

test('search is case-insensitive and looks at key, name and description', async () => {
  assert.equal(await keys('search=RAIN'), ['rain-gauge', 'umbrella', 'weather']);
  assert.equal(await keys('search=rainfall'), ['rain-gauge', 'weather'], 'RAINFALL in a description matches rainfall');
  assert.equal(await keys('search=n-g'), ['rain-gauge'], 'only the key contains "n-g"');
  assert.equal(await keys('search=station'), ['weather'], 'a name');
  assert.equal(await keys('search=u'), ['apple-ext', 'rain-gauge', 'umbrella', 'zulu'], 'a one-letter term');
  assert.equal(await keys('search=Al'), ['alpha-a', 'alpha-b', 'rain-gauge', 'weather'], 'a two-letter term (rainfall, alerts)');
});

test('every whitespace-separated term must match, each in any of the fields', async () => {
  assert.equal(await keys('search=rain%20hour'), ['rain-gauge']);
  assert.equal(await keys(`search=${encodeURIComponent('  Rain \t  HOUR  ')}`), ['rain-gauge'], 'extra whitespace is ignored');
  assert.equal(await keys('search=gauge%20forecasts'), [], 'the terms are in different extensions');
  assert.equal(await keys('search=rain%20lifestyle'), [], 'the category is not searched');
  assert.equal(await keys('search=%20%20'), await keys(''), 'a blank search is no search');
});

test('category is an exact, case-insensitive match, and combines with search', async () => {
  assert.equal(await keys('category=ENVIRONMENT'), ['rain-gauge', 'weather']);
  assert.equal(await keys('category=environ'), [], 'not a prefix match');
  assert.equal(await keys('category=nothing-here'), []);
  assert.equal(await keys('category=Environment&search=hour'), ['rain-gauge']);
  assert.equal(await keys('category=sorting&search=alpha'), ['alpha-a', 'alpha-b']);
  const umbrella = (await browse('search=umbrella')).data[0];
  assert.is(umbrella.category, 'lifestyle', 'categories are stored in lower case');
});

test('paging: limit and offset, meta {total, limit, offset, nextOffset?, nextCursor?}, bounds 1..500', async () => {
  const page = await browse('category=sorting&limit=2&offset=1');
  assert.equal(keysOf(page.data), ['alpha-b', 'apple-ext']);
  const { nextCursor, ...meta } = page.meta;
  assert.equal(meta, { total: 5, limit: 2, offset: 1, nextOffset: 3 });
  assert.equal(keysOf((await browse(`category=sorting&limit=2&cursor=${nextCursor}`)).data), ['beta', 'zulu'], 'the cursor continues at nextOffset');
  const last = await browse('category=sorting&limit=2&offset=4');
  assert.equal(keysOf(last.data), ['zulu']);
  const beyond = await browse('category=sorting&offset=10');
  assert.equal(beyond.data, []);
  assert.equal(beyond.meta, { total: 5, limit: 50, offset: 10 });
  assert.equal((await browse('limit=500')).meta.limit, 500);
  assert.equal((await browse('limit=1')).data.length, 1);
  for (const query of ['limit=0', 'limit=501', 'limit=-1', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=x', 'limit=1&limit=2']) {
    const result = await t.anon.get(`${BROWSE}?${query}`);
    assert.is(result.status, 400, query);
    assert.is(result.body.code, 'VALIDATION_ERROR', query);
  }
  assert.is((await t.anon.get(`${BROWSE}?search=${'x'.repeat(201)}`)).status, 400, 'a search of more than 200 characters');
  assert.is((await t.anon.get(`${BROWSE}?_=1700000000`)).status, 200, 'unknown parameters (cache busters) are ignored');
});

test('categories: every category with its count, sorted; they follow changes', async () => {
  const categories = async () => (await t.anon.get('/api/marketplace/categories')).body.data;
  assert.equal(await categories(), [
    { category: 'environment', count: 2 },
    { category: 'lifestyle', count: 1 },
    { category: 'sorting', count: 5 },
  ]);
  assert.is((await admin.put(`${ADMIN_BASE}/umbrella`, { category: 'Environment' })).status, 200);
  assert.equal(await categories(), [
    { category: 'environment', count: 3 },
    { category: 'sorting', count: 5 },
  ]);
  assert.equal(await keys('category=lifestyle'), []);
  assert.equal(await keys('category=environment'), ['rain-gauge', 'umbrella', 'weather']);
});

test('listings follow renames and new descriptions at once', async () => {
  assert.equal(await keys('search=rain'), ['rain-gauge', 'umbrella', 'weather']);
  await admin.put(`${ADMIN_BASE}/umbrella`, { description: 'Keeps you dry', name: 'Aardvark Umbrella' });
  assert.equal(await keys('search=rain'), ['rain-gauge', 'weather'], 'the old description no longer matches');
  assert.equal(await keys('search=dry'), ['umbrella']);
  assert.equal((await keys('')).slice(0, 2), ['umbrella', 'alpha-a'], 'the new name sorts first');
  await admin.post(ADMIN_BASE, { extensionKey: 'drizzle', name: 'Drizzle', description: 'light rain' });
  assert.equal(await keys('search=rain'), ['drizzle', 'rain-gauge', 'weather'], 'a new extension appears');
});

// ---- a few thousand extensions, against a plain reference implementation ----

const WORDS = [
  'ledger', 'invoice', 'pipeline', 'deal', 'contact', 'ticket', 'report', 'dashboard', 'metric', 'alert',
  'backup', 'archive', 'folder', 'sync', 'bridge', 'webhook', 'channel', 'message', 'thread', 'calendar',
  'meeting', 'schedule', 'payroll', 'expense', 'budget', 'forecast', 'quota', 'lead', 'campaign', 'survey',
  'form', 'signature', 'contract', 'vault', 'secret', 'audit', 'compliance', 'policy', 'identity', 'token',
  'map', 'route', 'fleet', 'parcel', 'stock', 'order', 'cart', 'coupon', 'review', 'rating',
];
const CATEGORIES = ['Analytics', 'billing', 'COMMUNICATION', 'productivity', 'security', 'storage', 'integrations', 'sales'];

/** A small deterministic generator, so that a failure can be reproduced. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

const rand = random(42);
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const words = (count: number) => Array.from({ length: count }, () => pick(WORDS));
const capitalize = (word: string) => word[0]!.toUpperCase() + word.slice(1);

const BULK = 3000;
let catalog: Fixture[] = [];

function reference(search: string, category?: string): string[] {
  const terms = search.toLowerCase().split(/\s+/).filter(Boolean);
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return catalog
    .filter((item) => category === undefined || item.category === category.toLowerCase())
    .filter((item) =>
      terms.every((term) => [item.extensionKey, item.name, item.description].some((field) => field.toLowerCase().includes(term))),
    )
    .sort(
      (a, b) =>
        compare(a.name.toLowerCase(), b.name.toLowerCase()) || compare(a.name, b.name) || compare(a.extensionKey, b.extensionKey),
    )
    .map((item) => item.extensionKey);
}

async function everyPage(query: string): Promise<{ items: Fixture[]; total: number }> {
  const items: Fixture[] = [];
  let total = 0;
  for (let offset = 0; ; offset += 500) {
    const body = await browse(`${query}&limit=500&offset=${offset}`);
    total = body.meta.total;
    items.push(...body.data);
    if (body.data.length < 500) break;
  }
  return { items, total };
}

function queries(): Array<{ search: string; category?: string }> {
  const list: Array<{ search: string; category?: string }> = [
    { search: '' },
    { search: 'e' },
    { search: 'zz' },
    { search: 'qwertyuiop' },
    { search: 'LEDGER' },
    { search: 'ext-1' },
    { search: 'ext-12' },
    { search: 'ext-2999' },
  ];
  for (let i = 0; i < 25; i += 1) {
    const word = pick(WORDS);
    const start = Math.floor(rand() * (word.length - 1));
    const fragment = word.slice(start, start + 1 + Math.floor(rand() * 5));
    list.push({ search: fragment });
    list.push({ search: `${pick(WORDS)} ${fragment.toUpperCase()}` });
    list.push({ search: `${pick(WORDS)} ${pick(WORDS)} ${pick(WORDS)}` });
    list.push({ search: pick(WORDS), category: pick(CATEGORIES) });
    list.push({ search: '', category: pick(CATEGORIES).toUpperCase() });
  }
  return list;
}

async function compareWithReference(label: string): Promise<void> {
  for (const { search, category } of queries()) {
    const query = `search=${encodeURIComponent(search)}${category === undefined ? '' : `&category=${category}`}`;
    const expected = reference(search, category);
    const body = await browse(`${query}&limit=50`);
    assert.is(body.meta.total, expected.length, `${label}: total of ${query}`);
    assert.equal(keysOf(body.data), expected.slice(0, 50), `${label}: first page of ${query}`);
  }
  for (const query of ['search=', 'search=a', 'category=sales', 'search=or%20re']) {
    const { items, total } = await everyPage(query);
    const [search, category] = [new URLSearchParams(query).get('search') ?? '', new URLSearchParams(query).get('category') ?? undefined];
    const expected = reference(search, category);
    assert.is(total, expected.length, `${label}: total of ${query}`);
    assert.equal(keysOf(items), expected, `${label}: every page of ${query}`);
  }
}

test(`search over ${BULK} more extensions answers exactly what a full scan finds`, async () => {
  const { catalog: service, auth } = t.daemon.services;
  const actor = (await auth.users.findByEmail(ADMIN.email))!;
  const generated: Fixture[] = Array.from({ length: BULK }, (_, i) => ({
    extensionKey: `ext-${i}-${pick(WORDS)}`,
    name: words(1 + Math.floor(rand() * 3))
      .map((word) => (rand() < 0.5 ? capitalize(word) : word))
      .join(' '),
    description: words(4 + Math.floor(rand() * 8)).join(' '),
    category: pick(CATEGORIES),
  }));
  for (let i = 0; i < generated.length; i += 250) {
    await Promise.all(generated.slice(i, i + 250).map((fixture) => service.create(actor, fixture)));
  }
  const listed = await everyPage('search=');
  assert.is(listed.total, BULK + FIXTURES.length + 1);
  catalog = listed.items.map(({ extensionKey, name, description, category }) => ({ extensionKey, name, description, category }));
  await compareWithReference('fresh');
});

test('after renames and new descriptions the results still match a full scan', async () => {
  for (let i = 0; i < 200; i += 1) {
    const item = pick(catalog);
    const change = { name: `${capitalize(pick(WORDS))} ${pick(WORDS)}`, description: words(5).join(' ') };
    assert.is((await admin.put(`${ADMIN_BASE}/${item.extensionKey}`, change)).status, 200);
    Object.assign(item, change);
  }
  await compareWithReference('renamed');
});

test('after a restart the rebuilt index answers the same', async () => {
  t = await t.restart();
  await compareWithReference('restarted');
});

test.run();
