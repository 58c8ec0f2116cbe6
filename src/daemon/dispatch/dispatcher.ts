import type { EventHandler, PluginContext } from '../../handlers/sdk.js';
import { describeFault } from '../errors.js';
import type { ActivityFeed } from '../events/activity.js';
import type { Logger } from '../log.js';
import type { DomainMetrics } from '../metrics.js';
import type { DisabledSubscription } from '../workspaces/subscriptions.js';
import type { Inactivity } from '../workspaces/types.js';
import { postEvent, type AttemptOutcome } from './external.js';
import type { DeliveryStore, NewAttempt } from './store.js';
import { FairQueue } from './fair-queue.js';
import { withJitter } from './retry.js';
import { setHeader } from './recorded-headers.js';
import { redactCredentials } from './url-credentials.js';
import { createDeliveryTransport, type DeliveryTransport } from './transport.js';
import { deadLetterOf, type Delivery, type DeliveryAttempt, type DeliveryError } from './types.js';

export interface DispatchSettings {
  /** Delays before the 2nd, 3rd, … attempt; after the last, a dead letter. */
  retrySchedule: readonly number[];
  deliveryTimeoutMs: number;
  /** External deliveries in flight at once. */
  deliveryConcurrency: number;
  /** Asynchronous in-process handlers running at once. */
  handlerConcurrency: number;
  handlerTimeoutMs: number;
  denyPrivateTargets: boolean;
  /** Failing this long without one success disables a subscription. */
  disableAfterMs: number;
}

/** A handler call in progress, and whether it tried to extend the event chain past its limit. */
export interface HandlerRun {
  context: PluginContext;
  chainCut: () => string | null;
}

export interface DispatcherDependencies {
  deliveries: DeliveryStore;
  /** What every attempt reads, from memory (the SubscriberRegistry). */
  subscribers: {
    inactivity(subscriptionId: string): Inactivity;
    signingKeys(subscriptionId: string, now: number): Buffer[];
    /** The subscriber URL with its credentials: deliveries and the outbox only carry it masked. */
    deliveryUrl(subscriptionId: string): string | null;
    /** A subscriber's answer with its subscription's credentials masked: excerpts are recorded without them. */
    credentialMaskOf(subscriptionId: string | null): (text: string) => string;
  };
  /** An attempt's result, written for automatic disabling; returns the reason when this result disabled the subscription. */
  recordHealth(subscriptionId: string, succeeded: boolean, now: number, disableAfterMs: number): Promise<DisabledSubscription | null>;
  /** A subscription was disabled automatically: the daemon announces it in its workspace. */
  onSubscriptionDisabled(disabled: DisabledSubscription): Promise<void>;
  handlerFor(extensionKey: string, eventKey: string): EventHandler | undefined;
  /** The context a handler gets for this delivery (its publish extends the chain). */
  startHandlerRun(delivery: Delivery): HandlerRun;
  settings: DispatchSettings;
  logger: Logger;
  metrics: Pick<DomainMetrics, 'deliveryAttempted'>;
  activity: ActivityFeed;
  now?: () => number;
  random?: () => number;
}

type Lane = 'external' | 'handler';

/** A shared queue is also looked at this often, should a notification of new work be lost. */
const CLAIM_POLL_MS = 2_000;

/**
 * Runs deliveries: external services over HTTP and asynchronous in-process
 * handlers, each lane with its own concurrency. It holds only what it runs
 * now and what waits for a slot: those a publish handed it and those it
 * claims from the store as slots free up. Failures go back to the store, to
 * be retried on the schedule (with jitter, or after Retry-After), and end as
 * dead letters. Every pending delivery is in the store, so a restart or a
 * crash resumes them, and a backlog costs the store's index, not memory here.
 */
export class Dispatcher {
  private readonly ready: Record<Lane, FairQueue<Delivery>>;
  private readonly inFlight: Record<Lane, number> = { external: 0, handler: 0 };
  private readonly limits: Record<Lane, number>;
  private readonly running = new Set<Promise<void>>();
  private stopping = false;
  private readonly transport: DeliveryTransport;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private started = false;
  private claiming = false;
  private claimAgain = false;
  /** The last claim got all it asked for: there may be more due work, claimed as slots free up. */
  private backlog = false;
  private poll: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(private readonly deps: DispatcherDependencies) {
    this.now = deps.now ?? Date.now;
    this.random = deps.random ?? Math.random;
    this.limits = { external: deps.settings.deliveryConcurrency, handler: deps.settings.handlerConcurrency };
    this.ready = { external: new FairQueue(this.limits.external), handler: new FairQueue(this.limits.handler) };
    this.transport = createDeliveryTransport(deps.settings);
    deps.deliveries.onWork(() => this.claim());
    deps.deliveries.onLeaseLost((deliveryId) => this.transport.abandon(deliveryId));
  }

  /** Between start() and stop(): for the readiness check. */
  get isRunning(): boolean {
    return this.started;
  }

  /** Starts claiming due deliveries from the store (those a previous run left pending first). */
  start(): void {
    this.started = true;
    if (this.deps.deliveries.shared) {
      this.poll = setInterval(() => this.claim(), CLAIM_POLL_MS);
      this.poll.unref();
    }
    this.claim();
  }

  /**
   * Takes due deliveries from the store, as many as this daemon has free
   * slots for (claimed deliveries wait for nothing but a slot), through the
   * fair queues; then waits for the next one to fall due.
   */
  private claim(): void {
    if (!this.started) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    const room = this.limits.external + this.limits.handler - this.inFlight.external - this.inFlight.handler - this.ready.external.length - this.ready.handler.length;
    if (room <= 0) {
      // Claimed as soon as a slot frees up.
      this.backlog = true;
      return;
    }
    this.claiming = true;
    this.claimAgain = false;
    void this.deps.deliveries
      .claim(room)
      .then(
        (claimed) => {
          this.backlog = claimed.length === room;
          this.enqueue(claimed);
          this.armTimer();
        },
        (error: unknown) => this.deps.logger.error(`could not claim deliveries: ${describeFault(error)}`),
      )
      .finally(() => {
        this.claiming = false;
        if (this.claimAgain || this.backlog) this.claim();
      });
  }

  /** Runs deliveries the store holds for this daemon (a publish's, a replay's, a claim's) as slots free up. */
  enqueue(deliveries: readonly Delivery[]): void {
    for (const delivery of deliveries) this.ready[this.laneOf(delivery)].push(fairnessKey(delivery), delivery);
    this.pump();
  }

  /** Runs a synchronous in-process delivery now (before the publisher is answered); failures are dead-lettered. */
  async runNow(delivery: Delivery): Promise<void> {
    await this.attempt(delivery);
  }

  async stats(): Promise<{ pending: number; inFlight: number; oldestPendingAgeMs: number | null }> {
    const { count, oldestEnqueuedAt } = await this.deps.deliveries.pending();
    return {
      pending: count,
      inFlight: this.inFlight.external + this.inFlight.handler,
      oldestPendingAgeMs: oldestEnqueuedAt === null ? null : Math.max(0, this.now() - oldestEnqueuedAt),
    };
  }

  /**
   * Stops taking work and aborts external requests in flight (not counted as
   * attempts: they run again after the restart). Handlers cannot be aborted;
   * they get `graceMs` to finish.
   */
  async stop(graceMs: number): Promise<void> {
    this.started = false;
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.poll) clearInterval(this.poll);
    this.transport.close();
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.running]),
      new Promise((resolve) => (timeout = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timeout);
    await this.deps.deliveries.settled();
  }

  // The loop

  private laneOf(delivery: Delivery): Lane {
    return delivery.subscriber.kind === 'EXTERNAL_SERVICE' ? 'external' : 'handler';
  }

  /** Claims again when the store's next pending delivery falls due (sooner than the timer set, if any). */
  private armTimer(): void {
    const next = this.deps.deliveries.nextDueAt();
    if (next === null || !this.started || next >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.claim();
    }, Math.max(0, next - this.now()));
    this.timer.unref();
  }

  private pump(): void {
    if (!this.started) return;
    for (const lane of ['external', 'handler'] as const) {
      const ready = this.ready[lane];
      while (this.inFlight[lane] < this.limits[lane] && ready.length > 0) {
        const next = ready.take();
        if (!next) break;
        const { key, delivery } = next;
        if (!this.deps.deliveries.holds(delivery)) {
          // Finished, replaced or taken over by another daemon meanwhile.
          ready.finished(key);
          this.claim();
          continue;
        }
        this.inFlight[lane] += 1;
        const run = this.attempt(delivery).finally(() => {
          this.inFlight[lane] -= 1;
          ready.finished(key);
          this.running.delete(run);
          this.pump();
          if (this.backlog) this.claim();
        });
        this.running.add(run);
      }
    }
  }

  /** Whether deliveries to this subscriber are refused now, and why (null: active, or a built-in plugin). */
  inactivity(subscriptionId: string | null): Inactivity {
    return subscriptionId === null ? null : this.deps.subscribers.inactivity(subscriptionId);
  }

  private async attempt(delivery: Delivery): Promise<void> {
    await this.act(delivery, await this.run(delivery));
  }

  /**
   * Prepares and makes one attempt, and decides what comes of it; nothing is
   * recorded here (see `act`). A subscriber that is no longer active gets no
   * attempt: its delivery is a dead letter at once.
   */
  private async run(delivery: Delivery): Promise<Decision> {
    const now = this.now();
    const inactive = this.inactivity(delivery.subscriber.subscriptionId);
    if (inactive) return { kind: 'dead', error: { message: `not delivered: ${inactive}`, status: null }, attempt: null };
    delivery.firstAttemptAt ??= new Date(now).toISOString();
    delivery.attempts += 1;
    const handler =
      delivery.subscriber.kind === 'IN_PROCESS'
        ? this.deps.handlerFor(delivery.subscriber.extensionKey, delivery.event.eventKey)
        : undefined;
    let outcome: AttemptOutcome;
    const attemptStarted = performance.now();
    try {
      outcome =
        delivery.subscriber.kind === 'EXTERNAL_SERVICE'
          ? await this.deliverExternal(delivery, now)
          : await this.runHandler(delivery, handler);
    } catch (error) {
      this.deps.logger.error(`delivery ${delivery.id} failed unexpectedly: ${redactCredentials(describeFault(error))}`);
      outcome = { ok: false, retryable: true, error: { message: 'internal error while delivering', status: null } };
    }
    if ('aborted' in outcome) {
      delivery.attempts -= 1;
      return { kind: 'released' };
    }

    const seconds = (performance.now() - attemptStarted) / 1000;
    // A subscriber may echo its credentials in its answer: they are recorded masked.
    const mask = this.deps.subscribers.credentialMaskOf(delivery.subscriber.subscriptionId);
    const { request, responseHeaders, responseExcerpt } = outcome;
    const maskedExcerpt = responseExcerpt === undefined ? undefined : mask(responseExcerpt);
    let maskedHeaders: Record<string, string> | undefined;
    if (responseHeaders !== undefined) {
      maskedHeaders = {};
      for (const name of Object.keys(responseHeaders)) setHeader(maskedHeaders, name, mask(responseHeaders[name]!));
    }
    // Built field by field, in the order records show them: this runs for every attempt.
    const made = (result: DeliveryAttempt['outcome'], error: DeliveryError | null): MadeAttempt => {
      const record: NewAttempt = { startedAt: new Date(now).toISOString(), durationMs: Math.max(0, this.now() - now), outcome: result };
      if (outcome.httpStatus !== undefined) record.httpStatus = outcome.httpStatus;
      if (error !== null) record.error = error.message;
      if (maskedExcerpt !== undefined) record.responseExcerpt = maskedExcerpt;
      if (request !== undefined) record.request = request;
      if (maskedHeaders !== undefined) record.response = { headers: maskedHeaders };
      return { seconds, record };
    };
    if (outcome.ok) return { kind: 'succeeded', attempt: made('SUCCESS', null), httpStatus: outcome.httpStatus };
    // Whatever failed may quote the URL it was sending to: never with its credentials.
    const error = { ...outcome.error, message: redactCredentials(outcome.error.message) };
    // A synchronous handler ran while the publisher waited: it is not retried.
    const retryable = outcome.retryable && (handler === undefined || handler.async === true);
    const delay = this.deps.settings.retrySchedule[delivery.attempts - 1];
    if (!retryable || delay === undefined) return { kind: 'dead', error, attempt: made('FAILED', error) };
    return { kind: 'retry', at: this.now() + (outcome.retryAfterMs ?? withJitter(delay, this.random)), error, attempt: made('RETRY', error) };
  }

  /** The one place an attempt's decision is carried out: the store, metrics, the live streams, the subscription's health. */
  private async act(delivery: Delivery, decision: Decision): Promise<void> {
    if (decision.kind === 'released') {
      this.deps.deliveries.released(delivery);
      return;
    }
    const { attempt } = decision;
    if (attempt && delivery.subscriber.kind === 'EXTERNAL_SERVICE' && delivery.subscriber.subscriptionId !== null) {
      void this.trackHealth(delivery.subscriber.subscriptionId, decision.kind === 'succeeded');
    }
    switch (decision.kind) {
      case 'succeeded':
        this.deps.metrics.deliveryAttempted('delivered', decision.attempt.seconds);
        this.deps.deliveries.succeeded(delivery, decision.attempt.record);
        this.deps.activity.delivery('delivery.succeeded', delivery, decision.httpStatus === undefined ? {} : { httpStatus: decision.httpStatus });
        return;
      case 'retry':
        delivery.lastError = decision.error;
        this.deps.metrics.deliveryAttempted('retried', decision.attempt.seconds);
        delivery.nextAttemptAt = decision.at;
        this.deps.deliveries.retrying(delivery, decision.attempt.record);
        this.armTimer();
        this.deps.activity.delivery('delivery.retrying', delivery, {
          ...errorSummary(decision.error),
          nextAttemptAt: new Date(delivery.nextAttemptAt).toISOString(),
        });
        return;
      case 'dead':
        if (decision.attempt) {
          delivery.lastError = decision.error;
          this.deps.metrics.deliveryAttempted('dead_lettered', decision.attempt.seconds);
        }
        await this.deadLetter(delivery, decision.error, decision.attempt?.record ?? null);
    }
  }

  private async deliverExternal(delivery: Delivery, now: number): Promise<AttemptOutcome> {
    const { subscriptionId } = delivery.subscriber;
    const signingKeys = subscriptionId === null ? [] : this.deps.subscribers.signingKeys(subscriptionId, now);
    const url = subscriptionId === null ? null : this.deps.subscribers.deliveryUrl(subscriptionId);
    if (signingKeys.length === 0 || url === null) {
      return { ok: false, retryable: false, error: { message: 'subscription deleted', status: null } };
    }
    return postEvent(
      { deliveryId: delivery.id, event: delivery.event, url, signingKeys },
      { transport: this.transport, timeoutMs: this.deps.settings.deliveryTimeoutMs, isStopping: () => this.stopping, now },
    );
  }

  private async trackHealth(subscriptionId: string, succeeded: boolean): Promise<void> {
    try {
      const disabled = await this.deps.recordHealth(subscriptionId, succeeded, this.now(), this.deps.settings.disableAfterMs);
      if (disabled !== null) await this.deps.onSubscriptionDisabled(disabled);
    } catch (error) {
      this.deps.logger.error(`could not record the health of subscription ${subscriptionId}: ${describeFault(error)}`);
    }
  }

  private async runHandler(delivery: Delivery, handler: EventHandler | undefined): Promise<AttemptOutcome> {
    if (!handler) {
      const message = `no in-process handler of ${delivery.subscriber.extensionKey} for ${delivery.event.eventKey}`;
      return { ok: false, retryable: false, error: { message, status: null } };
    }
    const run = this.deps.startHandlerRun(delivery);
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.deps.settings.handlerTimeoutMs;
    try {
      await Promise.race([
        delivery.event.object().then((event) => handler.handle(event, run.context)),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new HandlerTimeout(timeoutMs)), timeoutMs);
        }),
      ]);
    } catch (error) {
      const cut = run.chainCut();
      if (cut) return { ok: false, retryable: false, error: { message: cut, status: null } };
      return { ok: false, retryable: true, error: { message: `handler failed: ${describeFault(error)}`, status: null } };
    } finally {
      clearTimeout(timer);
    }
    const cut = run.chainCut();
    return cut ? { ok: false, retryable: false, error: { message: cut, status: null } } : { ok: true };
  }

  private async deadLetter(delivery: Delivery, error: DeliveryError, attempt: NewAttempt | null = null): Promise<void> {
    try {
      const letter = deadLetterOf(delivery, await delivery.event.object(), error, this.now());
      await this.deps.deliveries.dead(delivery, attempt, letter);
    } catch (failure) {
      // Storage refused the dead letter: keep the delivery pending and try again later.
      this.deps.logger.error(`could not store the dead letter of delivery ${delivery.id}: ${describeFault(failure)}`);
      delivery.nextAttemptAt = this.now() + 30_000;
      this.deps.deliveries.released(delivery);
      this.armTimer();
      return;
    }
    this.deps.activity.delivery('delivery.dead', delivery, errorSummary(error));
  }
}

/** An attempt that was made: its record, and how long it took (for the metrics). */
interface MadeAttempt {
  record: NewAttempt;
  seconds: number;
}

/** What an attempt comes to (`run` decides, `act` carries it out). */
type Decision =
  /** The daemon is stopping: the delivery stays pending, the attempt uncounted. */
  | { kind: 'released' }
  | { kind: 'succeeded'; attempt: MadeAttempt; httpStatus: number | undefined }
  | { kind: 'retry'; at: number; error: DeliveryError; attempt: MadeAttempt }
  /** Without an attempt when its subscriber is no longer active. */
  | { kind: 'dead'; error: DeliveryError; attempt: MadeAttempt | null };

const errorSummary = (error: DeliveryError) => ({ error: error.message, ...(error.status === null ? {} : { httpStatus: error.status }) });

class HandlerTimeout extends Error {
  constructor(timeoutMs: number) {
    super(`did not finish within ${timeoutMs} ms`);
  }
}

/** Who a delivery's slot counts against: its subscription, or its extension for built-in plugins. */
const fairnessKey = (delivery: Delivery) => delivery.subscriber.subscriptionId ?? `plugin:${delivery.subscriber.extensionKey}`;
