import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import * as v from 'valibot';
import type { Plugin, WebhookRequest } from '../../handlers/sdk.js';
import { requireVerifier, WebhookConfigError } from '../../handlers/webhooks/index.js';
import { DomainError, describeFault, invalid, notFound } from '../errors.js';
import type { EventService } from '../events/service.js';
import type { ExtensionConfigService } from '../extension-config/service.js';
import type { Logger } from '../log.js';
import type { PluginRegistry } from '../plugins/registry.js';
import { Slug } from '../../contract/schemas.js';
import { webhookEventKey } from './event-key.js';
import { bodyExcerpt, maskHeaders } from './redact.js';
import type { WebhookReplayStore } from './replays.js';
import type { PageBudget } from '../paging.js';
import { firstWindow, requestPage, type RequestOutcome, type WebhookRequestEntry, type WebhookRequestStore } from './request-log.js';

/** An envelope, or plain text for a provider's handshake (Slack's url_verification). */
export type WebhookOutcome = { data: unknown; meta: Record<string, unknown> | null } | { plainText: string };

/** The handler found for an extension: call it with the request once the body is read. */
export type WebhookHandler = (request: WebhookRequest) => Promise<WebhookOutcome>;

/** An inbound call as the HTTP layer hands it over: the body is read only once a handler is found. */
export interface InboundCall {
  headers: Record<string, string>;
  /** The raw body; throws 413 when it is too large. */
  readBody: () => Promise<Buffer>;
  /** The body as a JSON object; throws 400 otherwise. */
  parseBody: (rawBody: Buffer) => Record<string, unknown>;
}

const noHandler = (extensionKey: string) => new DomainError('NOT_FOUND', `no webhook handler is registered for ${extensionKey}`);

class HandlerTimeout extends Error {}

/** Answered generically; `fault` goes to the ADMIN request log only. */
class WebhookFailure extends DomainError {
  constructor(readonly fault: string) {
    super('WEBHOOK_FAILED', 'the webhook handler failed; the details are in the daemon log');
  }
}

/** Header values by lowercased name; repeated headers joined as HTTP does. */
export function headerMap(headers: IncomingHttpHeaders): Record<string, string> {
  const map: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) map[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return map;
}

/**
 * Inbound webhooks. The handler of an extension is its plugin's webhook
 * function if it has one, else the declarative verifier named by its
 * webhook.scheme configuration. A handler that rejects the caller answers
 * 401; one that fails answers 500 and its reason goes to the log only.
 */
export class WebhookService {
  constructor(
    private readonly deps: {
      plugins: PluginRegistry;
      config: ExtensionConfigService;
      events: EventService;
      catalog: { has(extensionKey: string): boolean };
      requestLog: WebhookRequestStore;
      replays: WebhookReplayStore;
      logger: Logger;
      handlerTimeoutMs: number;
      now?: () => number;
    },
  ) {}

  /**
   * One call to the endpoint, from finding the handler to its answer. Every
   * outcome, refusals before the handler included, goes to the extension's
   * request log, unless the extension does not exist.
   */
  async receive(extensionKey: string, call: InboundCall): Promise<WebhookOutcome> {
    const receivedAt = new Date((this.deps.now ?? Date.now)()).toISOString();
    let rawBody: Buffer | undefined;
    let outcome: WebhookOutcome;
    try {
      const handler = this.handlerFor(extensionKey);
      rawBody = await call.readBody();
      outcome = await handler({ rawBody, body: call.parseBody(rawBody), headers: call.headers });
    } catch (error) {
      await this.record(extensionKey, call.headers, rawBody, receivedAt, describeRefusal(error));
      throw error;
    }
    await this.record(extensionKey, call.headers, rawBody, receivedAt, describeOutcome(outcome));
    return outcome;
  }

  /** A page of an extension's request log, newest first, within `budget`; `cursor` is what the previous page returned. */
  async requests(
    extensionKey: string,
    options: { limit: number; cursor?: string | undefined },
    budget?: PageBudget<WebhookRequestEntry>,
  ): Promise<{ entries: WebhookRequestEntry[]; nextCursor?: string }> {
    if (!this.exists(extensionKey)) throw notFound(`extension ${extensionKey} not found`);
    const log = this.deps.requestLog;
    const window = options.cursor === undefined ? await firstWindow(log, extensionKey) : decodeCursor(options.cursor, extensionKey);
    const page = await requestPage(log, extensionKey, window, options.limit, budget);
    if (page.lost) {
      throw new DomainError('CONFLICT', 'calls not yet listed were dropped for newer ones since the first page was read; start again without a cursor');
    }
    return { entries: page.entries, ...(page.next ? { nextCursor: encodeCursor(extensionKey, page.next) } : {}) };
  }

  /** In the catalog or served by a plugin: only such keys get a request log, so a caller cannot create logs by naming keys. */
  private exists(extensionKey: string): boolean {
    return v.is(Slug, extensionKey) && (this.deps.catalog.has(extensionKey) || this.deps.plugins.get(extensionKey) !== undefined);
  }

  /** Listed by the next read on any daemon once it resolves; never rejects (the entry is diagnostics). */
  private async record(
    extensionKey: string,
    headers: Record<string, string>,
    rawBody: Buffer | undefined,
    receivedAt: string,
    result: { outcome: RequestOutcome; reason: string; eventId?: string },
  ): Promise<void> {
    if (!this.exists(extensionKey)) return;
    const configuredHeader = this.deps.config.webhookSettings(extensionKey)?.header;
    await this.deps.requestLog.record(extensionKey, {
      id: randomUUID(),
      receivedAt,
      ...result,
      headers: maskHeaders(headers, configuredHeader),
      bodyExcerpt: bodyExcerpt(rawBody),
    });
  }

  /**
   * 404 when the extension has no webhook handler; decided before the body is
   * read. A key that cannot be an extension key is not looked up at all.
   */
  private handlerFor(extensionKey: string): WebhookHandler {
    if (!v.is(Slug, extensionKey)) throw noHandler(extensionKey);
    const plugin = this.deps.plugins.get(extensionKey);
    if (plugin?.webhook) return (request) => this.runPlugin(plugin, request);
    if (this.deps.config.webhookSettings(extensionKey)) return (request) => this.verifyAndPublish(extensionKey, request);
    throw noHandler(extensionKey);
  }

  private async runPlugin(plugin: Plugin, request: WebhookRequest): Promise<WebhookOutcome> {
    const { context } = this.deps.events.pluginContext(plugin.extensionKey, 0);
    let timer: NodeJS.Timeout | undefined;
    try {
      const data = await Promise.race([
        Promise.resolve().then(() => plugin.webhook!(request, context)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new HandlerTimeout(`did not finish within ${this.deps.handlerTimeoutMs} ms`)), this.deps.handlerTimeoutMs);
        }),
      ]);
      return { data: data ?? null, meta: null };
    } catch (error) {
      throw this.classify(plugin.extensionKey, error);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A call carrying its provider's delivery id is published at most once per
   * extension within the replay window; the id is committed only once its
   * event is published, so a retry of a failed call is processed again. A
   * Stripe or Slack call without one is checked the same way by its
   * fingerprint (the SHA-256 of its signed timestamp and raw body): the same
   * call can only pass the timestamp check within the tolerance window, so
   * keeping it for the replay window costs room, not correctness.
   */
  private async verifyAndPublish(extensionKey: string, request: WebhookRequest): Promise<WebhookOutcome> {
    const settings = this.deps.config.webhookSettings(extensionKey)!;
    try {
      const call = requireVerifier(settings.scheme)(request, settings, { now: this.deps.now ?? Date.now });
      if (call.challenge !== null) return { plainText: call.challenge };
      const { workspaceId } = settings;
      if (!workspaceId) throw new WebhookConfigError('webhook.workspaceId is not set');
      const publish = async (): Promise<WebhookOutcome> => {
        const { eventId } = await this.deps.events.publish(
          workspaceId,
          { eventKey: webhookEventKey(settings.eventKey, call.eventType), payload: request.body },
          {
            actor: extensionKey,
            publishedBy: `webhook:${extensionKey}`,
            depth: 1,
            ...(call.sourceId === null ? {} : { sourceId: call.sourceId }),
          },
        );
        return { data: null, meta: { eventId } };
      };
      // Without a delivery id, a call signed with its timestamp is known by its fingerprint.
      const replayKey = call.sourceId ?? call.fingerprint;
      if (replayKey === undefined) return await publish();
      const claim = await this.deps.replays.claim(extensionKey, replayKey);
      if (!claim) return { data: null, meta: { duplicate: true } };
      let outcome: WebhookOutcome;
      try {
        outcome = await publish();
      } catch (error) {
        await claim.release().catch((failed: unknown) => this.replayFailed(extensionKey, 'released', failed));
        throw error;
      }
      // The event is published and the answer says so, even when the id could not be marked.
      await claim.commit().catch((failed: unknown) => this.replayFailed(extensionKey, 'marked as published', failed));
      return outcome;
    } catch (error) {
      throw this.classify(extensionKey, error);
    }
  }

  /** The id stays claimed until the store manages to write it, or the claim lapses: meanwhile a retry waits, then is processed. */
  private replayFailed(extensionKey: string, what: string, error: unknown): void {
    this.deps.logger.error(`webhook replay check of ${extensionKey}: a delivery id could not be ${what}: ${describeFault(error)}`);
  }

  /** Forgets delivery ids whose replay window has passed. */
  forgetExpiredReplays(): Promise<void> {
    return this.deps.replays.prune();
  }

  /**
   * Rejections keep their (safe) message; a payload the publish checks refuse is
   * the sender's 400 or 413, a full disk our 503; every other failure is logged
   * and answered generically.
   */
  private classify(extensionKey: string, error: unknown): DomainError {
    const code = (error as { code?: unknown } | null)?.code;
    const passedOn = code === 'VALIDATION_ERROR' || code === 'PAYLOAD_TOO_LARGE' || code === 'UNAVAILABLE';
    if (error instanceof DomainError && passedOn) return error;
    if (code === 'WEBHOOK_REJECTED') {
      const message = error instanceof Error && error.message ? error.message : 'webhook rejected';
      return new DomainError('WEBHOOK_REJECTED', message);
    }
    const fault = describeFault(error);
    this.deps.logger.error(`webhook handler of ${extensionKey} failed: ${fault}`);
    // Our own messages are safe to show an ADMIN; what a plugin threw may hold anything, so it stays in the log.
    const ours = error instanceof DomainError || error instanceof HandlerTimeout;
    return new WebhookFailure(ours ? fault : 'the handler threw; its message is in the daemon log');
  }
}

const REASON_MAX = 300;
const reasonOf = (text: string) => (text.length > REASON_MAX ? `${text.slice(0, REASON_MAX)}…` : text);

function describeOutcome(outcome: WebhookOutcome): { outcome: RequestOutcome; reason: string; eventId?: string } {
  if ('plainText' in outcome) return { outcome: 'ACCEPTED', reason: 'handshake answered; nothing published' };
  const eventId = outcome.meta?.eventId;
  if (typeof eventId === 'string') return { outcome: 'ACCEPTED', reason: 'event published', eventId };
  if (outcome.meta?.duplicate === true) {
    return { outcome: 'DUPLICATE', reason: "the provider's delivery id (or, without one, the same signed call) was already published; nothing published" };
  }
  return { outcome: 'ACCEPTED', reason: 'handled by the plugin' };
}

/** The caller's mistakes are REJECTED, ours or the handler's FAILED; reasons are the answer's message or the failure's fault. */
function describeRefusal(error: unknown): { outcome: RequestOutcome; reason: string } {
  if (error instanceof WebhookFailure) return { outcome: 'FAILED', reason: reasonOf(error.fault) };
  if (!(error instanceof DomainError)) return { outcome: 'FAILED', reason: reasonOf(describeFault(error)) };
  const failure = error.code === 'WEBHOOK_FAILED' || error.code === 'UNAVAILABLE' || error.code === 'INTERNAL_ERROR';
  return { outcome: failure ? 'FAILED' : 'REJECTED', reason: reasonOf(error.message) };
}

/** Opaque to clients: base64url of the window and the extension it belongs to. */
const CURSOR_KIND = 'webhook-requests';

function encodeCursor(extensionKey: string, window: { before: number; floor: number }): string {
  return Buffer.from(JSON.stringify([CURSOR_KIND, extensionKey, window.before, window.floor])).toString('base64url');
}

const CursorShape = v.tuple([
  v.literal(CURSOR_KIND),
  v.string(),
  v.pipe(v.number(), v.safeInteger(), v.minValue(2)),
  v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
]);

function decodeCursor(cursor: string, extensionKey: string): { before: number; floor: number } {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  if (!/^[A-Za-z0-9_-]+$/.test(cursor) || !v.is(CursorShape, decoded) || decoded[3] >= decoded[2]) {
    throw invalid('cursor', 'cursor is not one this endpoint returned');
  }
  if (decoded[1] !== extensionKey) throw invalid('cursor', "cursor belongs to another extension's request log");
  return { before: decoded[2], floor: decoded[3] };
}
