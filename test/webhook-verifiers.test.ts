import { createHash, createHmac } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
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
  type VerifiedCall,
  type VerifierSettings,
  type VerifyContext,
  type WebhookScheme,
} from '../src/handlers/webhooks/index.js';

// Signatures in this file are computed here with node:crypto, independently of
// the signers under test, so a shared mistake cannot make both sides agree.

const NOW = 1_700_000_000; // seconds
const UNUSUAL_BODY = Buffer.from('{ "b":1,\n  "a" : [ 2 ,3 ],\t"c": "caf\u00e9" }\r\n', 'utf8');

const hmac = (key: string | Buffer, ...parts: (string | Buffer)[]) =>
  createHmac('sha256', key).update(Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)))).digest();

const clockAt = (seconds: number) => () => seconds * 1000;

function contextAt(seconds: number): VerifyContext {
  return { now: clockAt(seconds) };
}

/** The parsed body the endpoint hands over; a body changed into invalid JSON by a test reads as empty. */
function bodyOf(rawBody: Buffer): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(rawBody.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function verify(
  scheme: WebhookScheme,
  body: Buffer,
  headers: Record<string, string>,
  settings: VerifierSettings,
  context = contextAt(NOW),
): VerifiedCall {
  return requireVerifier(scheme)({ rawBody: body, body: bodyOf(body), headers }, settings, context);
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
    assert.type(verify(scheme, body, fixture.headers(secret, body, NOW), settings), 'object');
  });

  test(`${scheme}: verifies the raw bytes as sent (whitespace, key order, CRLF, UTF-8), not a re-serialisation`, () => {
    assert.ok(verify(scheme, UNUSUAL_BODY, fixture.headers(secret, UNUSUAL_BODY, NOW), settings));
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
      assert.ok(verify(scheme, flipOneByte(body), fixture.headers(secret, body, NOW), settings));
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
      assert.ok(verify(scheme, body, fixture.headers(secret, body, NOW - 299), settings));
      assert.ok(verify(scheme, body, fixture.headers(secret, body, NOW + 299), settings));
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
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex }, hmacSettings));
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': `sha256=${hmacHex}` }, hmacSettings));
});

test('hmac-sha256: hex and the prefix are case-insensitive (the decoded bytes are compared)', () => {
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex.toUpperCase() }, hmacSettings));
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': `SHA256=${hmacHex.toUpperCase()}` }, hmacSettings));
});

test('hmac-sha256: the configured header name is matched whatever its case', () => {
  assert.ok(verify('hmac-sha256', hmacBody, { 'x-signature': hmacHex }, { ...hmacSettings, header: 'X-Signature' }));
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
  assert.ok(verify('hmac-sha256', body, { 'x-hub-signature-256': hex }, settings));
  assert.ok(verify('hmac-sha256', body, { 'x-hub-signature-256': `sha256=${hex}` }, settings));
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
  assert.ok(verifyGithubVector(GITHUB_VECTOR.signature));
});

test('github: signGithub reproduces GitHub\'s vector', () => {
  assert.is(signGithub(GITHUB_VECTOR.secret, GITHUB_VECTOR.body), GITHUB_VECTOR.signature);
});

test('github: uppercase hex is accepted, a bare digest without sha256= is not', () => {
  const hex = GITHUB_VECTOR.signature.slice('sha256='.length);
  assert.ok(verifyGithubVector(`sha256=${hex.toUpperCase()}`));
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
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${old},v1=${good}`));
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${good},v1=${old},v0=${old}`));
  assert.ok(verifyStripeHeader(`t=${NOW}, v1=${good}, v0=${old}`), 'spaces after commas are tolerated');
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
  assert.ok(verifyStripeHeader(`t=${NOW},v1=${stripeV1(STRIPE_SECRET, NOW).toUpperCase()}`));
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
  assert.ok(verify('slack', SLACK_VECTOR.body, slackVectorHeaders, settings, contextAt(SLACK_VECTOR.timestamp + 10)));
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
  assert.equal(verifySwVector(swVectorHeaders()), { sourceId: SW_VECTOR.id, eventType: null, challenge: null });
});

test('standard-webhooks: a secret without the whsec_ prefix is read as base64 too', () => {
  assert.ok(verifySwVector(swVectorHeaders(), SW_VECTOR.secret.slice('whsec_'.length)));
});

test('standard-webhooks: signStandardWebhook reproduces the reference vector', () => {
  assert.is(signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, SW_VECTOR.timestamp, SW_VECTOR.body), SW_VECTOR.signature);
  assert.is(signStandardWebhook(SW_VECTOR.secret, SW_VECTOR.id, SW_VECTOR.timestamp, SW_VECTOR.body.toString()), SW_VECTOR.signature);
});

test('standard-webhooks: one matching entry among several space-separated ones is enough', () => {
  const header = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,abc=', 'v1,not*base64', SW_VECTOR.signature, 'v1a,xyz'].join(' ');
  assert.ok(verifySwVector(swVectorHeaders(header)));
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
// Delivery ids, event types and Slack's handshake: what a verified call says about itself

test('github: the delivery id and event type come from X-GitHub-Delivery and X-GitHub-Event', () => {
  const body = Buffer.from('{"zen":"Keep it logically awesome."}');
  const secret = 'github identity secret';
  const signature = `sha256=${hmac(secret, body).toString('hex')}`;
  const headers = { 'x-hub-signature-256': signature, 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-github-event': 'ping' };
  assert.equal(verify('github', body, headers, { secret }), { sourceId: '72d3162e-cc78-11e3-81ab-4c9367dc0958', eventType: 'ping', challenge: null });
  assert.equal(verify('github', body, { 'x-hub-signature-256': signature }, { secret }), { sourceId: null, eventType: null, challenge: null });
});

/** What identifies a Stripe or Slack call without an event id: the SHA-256 of its signed timestamp and raw body. */
const fingerprintOf = (timestamp: number, body: Buffer) => `sha256:${createHash('sha256').update(`${timestamp}.`).update(body).digest('hex')}`;

test('stripe: the delivery id and event type are the body\'s id and type', () => {
  const secret = 'whsec_identity';
  const body = Buffer.from('{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"invoice.paid"}');
  const header = `t=${NOW},v1=${hmac(secret, `${NOW}.`, body).toString('hex')}`;
  assert.equal(verify('stripe', body, { 'stripe-signature': header }, { secret }), { sourceId: 'evt_1NG8Du2eZvKYlo2CUI79vXWy', eventType: 'invoice.paid', challenge: null });
  const odd = Buffer.from('{"id":42,"type":""}');
  const oddHeader = `t=${NOW},v1=${hmac(secret, `${NOW}.`, odd).toString('hex')}`;
  assert.equal(
    verify('stripe', odd, { 'stripe-signature': oddHeader }, { secret }),
    { sourceId: null, eventType: null, challenge: null, fingerprint: fingerprintOf(NOW, odd) },
    'only non-empty strings count; without an id, the call is known by its timestamp and body',
  );
});

const slackHeadersFor = (secret: string, body: Buffer) => ({
  'x-slack-request-timestamp': String(NOW),
  'x-slack-signature': `v0=${hmac(secret, `v0:${NOW}:`, body).toString('hex')}`,
});

test('slack: event_id is the delivery id; the type is event.type, else the top-level type', () => {
  const secret = 'slack identity secret';
  const callback = Buffer.from('{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention"}}');
  assert.equal(verify('slack', callback, slackHeadersFor(secret, callback), { secret }), { sourceId: 'Ev08MFMKH6', eventType: 'app_mention', challenge: null });
  const flat = Buffer.from('{"type":"app_rate_limited","event":"not an object"}');
  assert.equal(verify('slack', flat, slackHeadersFor(secret, flat), { secret }), {
    sourceId: null,
    eventType: 'app_rate_limited',
    challenge: null,
    fingerprint: fingerprintOf(NOW, flat),
  });
});

test('slack: url_verification yields its challenge, only once the signature holds', () => {
  const secret = 'slack handshake secret';
  const body = Buffer.from('{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}');
  assert.is(verify('slack', body, slackHeadersFor(secret, body), { secret }).challenge, '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P');
  rejected(() => verify('slack', body, slackHeadersFor('another secret', body), { secret }));
  const notHandshake = Buffer.from('{"type":"event_callback","challenge":"x"}');
  assert.is(verify('slack', notHandshake, slackHeadersFor(secret, notHandshake), { secret }).challenge, null);
});

test('standard-webhooks: the signed id is the delivery id; the type is the body\'s type', () => {
  const body = Buffer.from('{"type":"invoice.paid"}');
  const headers = {
    'webhook-id': 'msg_typed',
    'webhook-timestamp': String(NOW),
    'webhook-signature': `v1,${hmac(standardWebhooksKey, `msg_typed.${NOW}.`, body).toString('base64')}`,
  };
  assert.equal(verify('standard-webhooks', body, headers, { secret: standardWebhooksSecret }), { sourceId: 'msg_typed', eventType: 'invoice.paid', challenge: null });
});

test('standard-webhooks: the svix-id, svix-timestamp and svix-signature names are accepted', () => {
  const headers = { 'svix-id': SW_VECTOR.id, 'svix-timestamp': String(SW_VECTOR.timestamp), 'svix-signature': SW_VECTOR.signature };
  assert.is(verifySwVector(headers).sourceId, SW_VECTOR.id);
  rejected(() => verifySwVector({ ...headers, 'svix-signature': 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=' }));
});

test('standard-webhooks: the two sets of names are not mixed', () => {
  const mixed = { 'webhook-id': SW_VECTOR.id, 'webhook-timestamp': String(SW_VECTOR.timestamp), 'svix-signature': SW_VECTOR.signature };
  assert.match(rejected(() => verifySwVector(mixed)).message, 'webhook-signature');
});

test('hmac-sha256 and api-key carry neither a delivery id nor a type', () => {
  const body = Buffer.from('{"id":"evt_1","type":"x"}');
  const unidentified = { sourceId: null, eventType: null, challenge: null };
  assert.equal(verify('hmac-sha256', body, { 'x-signature': hmac('k', body).toString('hex') }, { secret: 'k', header: 'x-signature' }), unidentified);
  assert.equal(verify('api-key', body, { 'x-api-key': 'k' }, { secret: 'k', header: 'x-api-key' }), unidentified);
});

// ---------------------------------------------------------------------------
// api-key

const API_KEY = 'api key 7f3c9a';

test('api-key: the configured header name is matched whatever its case', () => {
  assert.ok(verify('api-key', Buffer.from('{}'), { 'x-api-key': API_KEY }, { secret: API_KEY, header: 'X-API-Key' }));
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
