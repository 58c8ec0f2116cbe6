// The bare baseline: h3 on a node:http server, as the daemon serves it, one route
// returning a small JSON body. Every throughput is also reported against it.
import { createServer } from 'node:http';
import { createApp, createRouter, defineEventHandler, toNodeListener } from 'h3';

const router = createRouter().get(
  '/baseline',
  defineEventHandler(() => ({ code: 'SUCCESS', message: null, data: { status: 'ok' }, meta: null, timestamp: new Date().toISOString() })),
);
const server = createServer({ keepAliveTimeout: 5_000 }, toNodeListener(createApp().use(router)));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`baseline listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
