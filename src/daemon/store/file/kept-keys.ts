import type { KeptKey } from '../../events/idempotency.js';

/** A kept key as the index holds it. */
export interface KeptEntry extends KeptKey {
  /** Epoch ms: the key answers until then. */
  expiresAt: number;
}

const FINGERPRINT_BYTES = 32;
const BODY_HASH_BYTES = 32;
const EVENT_ID_BYTES = 16;
/** Slots the tables start with; they double as keys come, up to the capacity. */
const FIRST_SLOTS = 1024;

/**
 * The kept idempotency keys of the file backend, in memory, at most
 * `capacity` of them: adding one more forgets the oldest first. Every entry
 * has the same size whatever its key (a 32-byte fingerprint, a body hash, an
 * event id and an expiry), so the memory a client can make it hold is
 * bounded by the capacity alone: about 160 bytes a key (docs/decisions.md).
 *
 * A Map from fingerprint to slot keeps the order of insertion (oldest first,
 * which is expiry order: every key lives equally long) and finds a key by a
 * hash V8 seeds at random, so that no client can choose keys that collide. The
 * rest of an entry lives in typed arrays, at its slot, not in an object per key.
 */
export class KeptKeys {
  /** Fingerprint (its 32 bytes as a one-byte string) → slot, oldest first. */
  private readonly slots = new Map<string, number>();
  private bodyHashes = new Uint8Array(0);
  private eventIds = new Uint8Array(0);
  private expiries = new Float64Array(0);
  /** Slots handed out so far; those of forgotten entries wait in `free`. */
  private used = 0;
  private readonly free: number[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('the capacity must be a positive integer');
  }

  get size(): number {
    return this.slots.size;
  }

  /** The entry of a fingerprint, unless there is none or its time is up (then it goes). */
  find(fingerprint: Buffer, now: number): KeptEntry | undefined {
    const name = nameOf(fingerprint);
    const slot = this.slots.get(name);
    if (slot === undefined) return undefined;
    if (this.expiries[slot]! <= now) {
      this.forget(name, slot);
      return undefined;
    }
    return this.entryAt(slot);
  }

  /** Adds or replaces the entry (it becomes the newest); past the capacity the oldest is forgotten. */
  add(fingerprint: Buffer, entry: KeptEntry): void {
    const name = nameOf(fingerprint);
    const existing = this.slots.get(name);
    if (existing !== undefined) this.forget(name, existing);
    if (this.slots.size >= this.capacity) {
      const [oldest, slot] = this.slots.entries().next().value!;
      this.forget(oldest, slot);
    }
    const slot = this.free.pop() ?? this.newSlot();
    this.bodyHashes.set(entry.bodyHash.subarray(0, BODY_HASH_BYTES), slot * BODY_HASH_BYTES);
    this.eventIds.set(uuidBytes(entry.eventId), slot * EVENT_ID_BYTES);
    this.expiries[slot] = entry.expiresAt;
    this.slots.set(name, slot);
  }

  /** Forgets the entries whose time is up, oldest first; answers how many. */
  dropExpired(now: number): number {
    let dropped = 0;
    for (const [name, slot] of this.slots) {
      // Insertion order is expiry order, but for keys kept under a lifetime setting that changed since.
      if (this.expiries[slot]! > now) continue;
      this.forget(name, slot);
      dropped += 1;
    }
    return dropped;
  }

  /** Every entry with its fingerprint, oldest first. */
  *entries(): IterableIterator<[Buffer, KeptEntry]> {
    for (const [name, slot] of this.slots) yield [Buffer.from(name, 'latin1'), this.entryAt(slot)];
  }

  private entryAt(slot: number): KeptEntry {
    return {
      bodyHash: Buffer.from(this.bodyHashes.subarray(slot * BODY_HASH_BYTES, (slot + 1) * BODY_HASH_BYTES)),
      eventId: uuidText(this.eventIds.subarray(slot * EVENT_ID_BYTES, (slot + 1) * EVENT_ID_BYTES)),
      expiresAt: this.expiries[slot]!,
    };
  }

  private forget(name: string, slot: number): void {
    this.slots.delete(name);
    this.free.push(slot);
  }

  /** A slot never used yet; the tables double (up to the capacity) when none is left. */
  private newSlot(): number {
    if (this.used === this.expiries.length) {
      const slots = Math.min(this.capacity, Math.max(FIRST_SLOTS, this.expiries.length * 2));
      this.bodyHashes = grown(this.bodyHashes, slots * BODY_HASH_BYTES);
      this.eventIds = grown(this.eventIds, slots * EVENT_ID_BYTES);
      const expiries = new Float64Array(slots);
      expiries.set(this.expiries);
      this.expiries = expiries;
    }
    return this.used++;
  }
}

function grown(table: Uint8Array<ArrayBuffer>, length: number): Uint8Array<ArrayBuffer> {
  const larger = new Uint8Array(length);
  larger.set(table);
  return larger;
}

/** A fingerprint as a Map key: a string of its 32 bytes, one character each (latin1 keeps every byte as it is). */
function nameOf(fingerprint: Buffer): string {
  if (fingerprint.length !== FINGERPRINT_BYTES) throw new RangeError(`a fingerprint is ${FINGERPRINT_BYTES} bytes`);
  return fingerprint.toString('latin1');
}

/** An event id (a UUID) as its 16 bytes. */
function uuidBytes(uuid: string): Buffer {
  const hex = uuid.replaceAll('-', '');
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new RangeError('an event id is a UUID');
  return Buffer.from(hex, 'hex');
}

function uuidText(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
