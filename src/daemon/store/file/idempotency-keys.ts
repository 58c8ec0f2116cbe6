import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ClaimOutcome, ClaimRequest, IdempotencyKeyStore, KeyRef } from '../../events/idempotency.js';
import { AppendLog } from '../append-log.js';
import { KeptKeys, type KeptEntry } from './kept-keys.js';

export const IDEMPOTENCY_KEYS_FILE = 'idempotency-keys.log';

/**
 * A line of idempotency-keys.log; keys are named by their fingerprint (base64).
 * `claim` is written durably before the claimed event is published; `commit`
 * and `release` settle it, written lazily (a crash that loses them leaves the
 * claim unsettled, and opening the log settles it from the event log).
 * `kept` lines are what a rewrite writes: one per kept key.
 */
type KeyLine =
  | { claim: string; workspaceId: string; bodyHash: string; eventId: string; expiresAt: number }
  | { commit: string }
  | { release: string }
  | { kept: string; bodyHash: string; eventId: string; expiresAt: number };

/** A claim recorded and not settled yet. */
interface OpenClaim extends KeptEntry {
  workspaceId: string;
}

export interface FileIdempotencyOptions {
  /** PLATFORM_IDEMPOTENCY_MAX_KEYS: keys kept at most (see KeptKeys). */
  maxKeys: number;
  /** Whether the workspace's event log holds the event: how a claim left unsettled by a crash is settled. */
  eventRecorded: (workspaceId: string, eventId: string) => Promise<boolean>;
  /** A settling line that could not be written (nobody waits for it). */
  reportError: (error: unknown) => void;
  now?: () => number;
}

/** Lines beyond twice what is kept before the log is rewritten to what is kept. */
const REWRITE_SLACK_LINES = 1_000;

/**
 * Idempotency keys on files: kept in memory (KeptKeys, bounded by
 * `maxKeys`) and in idempotency-keys.log, replayed at start, so that a key
 * outlives a restart. The daemon is the data directory's only writer, so
 * claims need no lease: a claim is this process's until it settles it, and
 * after a crash the event log says whether its event was recorded.
 */
export class FileIdempotencyKeyStore implements IdempotencyKeyStore {
  /** Claims of requests in flight, by fingerprint: as many as requests being served. */
  private readonly open = new Map<string, OpenClaim>();
  private rewriting: Promise<void> | null = null;

  private constructor(
    private readonly log: AppendLog<KeyLine>,
    private readonly kept: KeptKeys,
    private readonly options: FileIdempotencyOptions,
    /** Lines in the log: it is rewritten once they far exceed what is kept. */
    private lines: number,
  ) {}

  static async open(dataDir: string, options: FileIdempotencyOptions): Promise<FileIdempotencyKeyStore> {
    const kept = new KeptKeys(options.maxKeys);
    const unsettled = new Map<string, OpenClaim>();
    let lines = 0;
    const log = await AppendLog.open<KeyLine>(join(dataDir, IDEMPOTENCY_KEYS_FILE), (line) => {
      lines += 1;
      if ('claim' in line) {
        unsettled.set(line.claim, { workspaceId: line.workspaceId, bodyHash: Buffer.from(line.bodyHash, 'base64'), eventId: line.eventId, expiresAt: line.expiresAt });
      } else if ('commit' in line) {
        const claim = unsettled.get(line.commit);
        unsettled.delete(line.commit);
        if (claim) kept.add(Buffer.from(line.commit, 'base64'), claim);
      } else if ('release' in line) {
        unsettled.delete(line.release);
      } else {
        kept.add(Buffer.from(line.kept, 'base64'), { bodyHash: Buffer.from(line.bodyHash, 'base64'), eventId: line.eventId, expiresAt: line.expiresAt });
      }
    });
    const now = (options.now ?? Date.now)();
    // Claims a crash left unsettled: published exactly when their event was recorded.
    for (const [fingerprint, claim] of unsettled) {
      if (claim.expiresAt > now && (await options.eventRecorded(claim.workspaceId, claim.eventId))) kept.add(Buffer.from(fingerprint, 'base64'), claim);
    }
    kept.dropExpired(now);
    const store = new FileIdempotencyKeyStore(log, kept, options, lines);
    if (unsettled.size > 0 || store.rewriteIsDue()) await store.rewrite();
    return store;
  }

  async claim({ workspaceId, keyDigest }: KeyRef, { bodyHash, eventId, ttlMs }: ClaimRequest): Promise<ClaimOutcome> {
    const fingerprint = fingerprintOf(workspaceId, keyDigest);
    const name = fingerprint.toString('base64');
    const now = this.now();
    const kept = this.kept.find(fingerprint, now);
    if (kept) return { kind: 'kept', kept: { bodyHash: kept.bodyHash, eventId: kept.eventId } };
    if (this.open.has(name)) return { kind: 'held' };
    const claim: OpenClaim = { workspaceId, bodyHash, eventId, expiresAt: now + ttlMs };
    this.open.set(name, claim);
    this.lines += 1;
    try {
      // On disk before the event is: after a crash the claim is there to be settled from the event log.
      await this.log.append({ claim: name, workspaceId, bodyHash: bodyHash.toString('base64'), eventId, expiresAt: claim.expiresAt });
    } catch (error) {
      this.open.delete(name);
      throw error;
    }
    let settled = false;
    const settle = (line: KeyLine, keep: boolean) => {
      if (settled) return;
      settled = true;
      this.open.delete(name);
      if (keep) this.kept.add(fingerprint, claim);
      this.lines += 1;
      this.log.appendLazily(line, this.options.reportError);
      if (this.rewriteIsDue()) void this.rewrite().catch(this.options.reportError);
    };
    return {
      kind: 'claimed',
      claim: {
        commit: async () => settle({ commit: name }, true),
        release: async () => settle({ release: name }, false),
      },
    };
  }

  async prune(): Promise<number> {
    const dropped = this.kept.dropExpired(this.now());
    if (this.rewriteIsDue()) await this.rewrite();
    return dropped;
  }

  /** A deleted workspace's events stay in the event log until retention removes them (WorkspaceService.delete): so do its keys, until they expire. */
  async forgetWorkspace(): Promise<void> {}

  /** Keys kept in memory now (tests check the bound). */
  get keptCount(): number {
    return this.kept.size;
  }

  async close(): Promise<void> {
    await this.rewriting;
    await this.log.close();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private rewriteIsDue(): boolean {
    return this.lines > 2 * (this.kept.size + this.open.size) + REWRITE_SLACK_LINES;
  }

  /**
   * Replaces the log with what memory holds: a line per kept key and per
   * claim in flight. Taken in one synchronous step, so it reflects every line
   * appended before (see AppendLog.rewrite); lines appended after follow it.
   */
  private rewrite(): Promise<void> {
    if (this.rewriting) return this.rewriting;
    this.lines = this.kept.size + this.open.size;
    this.rewriting = this.log.rewrite(this.currentLines()).finally(() => (this.rewriting = null));
    return this.rewriting;
  }

  /** Read by AppendLog.rewrite as it is called, one line at a time: no array of every line on top of the text. */
  private *currentLines(): Generator<KeyLine> {
    for (const [fingerprint, { bodyHash, eventId, expiresAt }] of this.kept.entries()) {
      yield { kept: fingerprint.toString('base64'), bodyHash: bodyHash.toString('base64'), eventId, expiresAt };
    }
    for (const [name, { workspaceId, bodyHash, eventId, expiresAt }] of this.open) {
      yield { claim: name, workspaceId, bodyHash: bodyHash.toString('base64'), eventId, expiresAt };
    }
  }
}

/** One fixed-size name per key and workspace; length-prefixed, so that no two (workspace, key) pairs share one. */
function fingerprintOf(workspaceId: string, keyDigest: Buffer): Buffer {
  return createHash('sha256').update(`${workspaceId.length}:${workspaceId}:`).update(keyDigest).digest();
}
