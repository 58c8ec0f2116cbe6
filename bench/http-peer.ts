/**
 * Group 19 (`--only peer`): the platform beside what a team would build
 * instead, on the same cores: an HTTP service that authenticates a publish
 * (bearer JWT), validates it and adds it to BullMQ, with a BullMQ worker
 * POSTing each event, signed, to the subscriber (bench/http-bullmq-peer.mjs),
 * Redis syncing its append-only file every second. The system under test
 * (daemon, or peer and Redis) runs on core 0 when the bench is pinned; the
 * load and the subscriber on core 1. Same load generator, connections and
 * subscriber for both; raw BullMQ (producers adding jobs in-process, no HTTP)
 * is the second reference.
 *
 *  - 19a: scenario 4 (publish + deliver, 50 connections) against the peer.
 *  - 19b: scenario 4 against raw BullMQ's single producer.
 *  - 19c: scenario 5 (paced 2,000 events/s) publish-to-delivery p99 against the peer's.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { bullmqMissing, bullRound, closeSubscriber, emptyTally, oursRound, rateOf, round, startRedis, type Tally } from './backlog.js';
import { subscribe, type BenchKit, type Load, type Subscriber } from './kit.js';
import { startPeerProcess } from './peer-process.js';

const PEER = fileURLToPath(new URL('http-bullmq-peer.mjs', import.meta.url));
const BODY = JSON.stringify({ eventKey: 'bench.tick', payload: { dealId: 'D-1', amount: 1200, currency: 'EUR' } });
const PACED_RATE = 2000;

interface HttpPeer {
  url: string;
  token: string;
  pids: () => number[];
  stop(): Promise<void>;
}

/** Redis and the peer on the daemon's core, delivering to `subscriberUrl`; a token it accepts. */
async function startHttpPeer(kit: BenchKit, subscriberUrl: string): Promise<HttpPeer> {
  const redis = (await startRedis(kit))!;
  const jwtSecret = randomBytes(32).toString('base64url');
  const peer = await startPeerProcess<{ type: 'stop' }, never>(
    'HTTP + BullMQ peer',
    [process.execPath, PEER],
    {
      PEER_REDIS_PORT: String(redis.port),
      PEER_SUBSCRIBER_URL: subscriberUrl,
      PEER_JWT_SECRET: jwtSecret,
      PEER_SIGNING_SECRET: randomBytes(32).toString('base64'),
    },
    kit.PINNED,
  );
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('bench')
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(jwtSecret));
  return {
    url: (peer.greeting as { url: string }).url,
    token,
    pids: () => [peer.child.pid!, redis.process.pid!],
    async stop() {
      await peer.stop();
      await redis.stop();
    },
  };
}

const publishOptions = (url: string, token: string) => ({
  url: `${url}/api/workspaces/bench/events/publish`,
  method: 'POST' as const,
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: BODY,
  connections: 50,
});

async function peerRound(kit: BenchKit, seconds: number, tally: Tally): Promise<void> {
  const subscriber = await kit.startSubscriber();
  const peer = await startHttpPeer(kit, subscriber.url);
  try {
    await round(kit, subscriber, (duration) => kit.load({ ...publishOptions(peer.url, peer.token), duration }), peer.pids, seconds, tally);
  } finally {
    await peer.stop();
    closeSubscriber(subscriber);
  }
}

/** Publishes PACED_RATE events/s for `seconds` after a warm-up; each event's publish-to-delivery latency. */
async function paced(kit: BenchKit, subscriber: Subscriber, url: string, token: string, seconds: number): Promise<number[]> {
  await kit.load({ ...publishOptions(url, token), duration: 1 });
  await kit.waitUntil(() => performance.now() - subscriber.lastAt > 300, 30_000);
  subscriber.latencies.length = 0;
  const before = subscriber.received;
  const load: Load = await kit.load({
    ...publishOptions(url, token),
    connections: 20,
    duration: seconds,
    overallRate: PACED_RATE,
    requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ eventKey: 'bench.tick', payload: { sentAt: Date.now(), dealId: 'D-2' } }) }) }],
  });
  await kit.waitUntil(() => subscriber.received - before >= load.ok, 30_000);
  return [...subscriber.latencies];
}

async function pacedOurs(kit: BenchKit, seconds: number): Promise<number[]> {
  const subscriber = await kit.startSubscriber();
  const daemon = await kit.startDaemon();
  try {
    return await paced(kit, subscriber, daemon.url, await subscribe(kit, daemon, subscriber.url), seconds);
  } finally {
    await daemon.stop();
    rmSync(daemon.dataDir, { recursive: true, force: true });
    closeSubscriber(subscriber);
  }
}

async function pacedPeer(kit: BenchKit, seconds: number): Promise<number[]> {
  const subscriber = await kit.startSubscriber();
  const peer = await startHttpPeer(kit, subscriber.url);
  try {
    return await paced(kit, subscriber, peer.url, peer.token, seconds);
  } finally {
    await peer.stop();
    closeSubscriber(subscriber);
  }
}

const perEvent = (tally: Tally) => Math.round((tally.cpuMs * 1000) / Math.max(1, tally.delivered));

export async function measureHttpPeer(base: Load, kit: BenchKit): Promise<void> {
  const missing = bullmqMissing();
  if (missing) {
    console.error(`17: the HTTP + BullMQ peer is not measured: ${missing}`);
    return;
  }
  const rounds = kit.QUICK ? 1 : 2;
  const seconds = kit.PUBLISH_SECONDS / (2 * rounds);
  const tallies = { ours: emptyTally(), peer: emptyTally(), bull: emptyTally() };
  for (let n = 0; n < rounds; n += 1) {
    // Alternated, so that drift in the shared machine's load falls on every contender alike.
    const order = (['ours', 'peer', 'bull'] as const).slice();
    if (n % 2 === 1) order.reverse();
    for (const name of order) {
      if (name === 'ours') await oursRound(kit, seconds, tallies.ours);
      else if (name === 'peer') await peerRound(kit, seconds, tallies.peer);
      else await bullRound(kit, seconds, tallies.bull);
    }
  }
  const [ours, peer, bull] = [rateOf(tallies.ours), rateOf(tallies.peer), rateOf(tallies.bull)];
  const length = `${rounds} x ${seconds} s each, alternated`;
  const allDelivered = Object.values(tallies).every((tally) => tally.drained && tally.errors === 0);
  const undelivered = Object.entries(tallies)
    .filter(([, tally]) => !tally.drained || tally.errors > 0)
    .map(([name, tally]) => `${name}: ${tally.produced} acknowledged, ${tally.delivered} delivered, ${tally.errors} errors${tally.drained ? '' : ', NOT all delivered within 60 s'}`);
  const caveat = undelivered.length === 0 ? '' : ` (${undelivered.join('; ')})`;
  kit.record({
    scenario: `19a. scenario 4 vs an HTTP + BullMQ service (JWT, validation, queue.add; a worker POSTs signed), ${length}`,
    value: Math.round((ours / peer) * 100) / 100,
    unit: `x the peer's delivered events/s (${ours.toLocaleString('en')} vs ${peer.toLocaleString('en')})`,
    p50: null,
    p99: null,
    ratio: ours / base.rps,
    rssMb: null,
    target: '>= 1.3x',
    met: ours >= 1.3 * peer && allDelivered,
    note: `CPU per event: ours ${perEvent(tallies.ours)} µs (daemon), peer ${perEvent(tallies.peer)} µs (service + Redis); every event fsynced before its answer in ours, Redis syncs every second${caveat}`,
  });
  kit.record({
    scenario: `19b. scenario 4 vs raw BullMQ (50 producers adding jobs in-process, no HTTP), ${length}`,
    value: Math.round((ours / bull) * 100) / 100,
    unit: `x BullMQ's delivered jobs/s (${bull.toLocaleString('en')})`,
    p50: null,
    p99: null,
    ratio: ours / base.rps,
    rssMb: null,
    target: '>= 1.0x',
    met: ours >= bull && allDelivered,
    note: `BullMQ ${perEvent(tallies.bull)} µs of peer + Redis CPU per job${caveat}`,
  });

  const pacedSeconds = kit.QUICK ? 3 : 5;
  const latencies = { ours: [] as number[], peer: [] as number[] };
  for (let n = 0; n < rounds; n += 1) {
    const order = n % 2 === 0 ? (['ours', 'peer'] as const) : (['peer', 'ours'] as const);
    for (const name of order) latencies[name].push(...(name === 'ours' ? await pacedOurs(kit, pacedSeconds) : await pacedPeer(kit, pacedSeconds)));
  }
  const p99 = (values: number[]) => kit.percentile(values, 99);
  const p50 = (values: number[]) => kit.percentile(values, 50);
  kit.record({
    scenario: `19c. paced ${PACED_RATE.toLocaleString('en')} events/s: publish-to-delivery p99, ours vs the HTTP + BullMQ peer, ${rounds} x ${pacedSeconds} s`,
    value: p99(latencies.ours),
    unit: 'ms p99',
    p50: p50(latencies.ours),
    p99: p99(latencies.ours),
    ratio: null,
    rssMb: null,
    target: `<= the peer's (${p99(latencies.peer)} ms, p50 ${p50(latencies.peer)} ms) and <= 25 ms`,
    met: p99(latencies.ours) <= p99(latencies.peer) && p99(latencies.ours) <= 25,
    note: `${latencies.ours.length} and ${latencies.peer.length} deliveries timed`,
  });
}
