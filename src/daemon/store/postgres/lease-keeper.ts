import type { Delivery } from '../../dispatch/types.js';
import { describeFault } from '../../errors.js';
import type { Database } from './database.js';
import { RELEASE_LEASES } from './sql/release-leases.js';
import { RENEW_LEASES } from './sql/renew-leases.js';

export interface LeaseKeeperOptions {
  /** PLATFORM_DELIVERY_LEASE: how long a claimed delivery stays this daemon's without a renewal. */
  leaseMs: number;
  logError: (message: string) => void;
}

/**
 * The deliveries leased to this daemon, one set for every store that takes a
 * lease (a publish, a claim, a replay): it renews their leases while they are
 * held, lets go of those whose lease may lapse unrenewed, and stops both
 * timers on close.
 */
export class LeaseKeeper {
  /** Deliveries leased to this daemon, by id: renewed while held. */
  private readonly held = new Map<string, Delivery>();
  /**
   * Until when (performance.now()) each held delivery's lease surely lasts: from the moment
   * the statement that set it was sent, the database's now() being later.
   */
  private readonly leaseEnds = new WeakMap<Delivery, number>();
  private readonly renewal: NodeJS.Timeout;
  private readonly expiry: NodeJS.Timeout;
  private readonly expiryMargin: number;
  private lost: (deliveryId: string) => void = () => undefined;
  private resultOnItsWay: (deliveryId: string) => boolean = () => false;

  constructor(
    private readonly database: Database,
    private readonly options: LeaseKeeperOptions,
  ) {
    this.renewal = setInterval(() => void this.renew(), Math.max(100, options.leaseMs / 3));
    this.renewal.unref();
    this.expiryMargin = Math.max(50, options.leaseMs / 10);
    this.expiry = setInterval(() => this.letLapsingGo(), this.expiryMargin);
    this.expiry.unref();
  }

  /** Whom leases name: this daemon. */
  get owner(): string {
    return this.database.instanceId;
  }

  get leaseMs(): number {
    return this.options.leaseMs;
  }

  get count(): number {
    return this.held.size;
  }

  /** `lost` is called with a held delivery whose lease could not be renewed in time, or that another daemon took over. */
  onLost(lost: (deliveryId: string) => void): void {
    this.lost = lost;
  }

  /** A delivery whose result is being written is not lost when its renewal misses it: the write releases its lease. */
  whileWriting(resultOnItsWay: (deliveryId: string) => boolean): void {
    this.resultOnItsWay = resultOnItsWay;
  }

  /** `leasedAt`: performance.now() when the statement that leased it was sent. */
  hold(delivery: Delivery, leasedAt: number): Delivery {
    this.held.set(delivery.id, delivery);
    this.leaseEnds.set(delivery, leasedAt + this.options.leaseMs);
    return delivery;
  }

  holds(delivery: Delivery): boolean {
    return this.held.get(delivery.id) === delivery;
  }

  /** No longer held (its lease is released by whoever lets go of it); false when this run of it was not held. */
  letGo(delivery: Delivery): boolean {
    if (!this.holds(delivery)) return false;
    this.held.delete(delivery.id);
    return true;
  }

  /** Frees these deliveries (only this daemon's leases) for any daemon's next claim. */
  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.database.query(RELEASE_LEASES, [ids, this.owner]);
  }

  /** Releases every lease held (this daemon stops): others take those deliveries at once instead of after the lease. */
  async releaseAll(): Promise<void> {
    await this.release([...this.held.keys()]).catch((error: unknown) => this.options.logError(`could not release leases: ${describeFault(error)}`));
    this.held.clear();
  }

  close(): void {
    clearInterval(this.renewal);
    clearInterval(this.expiry);
  }

  /**
   * Lets go of held deliveries whose lease may lapse before the next look (renewals failed:
   * the database did not answer): once it lapses another daemon may claim one, so an attempt
   * in flight ends and none starts here.
   */
  private letLapsingGo(): void {
    const soon = performance.now() + this.expiryMargin;
    let given = 0;
    for (const [id, delivery] of this.held) {
      if ((this.leaseEnds.get(delivery) ?? 0) > soon) continue;
      this.held.delete(id);
      this.lost(id);
      given += 1;
    }
    if (given > 0) this.options.logError(`let go of ${given} deliveries whose lease could not be renewed in time (other daemons may take them)`);
  }

  /** Renews the lease of every delivery held; one another daemon took over (this one stalled past its lease) is let go. */
  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const ids = [...this.held.keys()];
    const sentAt = performance.now();
    try {
      const { rows } = await this.database.query<{ id: string }>(RENEW_LEASES, [ids, this.owner, this.options.leaseMs]);
      const kept = new Set(rows.map((row) => row.id));
      for (const id of ids) {
        const delivery = this.held.get(id);
        if (!delivery) continue;
        if (kept.has(id)) this.leaseEnds.set(delivery, sentAt + this.options.leaseMs);
        else if (!this.resultOnItsWay(id)) {
          this.held.delete(id);
          this.lost(id);
        }
      }
    } catch (error) {
      this.options.logError(`could not renew delivery leases: ${describeFault(error)}`);
    }
  }
}
