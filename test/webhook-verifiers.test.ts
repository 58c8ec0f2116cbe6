import { createHmac } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  ReplayCache,
  REPLAY_WINDOW_MS,
  requireVerifier,
  signGithub,
  signHmacSha256,
  signSlack,
  signStandardWebhook,
  signStripe,
  verifierFor,
  WEBHOOK_SCHEMES,
  WebhookConfigError,
  WebhookRejectedError,
  type VerifierSettings,
  type VerifyContext,
  type VerifyResult,
  type WebhookScheme,
} from '../src/handlers/webhooks/index.js';

// Signatures in this file are computed here with node:crypto, independently of
// the signers under test, so a shared mistake cannot make both sides agree.

const NOW = 1_700_000_000; // seconds
const UNUSUAL_BODY = Buffer.from('{ "b":1,\n  "a" : [ 2 ,3 ],\t"c": "caf\u00e9" }\r\n', 'utf8');

const hmac = (key: string | Buffer, ...parts: (string | Buffer)[]) =>
  createHmac('sha256', key).update(Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)))).digest();

const clockAt = (seconds: number) => () => seconds * 1000;

function contextAt(seconds: number, cache = new ReplayCache(REPLAY_WINDOW_MS, clockAt(seconds)), scope = 'ext-a'): VerifyContext {
  return { now: clockAt(seconds), replay: { cache, scope } };
}

function verify(
  scheme: WebhookScheme,
  body: Buffer,
  headers: Record<string, string>,
  settings: VerifierSettings,
  context = contextAt(NOW),
): VerifyResult {
  return requireVerifier(scheme)({ rawBody: body, headers }, settings, context);
}

function thrown(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

function rejected(action: () => unknown): WebhookRejectedError {
  const error = thrown(action);
  assert.instance(error, WebhookRejectedError, 'expected a WEBHOOK_REJECTED error');
  assert.is((error as WebhookRejectedError).code, 'WEBHOOK_REJECTED');
  return error as WebhookRejectedError;
}

function configFailed(action: () => unknown): WebhookConfigError {
  const error = thrown(action);
  assert.instance(error, WebhookConfigError, 'expected a configuration error');
  assert.is((error as WebhookConfigError).code, 'WEBHOOK_FAILED');
  return error as WebhookConfigError;
}

function flipOneByte(body: Buffer): Buffer {
  const changed = Buffer.from(body);
  const middle = Math.floor(changed.length / 2);
  changed[middle] = changed[middle]! ^ 0x01;
  return changed;
}

function without(headers: Record<string, string>, name: string): Record<string, string> {
  const { [name]: _removed, ...rest } = headers;
  return rest;
}

// ---------------------------------------------------------------------------
// Behaviour every scheme shares, driven by one fixture per scheme.

interface Fixture {
  scheme: WebhookScheme;
  secret: string;
  otherSecret: string;
  settings(secret: string): VerifierSettings;
  headers(secret: string, body: Buffer, timestamp: number | string): Record<string, string>;
  /** Each of these missing must be a rejection naming it. */
  required: string[];
  timestamped: boolean;
  signsBody: boolean;
}

let messageCounter = 0;
const standardWebhooksKey = Buffer.from('standard webhooks test key, 32 b');
const standardWebhooksSecret = `whsec_${standardWebhooksKey.toString('base64')}`;

const FIXTURES: Fixture[] = [
  {
    scheme: 'hmac-sha256',
    secret: 'hmac shared secret',
    otherSecret: 'another secret',
    settings: (secret) => ({ secret, header: 'x-signature' }),
    headers: (secret, body) => ({ 'x-signature': hmac(secret, body).toString('hex') }),
    required: ['x-signature'],
    timestamped: false,
    signsBody: true,
  },
  {
    scheme: 'github',
    secret: 'github webhook secret',
    otherSecret: 'another secret',
    settings: (secret) => ({ secret }),
    headers: (secret, body) => ({ 'x-hub-signature-256': `sha256=${hmac(secret, body).toString('hex')}` }),
    required: ['x-hub-signature-256'],
    timestamped: false,
    signsBody: true,
  },
  {
    scheme: 'stripe',
    secret: 'whsec_stripeEndpointSecret123',
    otherSecret: 'whsec_another',
    settings: (secret) => ({ secret }),
    headers: (secret, body, t) => ({ 'stripe-signature': `t=${t},v1=${hmac(secret, `${t}.`, body).toString('hex')}` }),
    required: ['stripe-signature'],
    timestamped: true,
    signsBody: true,
  },
  {
    scheme: 'slack',
    secret: 'slack signing secret 0123456789',
    otherSecret: 'another secret',
    settings: (secret) => ({ secret }),
    headers: (secret, body, t) => ({
      'x-slack-signature': `v0=${hmac(secret, `v0:${t}:`, body).toString('hex')}`,
      'x-slack-request-timestamp': String(t),
    }),
    required: ['x-slack-signature', 'x-slack-request-timestamp'],
    timestamped: true,
    signsBody: true,
  },
  {
    scheme: 'standard-webhooks',
    secret: standardWebhooksSecret,
    otherSecret: `whsec_${Buffer.from('another key').toString('base64')}`,
    settings: (secret) => ({ secret }),
    headers: (secret, body, t) => {
      const id = `msg_${++messageCounter}`;
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      return {
        'webhook-id': id,
        'webhook-timestamp': String(t),
        'webhook-signature': `v1,${hmac(key, `${id}.${t}.`, body).toString('base64')}`,
      };
    },
    required: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
    timestamped: true,
    signsBody: true,
  },
  {
    scheme: 'api-key',
    secret: 'api key 7f3c9a',
    otherSecret: 'api key 7f3c9b',
    settings: (secret) => ({ secret, header: 'x-api-key' }),
    headers: (secret) => ({ 'x-api-key': secret }),
    required: ['x-api-key'],
    timestamped: false,
    signsBody: false,
  },
];

test('every scheme of the contract has a fixture here', () => {
  assert.equal(FIXTURES.map((fixture) => fixture.scheme).sort(), [...WEBHOOK_SCHEMES].sort());
});

for (const fixture of FIXTURES) {
  const { scheme, secret } = fixture;
  const settings = fixture.settings(secret);
  const body = Buffer.from('{"event":"ping","n":1}');

  test(`${scheme}: accepts a correctly signed call`, () => {
    assert.equal(verify(scheme, body, fixture.headers(secret, body, NOW), settings), { accepted: true, duplicate: false });
  });

  test(`${scheme}: verifies the raw bytes as sent (whitespace, key order, CRLF, UTF-8), not a re-serialisation`, () => {
    assert.equal(verify(scheme, UNUSUAL_BODY, fixture.headers(secret, UNUSUAL_BODY, NOW), settings).accepted, true);
    if (!fixture.signsBody) return;
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(UNUSUAL_BODY.toString('utf8'))));
    rejected(() => verify(scheme, reserialised, fixture.headers(secret, UNUSUAL_BODY, NOW), settings));
  });

  test(`${scheme}: rejects a call authenticated with another secret`, () => {
    rejected(() => verify(scheme, body, fixture.headers(fixture.otherSecret, body, NOW), settings));
  });

  for (const header of fixture.required) {
    test(`${scheme}: rejects a call without ${header}, naming the header`, () => {
      const error = rejected(() => verify(scheme, body, without(fixture.headers(secret, body, NOW), header), settings));
      assert.match(error.message, header);
    });

    test(`${scheme}: rejects an empty ${header}`, () => {
      rejected(() => verify(scheme, body, { ...fixture.headers(secret, body, NOW), [header]: '' }, settings));
    });
  }

  if (fixture.signsBody) {
    test(`${scheme}: rejects a body changed by one byte`, () => {
      rejected(() => verify(scheme, flipOneByte(body), fixture.headers(secret, body, NOW), settings));
    });
  } else {
    test(`${scheme}: authenticates the sender only; the body is not covered`, () => {
      assert.equal(verify(scheme, flipOneByte(body), fixture.headers(secret, body, NOW), settings).accepted, true);
    });
  }

  test(`${scheme}: an empty secret is a configuration error, not a rejection`, () => {
    configFailed(() => verify(scheme, body, fixture.headers(secret, body, NOW), { ...settings, secret: '' }));
  });

  test(`${scheme}: rejection messages never contain the secret or anything shaped like a signature`, () => {
    const genuine = fixture.headers(secret, body, NOW);
    type Attempt = [sent: Buffer, headers: Record<string, string>];
    const attempts: Attempt[] = [
      [body, fixture.headers(fixture.otherSecret, body, NOW)],
      ...(fixture.signsBody ? [[flipOneByte(body), genuine] satisfies Attempt] : []),
      ...fixture.required.map((header): Attempt => [body, without(genuine, header)]),
      ...fixture.required.map((header): Attempt => [body, { ...genuine, [header]: `${genuine[header]}0` }]),
    ];
    for (const [sent, headers] of attempts) {
      const { message } = rejected(() => verify(scheme, sent, headers, settings));
      assert.not.ok(message.includes(secret), `"${message}" discloses the secret`);
      assert.not.match(message, /[0-9a-f]{32}|[A-Za-z0-9+/]{40}/i, `"${message}" discloses a digest`);
    }
  });

  if (fixture.timestamped) {
    test(`${scheme}: accepts a timestamp 299 s old or 299 s ahead`, () => {
      assert.equal(verify(scheme, body, fixture.headers(secret, body, NOW - 299), settings).accepted, true);
      assert.equal(verify(scheme, body, fixture.headers(secret, body, NOW + 299), settings).accepted, true);
    });

    test(`${scheme}: rejects a correctly signed call 301 s old`, () => {
      const error = rejected(() => verify(scheme, body, fixture.headers(secret, body, NOW - 301), settings));
      assert.match(error.message, 'tolerance');
    });

    test(`${scheme}: rejects a correctly signed call 301 s in the future`, () => {
      const error = rejected(() => verify(scheme, body, fixture.headers(secret, body, NOW + 301), settings));
      assert.match(error.message, 'tolerance');
    });

    test(`${scheme}: rejects a garbled timestamp even when the signature covers it`, () => {
      // '17e8' and '0x6553f100' are NOW in disguise: only the format check can refuse them.
      for (const garbled of ['', 'soon', '17e8', '0x6553f100', '1700000000.5', '+1700000000', '-1700000000']) {
        rejected(() => verify(scheme, body, fixture.headers(secret, body, garbled), settings));
      }
    });

    test(`${scheme}: the timestamp is signed: moving it invalidates the signature`, () => {
      const headers = fixture.headers(secret, body, NOW);
      const moved = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, value.replace(String(NOW), String(NOW + 1))]));
      assert.is.not(JSON.stringify(moved), JSON.stringify(headers));
      rejected(() => verify(scheme, body, moved, settings));
    });
  }
}

// ---------------------------------------------------------------------------
// hmac-sha256

const HMAC_SECRET = 'hmac shared secret';
const hmacSettings: VerifierSettings = { secret: HMAC_SECRET, header: 'x-signature' };
const hmacBody = Buffer.from('{"id":42}');
const hmacHex = hmac(HMAC_SECRET, hmacBody).toString('hex');

test('hmac-sha256: accepts bare hex and sha256=-prefixed hex', () => {
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex }, hmacSettings).accepted);
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': `sha256=${hmacHex}` }, hmacSettings).accepted);
});

test('hmac-sha256: hex and the prefix are case-insensitive (the decoded bytes are compared)', () => {
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex.toUpperCase() }, hmacSettings).accepted);
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': `SHA256=${hmacHex.toUpperCase()}` }, hmacSettings).accepted);
});

test('hmac-sha256: the configured header name is matched whatever its case', () => {
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex }, { ...hmacSettings, header: 'X-Signature' }).accepted);
});

test('hmac-sha256: rejects a truncated, non-hex or base64 signature', () => {
  const base64 = hmac(HMAC_SECRET, hmacBody).toString('base64');
  for (const value of [hmacHex.slice(0, 63), `${hmacHex}00`, `${hmacHex.slice(0, 63)}g`, base64, 'sha256=']) {
    rejected(() => verify('hmac-sha256', hmacBody, { 'x-signature': value }, hmacSettings));
  }
});

test('hmac-sha256: reads only the configured header', () => {
  rejected(() => verify('hmac-sha256', hmacBody, { 'x-hub-signature-256': `sha256=${hmacHex}` }, hmacSettings));
});

test('hmac-sha256: a missing header setting is a configuration error', () => {
  for (const header of [undefined, '', '  ']) {
    const settings = header === undefined ? { secret: HMAC_SECRET } : { secret: HMAC_SECRET, header };
    const error = configFailed(() => verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex }, settings));
    assert.match(error.message, 'webhook.header');
  }
});

test('hmac-sha256: a header setting naming an Object.prototype member does not resolve to it', () => {
  rejected(() => verify('hmac-sha256', hmacBody, {}, { secret: HMAC_SECRET, header: 'constructor' }));
});

test('hmac-sha256: accepts GitHub\'s documented vector bare and prefixed', () => {
  const settings = { secret: "It's a Secret to Everybody", header: 'x-hub-signature-256' };
  const body = Buffer.from('Hello, World!');
  const hex = '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
  assert.ok(verify('hmac-sha256', body, { 'x-hub-signature-256': hex }, settings).accepted);
  assert.ok(verify('hmac-sha256', body, { 'x-hub-signature-256': `sha256=${hex}` }, settings).accepted);
  assert.is(signHmacSha256(settings.secret, body), hex);
});

// ---------------------------------------------------------------------------
// github

const GITHUB_VECTOR = {
  secret: "It's a Secret to Everybody",
  body: Buffer.from('Hello, World!'),
  signature: 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
};
const verifyGithubVector = (signature: string) =>
  verify('github', GITHUB_VECTOR.body, { 'x-hub-signature-256': signature }, { secret: GITHUB_VECTOR.secret });

test('github: accepts the vector from GitHub\'s "Validating webhook deliveries"', () => {
  assert.ok(verifyGithubVector(GITHUB_VECTOR.signature).accepted);
});

test('github: signGithub reproduces GitHub\'s vector', () => {
  assert.is(signGithub(GITHUB_VECTOR.secret, GITHUB_VECTOR.body), GITHUB_VECTOR.signature);
});

test('github: uppercase hex is accepted, a bare digest without sha256= is not', () => {
  const hex = GITHUB_VECTOR.signature.slice('sha256='.length);
  assert.ok(verifyGithubVector(`sha256=${hex.toUpperCase()}`).accepted);
  rejected(() => verifyGithubVector(hex));
});

test('github: the legacy SHA-1 header alone is not enough', () => {
  const sha1 = `sha1=${createHmac('sha1', GITHUB_VECTOR.secret).update(GITHUB_VECTOR.body).digest('hex')}`;
  const error = rejected(() => verify('github', GITHUB_VECTOR.body, { 'x-hub-signature': sha1 }, { secret: GITHUB_VECTOR.secret }));
  assert.match(error.message, 'x-hub-signature-256');
});

// ---------------------------------------------------------------------------
// stripe

const STRIPE_SECRET = 'whsec_stripeEndpointSecret123';
const stripeBody = Buffer.from('{\n  "id": "evt_1", "type": "charge.succeeded"\n}');
const stripeV1 = (secret: string, t: number, body = stripeBody) => hmac(secret, `${t}.`, body).toString('hex');
const verifyStripeHeader = (header: string, now = NOW) =>
  verify('stripe', stripeBody, { 'stripe-signature': header }, { secret: STRIPE_SECRET }, contextAt(now));

test('stripe: signStripe matches Stripe\'s documented construction', () => {
  assert.is(signStripe(STRIPE_SECRET, NOW, stripeBody), `t=${NOW},v1=${stripeV1(STRIPE_SECRET, NOW)}`);
});

test('stripe: the endpoint secret is the HMAC key as is, whsec_ prefix included', () => {
  const decodedKey = Buffer.from(STRIPE_SECRET.slice('whsec_'.length), 'base64');
  rejected(() => verifyStripeHeader(`t=${NOW},v1=${hmac(decodedKey, `${NOW}.`, stripeBody).toString('hex')}`));
});

test('stripe: accepts several v1 signatures when one matches (secret rotation), wherever it stands', () => {
  const good = stripeV1(STRIPE_SECRET, NOW);
  const old = stripeV1('whsec_previous', NOW);
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${old},v1=${good}`).accepted);
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${good},v1=${old},v0=${old}`).accepted);
  assert.ok(verifyStripeHeader(`t=${NOW}, v1=${good}, v0=${old}`).accepted, 'spaces after commas are tolerated');
});

test('stripe: rejects several v1 signatures when none matches', () => {
  rejected(() => verifyStripeHeader(`t=${NOW},v1=${stripeV1('whsec_a', NOW)},v1=${stripeV1('whsec_b', NOW)}`));
});

test('stripe: a header with only v0 is rejected, even when v0 carries the right digest', () => {
  const error = rejected(() => verifyStripeHeader(`t=${NOW},v0=${stripeV1(STRIPE_SECRET, NOW)}`));
  assert.match(error.message, 'v1');
});

test('stripe: a missing or repeated t= is rejected', () => {
  const good = stripeV1(STRIPE_SECRET, NOW);
  rejected(() => verifyStripeHeader(`v1=${good}`));
  rejected(() => verifyStripeHeader(`t=${NOW},t=${NOW - 1000},v1=${good}`));
});

test('stripe: uppercase hex in v1 is accepted', () => {
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${stripeV1(STRIPE_SECRET, NOW).toUpperCase()}`).accepted);
});

// ---------------------------------------------------------------------------
// slack

const SLACK_VECTOR = {
  secret: '8f742231b10e8888abcd99yyyzzz85a5',
  timestamp: 1531420618,
  body: Buffer.from(
    'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
  ),
  signature: 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
};
const slackVectorHeaders = { 'x-slack-signature': SLACK_VECTOR.signature, 'x-slack-request-timestamp': String(SLACK_VECTOR.timestamp) };

test('slack: accepts the vector from Slack\'s "Verifying requests from Slack" at its own time', () => {
  const settings = { secret: SLACK_VECTOR.secret };
  assert.ok(verify('slack', SLACK_VECTOR.body, slackVectorHeaders, settings, contextAt(SLACK_VECTOR.timestamp + 10)).accepted);
});

test('slack: the same vector is stale today', () => {
  rejected(() => verify('slack', SLACK_VECTOR.body, slackVectorHeaders, { secret: SLACK_VECTOR.secret }, contextAt(NOW)));
});

test('slack: signSlack reproduces Slack\'s vector', () => {
  assert.is(signSlack(SLACK_VECTOR.secret, SLACK_VECTOR.timestamp, SLACK_VECTOR.body), SLACK_VECTOR.signature);
});

test('slack: a signature without the v0= version is rejected', () => {
  const headers = { ...slackVectorHeaders, 'x-slack-signature': SLACK_VECTOR.signature.slice('v0='.length) };
  rejected(() => verify('slack', SLACK_VECTOR.body, headers, { secret: SLACK_VECTOR.secret }, contextAt(SLACK_VECTOR.timestamp)));
});

// ---------------------------------------------------------------------------
// standard-webhooks

const SW_VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: Buffer.from('{"test": 2432232314}'),
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const swVectorHeaders = (signature = SW_VECTOR.signature) => ({
  'webhook-id': SW_VECTOR.id,
  'webhook-timestamp': String(SW_VECTOR.timestamp),
  'webhook-signature': signature,
});
const verifySwVector = (headers: Record<string, string>, secret = SW_VECTOR.secret) =>
  verify('standard-webhooks', SW_VECTOR.body, headers, { secret }, contextAt(SW_VECTOR.timestamp));

test('standard-webhooks: accepts the reference libraries\' test vector with a clock at its timestamp', () => {
  assert.equal(verifySwVector(swVectorHeaders()), { accepted: true, duplicate: false });
});

test('standard-webhooks: a secret without the whsec_ prefix is read as base64 too', () => {
  assert.ok(verifySwVector(swVectorHeaders(), SW_VECTOR.secret.slice('whsec_'.length)).accepted);
});

test('standard-webhooks: signStandardWebhook reproduces the reference vector', () => {
  assert.is(signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, SW_VECTOR.timestamp, SW_VECTOR.body), SW_VECTOR.signature);
  assert.is(signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, SW_VECTOR.timestamp, SW_VECTOR.body.toString()), SW_VECTOR.signature);
});

test('standard-webhooks: one matching entry among several space-separated ones is enough', () => {
  const header = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,abc=', 'v1,not*base64', SW_VECTOR.signature, 'v1a,xyz'].join(' ');
  assert.ok(verifySwVector(swVectorHeaders(header)).accepted);
});

test('standard-webhooks: rejects a truncated signature, a bare "v1," and a non-v1 entry with the right digest', () => {
  const digest = SW_VECTOR.signature.slice('v1,'.length);
  for (const header of [SW_VECTOR.signature.slice(0, 20), 'v1,', `v2,${digest}`, digest]) {
    rejected(() => verifySwVector(swVectorHeaders(header)));
  }
});

test('standard-webhooks: the id is signed: another id with the same signature is rejected', () => {
  rejected(() => verifySwVector({ ...swVectorHeaders(), 'webhook-id': 'msg_other' }));
});

test('standard-webhooks: a secret that is not base64 is a configuration error that does not echo it', () => {
  for (const [secret, hidden] of [['whsec_not base64!', 'not base64'], ['whsec_', ''], ['plain-text*secret', 'plain-text']] as const) {
    const error = configFailed(() => verifySwVector(swVectorHeaders(), secret));
    if (hidden) assert.not.ok(error.message.includes(hidden));
  }
});

test('signStandardWebhook refuses a timestamp that is not whole seconds', () => {
  assert.throws(() => signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, 1614265330.5, SW_VECTOR.body), RangeError);
  assert.throws(() => signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, -1, SW_VECTOR.body), RangeError);
});

// ---------------------------------------------------------------------------
// Replay protection (standard-webhooks)

const SW_SECRET = standardWebhooksSecret;

function swDelivery(id: string, timestampSeconds: number, secret = SW_SECRET, body = Buffer.from('{"n":1}')) {
  return {
    body,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestampSeconds),
      'webhook-signature': signStandardWebhook(secret, id, timestampSeconds, body),
    },
  };
}

/** One clock shared by the cache and the verifier, moved by the test. */
function replayScenario(scope = 'ext-a') {
  let nowSeconds = NOW;
  const now = () => nowSeconds * 1000;
  const cache = new ReplayCache(REPLAY_WINDOW_MS, now);
  return {
    cache,
    advance(seconds: number) {
      nowSeconds += seconds;
    },
    deliver(delivery: ReturnType<typeof swDelivery>, deliveryScope = scope) {
      const context = { now, replay: { cache, scope: deliveryScope } };
      return verify('standard-webhooks', delivery.body, delivery.headers, { secret: SW_SECRET }, context);
    },
    get nowSeconds() {
      return nowSeconds;
    },
  };
}

test('replay: the same delivery twice is accepted, then reported as a duplicate', () => {
  const scenario = replayScenario();
  const delivery = swDelivery('msg_replayed', NOW);
  assert.equal(scenario.deliver(delivery), { accepted: true, duplicate: false });
  scenario.advance(10);
  assert.equal(scenario.deliver(delivery), { accepted: true, duplicate: true });
});

test('replay: a retry re-signed with a fresh timestamp within 5 minutes is a duplicate', () => {
  const scenario = replayScenario();
  scenario.deliver(swDelivery('msg_retry', NOW));
  scenario.advance(299);
  assert.is(scenario.deliver(swDelivery('msg_retry', scenario.nowSeconds)).duplicate, true);
  scenario.advance(1);
  assert.is(scenario.deliver(swDelivery('msg_retry', scenario.nowSeconds)).duplicate, true, 'still within the window at exactly 5 minutes');
});

test('replay: after 5 minutes the same id is accepted again', () => {
  const scenario = replayScenario();
  scenario.deliver(swDelivery('msg_later', NOW));
  scenario.advance(301);
  assert.equal(scenario.deliver(swDelivery('msg_later', scenario.nowSeconds)), { accepted: true, duplicate: false });
});

test('replay: an id stays remembered while its timestamp is still acceptable (sender clock ahead)', () => {
  const scenario = replayScenario();
  const delivery = swDelivery('msg_skewed', NOW + 200);
  assert.is(scenario.deliver(delivery).duplicate, false);
  scenario.advance(350); // past the 5-minute window, yet the timestamp is only 150 s old
  assert.is(scenario.deliver(delivery).duplicate, true);
});

test('replay: an id with a bad signature is rejected and not recorded', () => {
  const scenario = replayScenario();
  const forged = swDelivery('msg_target', NOW, `whsec_${Buffer.from('attacker key').toString('base64')}`);
  rejected(() => scenario.deliver(forged));
  assert.is(scenario.cache.size, 0);
  assert.equal(scenario.deliver(swDelivery('msg_target', NOW)), { accepted: true, duplicate: false });
});

test('replay: a stale replay is rejected, not answered as a duplicate', () => {
  const scenario = replayScenario();
  const delivery = swDelivery('msg_stale', NOW);
  scenario.deliver(delivery);
  scenario.advance(301);
  rejected(() => scenario.deliver(delivery));
});

test('replay: ids are kept apart per scope (extension)', () => {
  const scenario = replayScenario();
  assert.is(scenario.deliver(swDelivery('msg_shared', NOW), 'ext-a').duplicate, false);
  assert.is(scenario.deliver(swDelivery('msg_shared', NOW), 'ext-b').duplicate, false);
  assert.is(scenario.deliver(swDelivery('msg_shared', NOW), 'ext-a').duplicate, true);
});

test('ReplayCache: scope and id cannot be confused by moving a separator', () => {
  const cache = new ReplayCache(REPLAY_WINDOW_MS, clockAt(NOW));
  assert.is(cache.seenRecently('a:b', 'c'), false);
  assert.is(cache.seenRecently('a', 'b:c'), false);
  assert.is(cache.seenRecently('a:b', 'c'), true);
});

test('ReplayCache: expired entries are dropped, so memory follows the traffic of the last window', () => {
  let now = 0;
  const cache = new ReplayCache(1000, () => now);
  for (let index = 0; index < 50; index += 1) cache.seenRecently('s', `id-${index}`);
  assert.is(cache.size, 50);
  now = 1000;
  assert.is(cache.seenRecently('s', 'fresh'), false);
  assert.is(cache.size, 1);
});

test('ReplayCache: beyond maxEntries the oldest ids are forgotten first', () => {
  const cache = new ReplayCache(REPLAY_WINDOW_MS, clockAt(NOW), 3);
  for (const id of ['a', 'b', 'c', 'd']) cache.seenRecently('s', id);
  assert.is(cache.size, 3);
  assert.is(cache.seenRecently('s', 'd'), true);
  assert.is(cache.seenRecently('s', 'a'), false, 'the oldest was evicted');
  assert.is(cache.size, 3);
});

test('ReplayCache: entries are fixed-size fingerprints, whatever the length of the id', () => {
  const cache = new ReplayCache(REPLAY_WINDOW_MS, clockAt(NOW));
  assert.is(cache.seenRecently('s', 'x'.repeat(100_000)), false);
  assert.is(cache.seenRecently('s', 'x'.repeat(100_000)), true);
  assert.is(cache.seenRecently('s', 'x'.repeat(99_999)), false);
});

test('ReplayCache: refuses a non-positive ttl or cap', () => {
  assert.throws(() => new ReplayCache(0, clockAt(NOW)), RangeError);
  assert.throws(() => new ReplayCache(REPLAY_WINDOW_MS, clockAt(NOW), 0), RangeError);
});

// ---------------------------------------------------------------------------
// api-key

const API_KEY = 'api key 7f3c9a';

test('api-key: the configured header name is matched whatever its case', () => {
  assert.ok(verify('api-key', Buffer.from('{}'), { 'x-api-key': API_KEY }, { secret: API_KEY, header: 'X-API-Key' }).accepted);
});

test('api-key: a prefix of the key, the key with extra characters or in another case are rejected', () => {
  for (const value of [API_KEY.slice(0, -1), `${API_KEY}0`, API_KEY.toUpperCase(), `Bearer ${API_KEY}`]) {
    rejected(() => verify('api-key', Buffer.from('{}'), { 'x-api-key': value }, { secret: API_KEY, header: 'x-api-key' }));
  }
});

test('api-key: a missing header setting is a configuration error', () => {
  configFailed(() => verify('api-key', Buffer.from('{}'), { 'x-api-key': API_KEY }, { secret: API_KEY }));
});

// ---------------------------------------------------------------------------
// Registry

test('verifierFor: one verifier per scheme of the contract', () => {
  for (const scheme of WEBHOOK_SCHEMES) assert.type(verifierFor(scheme), 'function', scheme);
  assert.equal([...WEBHOOK_SCHEMES], ['hmac-sha256', 'github', 'stripe', 'slack', 'standard-webhooks', 'api-key']);
});

test('verifierFor: unknown names, including Object.prototype members, are undefined', () => {
  for (const scheme of ['', 'HMAC-SHA256', 'sha1', 'constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    assert.is(verifierFor(scheme), undefined, scheme);
  }
});

test('requireVerifier: an unknown scheme is a configuration error (500), not a rejection (401)', () => {
  const error = configFailed(() => requireVerifier('gitlab'));
  assert.match(error.message, 'webhook.scheme');
});

test.run();
