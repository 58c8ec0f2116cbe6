// One POST of a peer's job to the subscriber, as the daemon delivers an event: plain JavaScript, so that
// both peers (bullmq-peer.mjs, run by node; graphile-peer.ts, by tsx) share it.
import { request } from 'node:http';

/** POSTs `body` (JSON text) with `headers`; resolves on a 2xx answer, rejects on any other or a network error. */
export function postJson(url, agent, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } },
      (answer) => {
        answer.resume();
        answer.on('end', () => ((answer.statusCode ?? 0) >= 200 && (answer.statusCode ?? 0) < 300 ? resolve() : reject(new Error(`HTTP ${answer.statusCode}`))));
        answer.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}
