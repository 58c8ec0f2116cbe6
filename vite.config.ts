import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import vue from '@vitejs/plugin-vue';
import { defineConfig, type Plugin } from 'vite';
import { endpoints } from './src/contract/endpoints.ts';

/**
 * `virtual:api-routes`: each operation's method and path, read from the
 * endpoint table at build time. The console's client needs no more at run
 * time, so the table's request and answer schemas stay out of the bundle.
 */
function apiRoutes(): Plugin {
  const id = 'virtual:api-routes';
  return {
    name: 'api-routes',
    resolveId: (source) => (source === id ? `\0${id}` : null),
    load(source) {
      if (source !== `\0${id}`) return null;
      const routes = Object.fromEntries(Object.entries(endpoints).map(([operationId, { method, path }]) => [operationId, { method, path }]));
      return `export default ${JSON.stringify(routes)};`;
    },
  };
}

/** What is worth compressing: text, over a kilobyte (smaller files gain less than the headers cost). */
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt)$/;
const MIN_BYTES = 1024;

/**
 * Brotli and gzip copies of every text file of the build (`x.js.br`,
 * `x.js.gz`), made once here at the highest settings, so that the daemon
 * serves the smallest form a browser accepts without compressing anything
 * while it runs (src/daemon/http/console.ts).
 */
function precompressed(): Plugin {
  return {
    name: 'precompressed',
    apply: 'build',
    writeBundle(options, bundle) {
      for (const fileName of Object.keys(bundle)) {
        if (!COMPRESSIBLE.test(fileName)) continue;
        const path = join(options.dir!, fileName);
        const contents = readFileSync(path);
        if (contents.length < MIN_BYTES) continue;
        writeFileSync(`${path}.br`, brotliCompressSync(contents, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: contents.length } }));
        writeFileSync(`${path}.gz`, gzipSync(contents, { level: 9 }));
      }
    },
  };
}

// The web console: built into dist/console, which the daemon serves (src/daemon/http/console.ts).
export default defineConfig({
  root: 'src/console',
  base: '/',
  // Every component uses <script setup>: the Options API is left out of the bundle.
  plugins: [vue({ features: { optionsAPI: false } }), apiRoutes(), precompressed()],
  build: {
    outDir: '../../dist/console',
    emptyOutDir: true,
    // Within the CSP of CONTRACT §10: no inline data: script, no modulepreload polyfill injected into the page.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
