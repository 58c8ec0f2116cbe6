// The bare baseline: h3 served by listhen exactly as the daemon is, one route
// returning a small JSON body. Every throughput is also reported against it.
import { createApp, createRouter, defineEventHandler, toNodeListener } from 'h3';
import { listen } from 'listhen';

const router = createRouter().get(
  '/baseline',
  defineEventHandler(() => ({ code: 'SUCCESS', message: null, data: { status: 'ok' }, meta: null, timestamp: new Date().toISOString() })),
);
const app = createApp().use(router);
const listener = await listen(toNodeListener(app), {
  port: { port: 0, random: true },
  hostname: '127.0.0.1',
  isProd: true,
  showURL: false,
  autoClose: false,
});
process.stdout.write(`baseline listening on ${listener.url.replace(/\/$/, '')}\n`);
process.on('SIGTERM', () => process.exit(0));
