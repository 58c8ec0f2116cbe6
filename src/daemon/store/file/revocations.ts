import { existsSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { RevocationStore } from '../../auth/tokens.js';
import { AppendLog } from '../append-log.js';
import { Collection } from '../collection.js';
import { fsyncDir } from '../../files.js';

/** One line of revocations.log. */
interface Revocation {
  jti: string;
  /** The token's expiry, unix seconds. */
  exp: number;
}

/** The whole-document store of earlier versions, migrated into the log on open. */
interface LegacyRevocationsDocument {
  schemaVersion: 1;
  revoked: Record<string, number>;
}

/**
 * revocations.log, one appended line per logout (never a rewrite of the
 * whole list), replayed into memory at start; pruning compacts the file.
 */
export class FileRevocationStore implements RevocationStore {
  private constructor(
    private readonly log: AppendLog<Revocation>,
    /** jti → exp of every revoked token not yet pruned. */
    private readonly revoked: Map<string, number>,
  ) {}

  static async open(dataDir: string): Promise<FileRevocationStore> {
    const revoked = new Map<string, number>();
    const log = await AppendLog.open<Revocation>(join(dataDir, 'revocations.log'), (record) => {
      revoked.set(record.jti, record.exp);
    });
    await migrateLegacyRevocations(join(dataDir, 'revocations.json'), log, revoked);
    return new FileRevocationStore(log, revoked);
  }

  async isRevoked(jti: string): Promise<boolean> {
    return this.revoked.has(jti);
  }

  async revoke(jti: string, expiresAt: number): Promise<void> {
    this.revoked.set(jti, expiresAt);
    await this.log.append({ jti, exp: expiresAt });
  }

  async pruneExpired(now: number): Promise<number> {
    let pruned = 0;
    for (const [jti, exp] of this.revoked) {
      if (exp > now) continue;
      this.revoked.delete(jti);
      pruned += 1;
    }
    if (pruned > 0) await this.log.rewrite(revocationsOf(this.revoked));
    return pruned;
  }

  close(): Promise<void> {
    return this.log.close();
  }
}

function* revocationsOf(revoked: Map<string, number>): Iterable<Revocation> {
  for (const [jti, exp] of revoked) yield { jti, exp };
}

/**
 * Moves the revocations of an earlier version's revocations.json into the log:
 * the log is rewritten with both (durably) before the old file is removed, so a
 * crash in between only repeats the migration at the next start.
 */
async function migrateLegacyRevocations(file: string, log: AppendLog<Revocation>, revoked: Map<string, number>): Promise<void> {
  if (!existsSync(file)) return;
  const legacy = await Collection.open<LegacyRevocationsDocument>({
    file,
    schemaVersion: 1,
    create: () => ({ schemaVersion: 1, revoked: {} }),
  });
  const now = Math.floor(Date.now() / 1000);
  for (const [jti, exp] of Object.entries(legacy.data.revoked)) {
    if (exp > now) revoked.set(jti, exp);
  }
  await log.rewrite(revocationsOf(revoked));
  await unlink(file);
  await fsyncDir(dirname(file));
}
