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

// The web console: built into dist/console, which the daemon serves (src/daemon/http/console.ts).
export default defineConfig({
  root: 'src/console',
  base: '/',
  // Every component uses <script setup>: the Options API is left out of the bundle.
  plugins: [vue({ features: { optionsAPI: false } }), apiRoutes()],
  build: {
    outDir: '../../dist/console',
    emptyOutDir: true,
    // Within the CSP of CONTRACT §10: no inline data: script, no modulepreload polyfill injected into the page.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
