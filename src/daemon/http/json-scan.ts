/**
 * What JSON.parse accepts but the daemon refuses, found in one pass over a
 * text that JSON.parse has already accepted:
 *
 * - a key given twice in one object, spelt alike or not (`"a"` and `"\u0061"`):
 *   JSON.parse silently keeps the last, while another reader of the same bytes
 *   (a signature check, a proxy, a plugin with its own parser) may keep the first;
 * - `__proto__` anywhere, and `prototype` inside a `constructor` object: plain
 *   data to JSON.parse, but prototype pollution for code that later merges the
 *   value into another object (the rule of Fastify's secure-json-parse);
 * - a number beyond the range of a double (`1e999`): JSON.parse reads it as
 *   Infinity, which JSON cannot hold, so it would be stored as null.
 *
 * The scan is iterative, so 10,000 levels of nesting cost no stack, and linear:
 * keys are compared by hash, small objects by a short linear search, larger
 * ones through one Map each. The hash is not keyed, so keys can be made to
 * collide on purpose: an object where they do is indexed by the keys' text
 * instead, as JSON.parse itself does. Otherwise the only strings the scan
 * creates are the decoded forms of keys that contain a backslash, numbers with
 * an exponent or 300 digits, and, when it finds a problem, its description.
 */

export type JsonProblem =
  /** `at`: where the object holding the key is, dotted as in `meta.issues` (`payload.items.0`); "" at the top. */
  | { kind: 'duplicate-key' | 'forbidden-key'; key: string; at: string }
  /** `at`: where the number is. */
  | { kind: 'number-out-of-range'; number: string; at: string };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;

/** Up to this many keys, an object is searched linearly; past it, it gets a Map. */
const LINEAR_SEARCH_KEYS = 16;
/** More distinct keys than this with one hash in one object is no accident: that object is indexed by text. */
const MAX_SAME_HASH = 8;
/** A number of this many characters at most, without an exponent, is below 1e308: within a double (about 1.8e308). */
const MAX_FINITE_PLAIN_NUMBER = 308;
/** After a scan that needed more entries than this, the scanner lets go of its arrays. */
const RETAINED_ENTRIES = 1024;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Hashes are kept to 30 bits: small integers, which V8 stores in a Map without allocating. */
const HASH_MASK = 0x3fffffff;

/**
 * The deepest nesting of arrays and objects a body may have. JSON.parse builds
 * every level before the scan can look at it: a 1 MiB body of `[` cost about
 * 190 ms of the daemon's one main thread, on an anonymous route. Real bodies
 * stay far below (event payloads are held to 32 levels by the domain), and 64
 * levels cost JSON.parse nothing.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * True when `text` opens more than MAX_JSON_DEPTH arrays or objects inside one
 * another. Runs before JSON.parse, so it takes any text (a malformed one is
 * left for JSON.parse to refuse) and stops at the first level too deep.
 */
export function nestsTooDeep(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const char = text.charCodeAt(i);
    if (char === QUOTE) {
      const close = endOfString(text, i);
      if (close < 0) return false;
      i = close;
    } else if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
      depth += 1;
      if (depth > MAX_JSON_DEPTH) return true;
    } else if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
      depth -= 1;
    }
  }
  return false;
}

/** The hash keys are compared by (of the decoded key). Exported for the test that makes keys collide on purpose. */
export function keyHash(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i += 1) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME);
  return hash & HASH_MASK;
}

/** `text` must be valid JSON (JSON.parse accepted it): malformed input is not detected here. */
export function findJsonProblem(text: string): JsonProblem | null {
  return scanner.scan(text);
}

/**
 * The scan's state, kept between calls so that scanning a usual body
 * allocates nothing. Scans are synchronous, so one scanner serves them all.
 */
class JsonScanner {
  private text = '';

  // One entry per open container, outermost first; `depth` is the innermost's index.
  private depth = -1;
  private readonly isObject: boolean[] = [];
  /** Objects: the record of the current key. Arrays: the index of the current element. */
  private readonly position: number[] = [];
  /** Objects: the record of their first key. */
  private readonly firstRecord: number[] = [];
  /** Objects past LINEAR_SEARCH_KEYS keys: hash -> latest record with that hash. */
  private readonly recordsByHash: (Map<number, number> | undefined)[] = [];
  /** Objects with more than MAX_SAME_HASH keys of one hash: decoded key -> record. */
  private readonly recordsByText: (Map<string, number> | undefined)[] = [];
  /** Objects that are the value of a `constructor` key: `prototype` is refused in them. */
  private readonly guardsPrototype: boolean[] = [];

  // One record per key of every open object, the innermost object's keys last.
  private records = 0;
  private readonly hashes: number[] = [];
  /** Index of the key's opening quote. */
  private readonly starts: number[] = [];
  /** Index of the key's closing quote. */
  private readonly ends: number[] = [];
  private readonly escaped: boolean[] = [];
  /** In Map-indexed objects: the previous record of the same object with the same hash, or -1. */
  private readonly previousSameHash: number[] = [];

  scan(text: string): JsonProblem | null {
    this.text = text;
    this.depth = -1;
    this.records = 0;
    try {
      return this.run();
    } finally {
      this.text = '';
      this.recordsByHash.length = 0;
      this.recordsByText.length = 0;
      if (this.isObject.length > RETAINED_ENTRIES || this.hashes.length > RETAINED_ENTRIES) this.release();
    }
  }

  private run(): JsonProblem | null {
    const text = this.text;
    const length = text.length;
    let expectingKey = false;
    let afterConstructorKey = false;
    let i = 0;
    while (i < length) {
      const char = text.charCodeAt(i);
      if (char === QUOTE) {
        if (!expectingKey) {
          afterConstructorKey = false;
          i = endOfString(text, i) + 1;
          continue;
        }
        expectingKey = false;
        const record = this.readKey(i);
        if (this.earlierSameKey(record) >= 0) return this.keyProblem('duplicate-key', record);
        if (this.keyIs(record, '__proto__') || (this.guardsPrototype[this.depth] && this.keyIs(record, 'prototype'))) {
          return this.keyProblem('forbidden-key', record);
        }
        afterConstructorKey = this.keyIs(record, 'constructor');
        this.remember(record);
        i = this.ends[record]! + 1;
        continue;
      }
      if (char === MINUS || (char >= DIGIT_0 && char <= DIGIT_9)) {
        let end = i + 1;
        let exponent = false;
        for (let next = text.charCodeAt(end); ; next = text.charCodeAt(end)) {
          if (next === LOWER_E || next === UPPER_E) exponent = true;
          else if (!((next >= DIGIT_0 && next <= DIGIT_9) || next === DOT || next === MINUS || next === PLUS)) break;
          end += 1;
        }
        if ((exponent || end - i > MAX_FINITE_PLAIN_NUMBER) && !Number.isFinite(Number(text.slice(i, end)))) {
          return { kind: 'number-out-of-range', number: text.slice(i, end), at: this.pathTo(this.depth + 1) };
        }
        afterConstructorKey = false;
        i = end;
        continue;
      }
      if (char === OPEN_OBJECT || char === OPEN_ARRAY) {
        const depth = (this.depth += 1);
        const opensObject = char === OPEN_OBJECT;
        this.isObject[depth] = opensObject;
        this.position[depth] = opensObject ? -1 : 0;
        this.firstRecord[depth] = this.records;
        this.recordsByHash[depth] = undefined;
        this.recordsByText[depth] = undefined;
        this.guardsPrototype[depth] = opensObject && afterConstructorKey;
        expectingKey = opensObject;
        afterConstructorKey = false;
      } else if (char === CLOSE_OBJECT || char === CLOSE_ARRAY) {
        if (this.isObject[this.depth]) this.records = this.firstRecord[this.depth]!;
        this.recordsByHash[this.depth] = undefined;
        this.recordsByText[this.depth] = undefined;
        this.depth -= 1;
        afterConstructorKey = false;
      } else if (char === COMMA) {
        if (this.isObject[this.depth]) expectingKey = true;
        else this.position[this.depth]! += 1;
        afterConstructorKey = false;
      }
      i += 1;
    }
    return null;
  }

  /** Records the key whose opening quote is at `open`, as the current key of the innermost object. */
  private readKey(open: number): number {
    const text = this.text;
    const record = this.records;
    this.records += 1;
    let hash = FNV_OFFSET;
    let hasEscape = false;
    let i = open + 1;
    for (let char = text.charCodeAt(i); char !== QUOTE; char = text.charCodeAt(i)) {
      if (char === BACKSLASH) {
        // The escaped character (or the "u" of \uXXXX) is skipped; such a key is hashed decoded below.
        hasEscape = true;
        i += 2;
      } else {
        hash = Math.imul(hash ^ char, FNV_PRIME);
        i += 1;
      }
    }
    this.starts[record] = open;
    this.ends[record] = i;
    this.escaped[record] = hasEscape;
    this.hashes[record] = hasEscape ? keyHash(this.decodeKey(record)) : hash & HASH_MASK;
    this.previousSameHash[record] = -1;
    this.position[this.depth] = record;
    return record;
  }

  /** The earlier record of the innermost object with the same key as `record`, or -1. */
  private earlierSameKey(record: number): number {
    const byText = this.recordsByText[this.depth];
    if (byText) return byText.get(this.decodeKey(record)) ?? -1;
    const hash = this.hashes[record]!;
    const map = this.recordsByHash[this.depth];
    if (map) {
      let sameHash = 0;
      for (let other = map.get(hash) ?? -1; other >= 0; other = this.previousSameHash[other]!) {
        if (this.sameKey(other, record)) return other;
        sameHash += 1;
        if (sameHash > MAX_SAME_HASH) {
          this.indexByText(record);
          return this.recordsByText[this.depth]!.get(this.decodeKey(record)) ?? -1;
        }
      }
      return -1;
    }
    for (let other = this.firstRecord[this.depth]!; other < record; other += 1) {
      if (this.hashes[other] === hash && this.sameKey(other, record)) return other;
    }
    return -1;
  }

  /** Makes `record` findable by later keys; an object that outgrows the linear search gets its Map here. */
  private remember(record: number): void {
    const byText = this.recordsByText[this.depth];
    if (byText) {
      byText.set(this.decodeKey(record), record);
      return;
    }
    const map = this.recordsByHash[this.depth];
    if (map) {
      this.index(map, record);
      return;
    }
    const first = this.firstRecord[this.depth]!;
    if (record - first + 1 <= LINEAR_SEARCH_KEYS) return;
    const created = new Map<number, number>();
    for (let other = first; other <= record; other += 1) this.index(created, other);
    this.recordsByHash[this.depth] = created;
  }

  /** Indexes the keys before `record` of the innermost object by their text, from now on. */
  private indexByText(record: number): void {
    const byText = new Map<string, number>();
    for (let other = this.firstRecord[this.depth]!; other < record; other += 1) byText.set(this.decodeKey(other), other);
    this.recordsByText[this.depth] = byText;
    this.recordsByHash[this.depth] = undefined;
  }

  /** Chains records whose hashes collide. */
  private index(map: Map<number, number>, record: number): void {
    this.previousSameHash[record] = map.get(this.hashes[record]!) ?? -1;
    map.set(this.hashes[record]!, record);
  }

  private decodeKey(record: number): string {
    const start = this.starts[record]!;
    const end = this.ends[record]!;
    return this.escaped[record] ? (JSON.parse(this.text.slice(start, end + 1)) as string) : this.text.slice(start + 1, end);
  }

  private sameKey(a: number, b: number): boolean {
    if (this.escaped[a] || this.escaped[b]) return this.decodeKey(a) === this.decodeKey(b);
    const startA = this.starts[a]!;
    const startB = this.starts[b]!;
    const length = this.ends[a]! - startA;
    if (length !== this.ends[b]! - startB) return false;
    for (let offset = 1; offset < length; offset += 1) {
      if (this.text.charCodeAt(startA + offset) !== this.text.charCodeAt(startB + offset)) return false;
    }
    return true;
  }

  /** True when the key of `record` is exactly `name`. */
  private keyIs(record: number, name: string): boolean {
    if (this.escaped[record]) return this.decodeKey(record) === name;
    const start = this.starts[record]! + 1;
    return this.ends[record]! - start === name.length && this.text.startsWith(name, start);
  }

  private keyProblem(kind: 'duplicate-key' | 'forbidden-key', record: number): JsonProblem {
    return { kind, key: this.decodeKey(record), at: this.pathTo(this.depth) };
  }

  /** The dotted path through the current members of the containers above `depth`. */
  private pathTo(depth: number): string {
    const members: string[] = [];
    for (let level = 0; level < depth; level += 1) {
      members.push(this.isObject[level] ? this.decodeKey(this.position[level]!) : String(this.position[level]));
    }
    return members.join('.');
  }

  /** Lets go of the memory a huge body made the arrays grow to. */
  private release(): void {
    const perContainer = [this.isObject, this.position, this.firstRecord, this.guardsPrototype];
    const perKey = [this.hashes, this.starts, this.ends, this.escaped, this.previousSameHash];
    for (const entries of [...perContainer, ...perKey]) entries.length = 0;
  }
}

const scanner = new JsonScanner();

/** Index of the quote that closes the string opening at `open`, or -1 when the string is never closed. */
function endOfString(text: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}
