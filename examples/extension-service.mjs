// An extension's own service, with nothing but Node: it receives the deliveries
// of its subscriptions, verifies each one (Standard Webhooks: an HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<raw body>" with the subscription's signing
// secret), and publishes an event back with its installation token.
//
//   PLATFORM_URL=http://127.0.0.1:8080 SIGNING_SECRET=whsec_… INSTALLATION_TOKEN=pli_… \
//     node examples/extension-service.mjs
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const { PLATFORM_URL, SIGNING_SECRET, INSTALLATION_TOKEN, PORT = '8090' } = process.env;
const key = Buffer.from(SIGNING_SECRET.replace(/^whsec_/, ''), 'base64');
const TOLERANCE_SECONDS = 300;

/** Whether the platform sent these bytes: one of the signatures matches, and the timestamp is recent (no replays). */
function isSigned(headers, body) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  if (!id || !timestamp || Math.abs(Date.now() / 1000 - Number(timestamp)) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  // During a secret rotation the header carries two signatures, space-separated.
  return (headers['webhook-signature'] ?? '').split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    const given = Buffer.from(signature ?? '', 'base64');
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** Publishes with the installation token; the Idempotency-Key makes a retry of the same delivery publish once. */
async function publish(workspaceId, eventKey, payload, idempotencyKey) {
  const answer = await fetch(`${PLATFORM_URL}/api/workspaces/${workspaceId}/events/publish`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INSTALLATION_TOKEN}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    body: JSON.stringify({ eventKey, payload }),
  });
  if (!answer.ok) console.error(`publish ${eventKey}: ${answer.status} ${await answer.text()}`);
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    if (req.method !== 'POST' || req.url !== '/events') return res.writeHead(404).end();
    if (!isSigned(req.headers, body)) return res.writeHead(401).end();
    const event = JSON.parse(body.toString('utf8'));
    // A 2xx says "received"; a 5xx or no answer makes the platform retry later.
    res.writeHead(204).end();
    if (event.eventKey === 'shop.order.paid') {
      const { orderId, customer } = event.payload;
      await publish(event.workspaceId, 'crm-sync.customer.updated', { customer, lastOrderId: orderId }, req.headers['webhook-id']);
    }
  });
});
server.listen(Number(PORT), '127.0.0.1', () => console.log(`extension service listening on http://127.0.0.1:${server.address().port}`));
