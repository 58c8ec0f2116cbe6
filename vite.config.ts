import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vite';

// The web console: built into dist/console, which the daemon serves (src/daemon/http/console.ts).
export default defineConfig({
  root: 'src/console',
  base: '/',
  // Every component uses <script setup>: the Options API is left out of the bundle.
  plugins: [vue({ features: { optionsAPI: false } })],
  build: {
    outDir: '../../dist/console',
    emptyOutDir: true,
    // Within the CSP of CONTRACT §10: no inline data: script, no modulepreload polyfill injected into the page.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
});
