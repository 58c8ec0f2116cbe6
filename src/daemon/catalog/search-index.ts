/**
 * Substring search without scanning every document: each document's lowercased
 * fields are cut into every 2- and 3-character gram, and each gram keeps the
 * sorted list of documents (slots) that contain it. A term of three or more
 * characters can only occur in documents that hold all of its trigrams; a
 * two-character term is a bigram itself. A query intersects those lists,
 * shortest first, and confirms each remaining candidate with a real substring
 * test: the index never decides a match on its own, it only narrows where to
 * look. One-character terms narrow nothing and are checked on every document
 * (of the scope).
 */
/**
 * A sorted list of slots in an Int32Array (4 bytes a slot: a catalog of 10,000
 * extensions holds about 1.4 million of them), grown by doubling.
 */
class Posting {
  private slots = new Int32Array(4);
  length = 0;

  view(): Int32Array {
    return this.slots.subarray(0, this.length);
  }

  insert(slot: number): void {
    if (this.length === this.slots.length) {
      const grown = new Int32Array(this.slots.length * 2);
      grown.set(this.slots);
      this.slots = grown;
    }
    // Slots are handed out in increasing order, so a new document appends.
    const at = this.length > 0 && this.slots[this.length - 1]! < slot ? this.length : lowerBound(this.view(), slot);
    this.slots.copyWithin(at + 1, at, this.length);
    this.slots[at] = slot;
    this.length += 1;
  }

  remove(slot: number): void {
    const at = lowerBound(this.view(), slot);
    this.slots.copyWithin(at, at + 1, this.length);
    this.length -= 1;
  }

  /** Drops the spare capacity (after a bulk load). */
  trim(): void {
    this.slots = this.slots.slice(0, this.length);
  }
}

export class SearchIndex {
  private readonly postings = new Map<string, Posting>();
  /** slot → the lowercased fields joined by "\n" (whitespace, so never inside a term). */
  private readonly texts: string[] = [];

  /** Indexes a document, replacing what the slot held before. */
  set(slot: number, fields: readonly string[]): void {
    const text = fields.map((field) => field.toLowerCase()).join('\n');
    const previous = this.texts[slot];
    if (previous === text) return;
    const before = previous === undefined ? new Set<string>() : gramsOf(previous);
    const after = gramsOf(text);
    for (const gram of before) {
      if (after.has(gram)) continue;
      const posting = this.postings.get(gram)!;
      posting.remove(slot);
      if (posting.length === 0) this.postings.delete(gram);
    }
    for (const gram of after) {
      if (before.has(gram)) continue;
      let posting = this.postings.get(gram);
      if (!posting) {
        posting = new Posting();
        this.postings.set(gram, posting);
      }
      posting.insert(slot);
    }
    this.texts[slot] = text;
  }

  /** Releases the spare capacity left by indexing many documents at once. */
  trim(): void {
    for (const posting of this.postings.values()) posting.trim();
  }

  /**
   * The slots whose text contains every term (terms already lowercased, without
   * whitespace), limited to `scope` when given. Unordered.
   */
  query(terms: readonly string[], scope: ReadonlySet<number> | null): number[] {
    const postings: Int32Array[] = [];
    for (const term of terms) {
      for (const gram of queryGramsOf(term)) {
        const posting = this.postings.get(gram);
        if (!posting) return [];
        postings.push(posting.view());
      }
    }
    let candidates: Iterable<number>;
    if (postings.length === 0) candidates = scope ?? this.texts.keys();
    else {
      // Shortest first: every later intersection then costs little.
      postings.sort((a, b) => a.length - b.length);
      let narrowed: ArrayLike<number> = postings[0]!;
      for (let i = 1; i < postings.length && narrowed.length > 0; i += 1) narrowed = intersect(narrowed, postings[i]!);
      candidates = scope ? Array.from(narrowed).filter((slot) => scope.has(slot)) : Array.from(narrowed);
    }
    // A term of two or three characters is its own gram: holding the gram is holding the term.
    const unproven = terms.filter((term) => term.length === 1 || term.length > 3);
    const matches: number[] = [];
    for (const slot of candidates) {
      const text = this.texts[slot];
      if (text !== undefined && unproven.every((term) => text.includes(term))) matches.push(slot);
    }
    return matches;
  }
}

/**
 * The slots in both sorted lists. Each slot of the shorter list is looked for in
 * the longer one by galloping from the last position: linear when the lists are
 * alike in length, logarithmic when one is much shorter.
 */
function intersect(few: ArrayLike<number>, many: ArrayLike<number>): number[] {
  const both: number[] = [];
  let position = 0;
  for (let i = 0; i < few.length; i += 1) {
    const slot = few[i]!;
    let step = 1;
    let high = position;
    while (high < many.length && many[high]! < slot) {
      position = high + 1;
      high += step;
      step *= 2;
    }
    position = lowerBound(many, slot, position, Math.min(high, many.length));
    if (position === many.length) break;
    if (many[position] === slot) both.push(slot);
  }
  return both;
}

function gramsOf(text: string): Set<string> {
  const grams = new Set<string>();
  for (const field of text.split('\n')) {
    for (let i = 0; i + 2 <= field.length; i += 1) {
      grams.add(field.slice(i, i + 2));
      if (i + 3 <= field.length) grams.add(field.slice(i, i + 3));
    }
  }
  return grams;
}

/** The grams a term must contain: its trigrams, or the term itself when it is a bigram; none for one character. */
function queryGramsOf(term: string): string[] {
  if (term.length < 3) return term.length === 2 ? [term] : [];
  const grams: string[] = [];
  for (let i = 0; i + 3 <= term.length; i += 1) grams.push(term.slice(i, i + 3));
  return grams;
}

/** First index in [low, high) whose value is >= slot (high when there is none). */
function lowerBound(sorted: ArrayLike<number>, slot: number, low = 0, high = sorted.length): number {
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! < slot) low = middle + 1;
    else high = middle;
  }
  return low;
}
