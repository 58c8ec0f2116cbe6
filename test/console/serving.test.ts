import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CONSOLE_DIR } from '../../src/daemon/http/console.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { call } from '../helpers/http.js';

// The console's files come from `npm run build` (vite build), as `npm test` runs it first.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

let t: TestDaemon;
let script: string;

test.before(async () => {
  const assets = readdirSync(join(CONSOLE_DIR, 'assets'));
  script = `/assets/${assets.find((name) => /^index-.+\.js$/.test(name))}`;
  t = await startTestDaemon();
});
test.after(async () => {
  await t.destroy();
});

function assertConsoleHeaders(headers: Headers, cacheControl: string) {
  assert.is(headers.get('content-security-policy'), CSP);
  assert.is(headers.get('x-content-type-options'), 'nosniff');
  assert.is(headers.get('referrer-policy'), 'no-referrer');
  assert.is(headers.get('cache-control'), cacheControl);
}

test('the page is served at / and at every client route, no-cache, with the CSP', async () => {
  for (const path of ['/', '/login', '/marketplace/some-key', '/dead-letters/x?y=1', '/no/such/page']) {
    const result = await fetch(t.url + path);
    const html = await result.text();
    assert.is(result.status, 200, path);
    assert.match(result.headers.get('content-type') ?? '', 'text/html');
    assert.match(html, '<div id="app"></div>');
    assertConsoleHeaders(result.headers, 'no-cache');
  }
});

test('the page holds no inline script or style and loads nothing from another origin', async () => {
  const html = await (await fetch(`${t.url}/`)).text();
  assert.not.match(html, /<script(?![^>]*\ssrc=)[^>]*>/);
  assert.not.match(html, /<style|\sstyle=/);
  assert.not.match(html, /(src|href)="(https?:)?\/\//);
});

test('hashed assets are immutable for a year and revalidate by ETag', async () => {
  const result = await fetch(t.url + script);
  assert.is(result.status, 200);
  assert.match(result.headers.get('content-type') ?? '', 'text/javascript');
  assertConsoleHeaders(result.headers, 'public, max-age=31536000, immutable');
  const etag = result.headers.get('etag');
  assert.ok(etag);
  const again = await fetch(t.url + script, { headers: { 'if-none-match': etag } });
  assert.is(again.status, 304);
});

test('a missing asset is the JSON 404, not the page under a script name', async () => {
  const result = await call(t.url, 'GET', '/assets/index-gone.js');
  assert.is(result.status, 404);
  assert.is(result.body.code, 'NOT_FOUND');
});

test('the API is unchanged: unknown /api paths stay the JSON 404, other methods reach the router', async () => {
  for (const path of ['/api', '/api/', '/api/nothing/here', '/api/console']) {
    const result = await call(t.url, 'GET', path);
    assert.is(result.status, 404, path);
    assert.is(result.body.code, 'NOT_FOUND');
    assert.is(result.headers.get('cache-control'), 'no-store');
    assert.is(result.headers.get('content-security-policy'), null);
  }
  assert.is((await call(t.url, 'GET', '/api/health')).body.data.status, 'ok');
  const post = await call(t.url, 'POST', '/marketplace', { json: {} });
  assert.is(post.status, 404);
  assert.is(post.body.code, 'NOT_FOUND');
});

test('HEAD of the page answers its headers without a body', async () => {
  const result = await fetch(`${t.url}/workspaces`, { method: 'HEAD' });
  assert.is(result.status, 200);
  assertConsoleHeaders(result.headers, 'no-cache');
  assert.is(await result.text(), '');
});

/** A GET as a browser sends it, with this Accept-Encoding, the body as it came over the wire. */
function rawGet(path: string, acceptEncoding: string | null): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, t.url);
    request(url, { headers: acceptEncoding === null ? {} : { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

test('assets are served brotli- or gzip-compressed as the browser accepts, each form with its own ETag', async () => {
  const plain = await rawGet(script, null);
  assert.is(plain.status, 200);
  assert.is(plain.headers['content-encoding'], undefined);
  const brotli = await rawGet(script, 'gzip, deflate, br, zstd');
  assert.is(brotli.headers['content-encoding'], 'br');
  assert.match(String(brotli.headers.vary), /accept-encoding/i);
  assert.ok(brotliDecompressSync(brotli.body).equals(plain.body), 'the same script');
  assert.ok(brotli.body.length < plain.body.length / 2);
  const gzip = await rawGet(script, 'gzip');
  assert.is(gzip.headers['content-encoding'], 'gzip');
  assert.ok(gunzipSync(gzip.body).equals(plain.body));
  assert.is(new Set([plain.headers.etag, brotli.headers.etag, gzip.headers.etag]).size, 3);
  assertConsoleHeaders(new Headers(brotli.headers as Record<string, string>), 'public, max-age=31536000, immutable');
  assert.is((await rawGet(`${script}.br`, 'br')).status, 404, 'a compressed copy is not served by its own name');
});

test('robots.txt tells crawlers to stay out', async () => {
  const robots = await fetch(`${t.url}/robots.txt`);
  assert.is(robots.status, 200);
  assert.match(robots.headers.get('content-type') ?? '', 'text/plain');
  assert.match(await robots.text(), /User-agent: \*\s+Disallow: \//);
});

test('the first load (the page’s own script and styles) is at most 80 KB as served compressed', async () => {
  const html = await (await fetch(`${t.url}/`)).text();
  const loaded = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1]!);
  assert.ok(loaded.length >= 2, loaded.join(', '));
  let bytes = 0;
  for (const asset of loaded) bytes += (await rawGet(asset, 'br')).body.length;
  assert.ok(bytes <= 80 * 1024, `${bytes} bytes`);
});

test('the JS and CSS of the console together stay within 150 KB gzipped', () => {
  const assets = join(CONSOLE_DIR, 'assets');
  const gzipped = readdirSync(assets)
    .filter((name) => /\.(js|css)$/.test(name))
    .reduce((sum, name) => sum + gzipSync(readFileSync(join(assets, name)), { level: 9 }).length, 0);
  assert.ok(gzipped <= 150 * 1024, `${gzipped} bytes gzipped`);
});

test.run();
