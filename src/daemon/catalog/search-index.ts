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
export class SearchIndex {
  private readonly postings = new Map<string, number[]>();
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
      posting.splice(lowerBound(posting, slot), 1);
      if (posting.length === 0) this.postings.delete(gram);
    }
    for (const gram of after) {
      if (before.has(gram)) continue;
      const posting = this.postings.get(gram);
      if (!posting) this.postings.set(gram, [slot]);
      // Slots are handed out in increasing order, so a new document appends.
      else if (posting[posting.length - 1]! < slot) posting.push(slot);
      else posting.splice(lowerBound(posting, slot), 0, slot);
    }
    this.texts[slot] = text;
  }

  /**
   * The slots whose text contains every term (terms already lowercased, without
   * whitespace), limited to `scope` when given. Unordered.
   */
  query(terms: readonly string[], scope: ReadonlySet<number> | null): number[] {
    const postings: number[][] = [];
    for (const term of terms) {
      for (const gram of queryGramsOf(term)) {
        const posting = this.postings.get(gram);
        if (!posting) return [];
        postings.push(posting);
      }
    }
    let candidates: Iterable<number>;
    if (postings.length === 0) candidates = scope ?? this.texts.keys();
    else {
      // Shortest first: every later intersection then costs little.
      postings.sort((a, b) => a.length - b.length);
      let narrowed = postings[0]!;
      for (let i = 1; i < postings.length && narrowed.length > 0; i += 1) narrowed = intersect(narrowed, postings[i]!);
      candidates = scope ? narrowed.filter((slot) => scope.has(slot)) : narrowed;
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
function intersect(few: readonly number[], many: readonly number[]): number[] {
  const both: number[] = [];
  let position = 0;
  for (const slot of few) {
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
function lowerBound(sorted: readonly number[], slot: number, low = 0, high = sorted.length): number {
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sorted[middle]! < slot) low = middle + 1;
    else high = middle;
  }
  return low;
}
