import type { IncomingHttpHeaders } from 'node:http';
import * as v from 'valibot';
import type { Plugin, WebhookRequest } from '../../handlers/sdk.js';
import { ReplayCache, REPLAY_WINDOW_MS, requireVerifier, WebhookConfigError } from '../../handlers/webhooks/index.js';
import { DomainError, describeFault } from '../errors.js';
import type { EventService } from '../events/service.js';
import type { ExtensionConfigService } from '../extension-config/service.js';
import type { Logger } from '../log.js';
import type { PluginRegistry } from '../plugins/registry.js';
import { Slug } from '../validation.js';
import { webhookEventKey } from './event-key.js';

/** An envelope, or plain text for a provider's handshake (Slack's url_verification). */
export type WebhookOutcome = { data: unknown; meta: Record<string, unknown> | null } | { plainText: string };

/** The handler found for an extension: call it with the request once the body is read. */
export type WebhookHandler = (request: WebhookRequest) => Promise<WebhookOutcome>;

const noHandler = (extensionKey: string) => new DomainError('NOT_FOUND', `no webhook handler is registered for ${extensionKey}`);
const failed = () => new DomainError('WEBHOOK_FAILED', 'the webhook handler failed; the details are in the daemon log');

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
  private readonly replays: ReplayCache;

  constructor(
    private readonly deps: {
      plugins: PluginRegistry;
      config: ExtensionConfigService;
      events: EventService;
      logger: Logger;
      handlerTimeoutMs: number;
      now?: () => number;
    },
  ) {
    this.replays = new ReplayCache(REPLAY_WINDOW_MS, deps.now ?? Date.now);
  }

  /**
   * 404 when the extension has no webhook handler; decided before the body is
   * read. A key that cannot be an extension key is not looked up at all.
   */
  handlerFor(extensionKey: string): WebhookHandler {
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
          timer = setTimeout(() => reject(new Error(`did not finish within ${this.deps.handlerTimeoutMs} ms`)), this.deps.handlerTimeoutMs);
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
   * event is published, so a retry of a failed call is processed again.
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
      if (call.sourceId === null) return await publish();
      const claim = await this.replays.claim(extensionKey, call.sourceId);
      if (!claim) return { data: null, meta: { duplicate: true } };
      try {
        const outcome = await publish();
        claim.commit();
        return outcome;
      } catch (error) {
        claim.release();
        throw error;
      }
    } catch (error) {
      throw this.classify(extensionKey, error);
    }
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
    this.deps.logger.error(`webhook handler of ${extensionKey} failed: ${describeFault(error)}`);
    return failed();
  }
}
