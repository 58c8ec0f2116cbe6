import { createHash } from 'node:crypto';
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { isMissing } from '../../files.js';

/**
 * The index of a sealed event segment, kept beside it (`segment-000001.idx`)
 * so that a start reads a few bytes an event instead of every line: per
 * workspace, its events' columns as the log holds them in memory. A segment
 * is immutable once sealed (retention writes a new one, and a new index), so
 * an index stays true as long as its segment keeps the size it names; its
 * digest catches one cut short or garbled. An index that is missing, of
 * another size or unreadable is ignored: the segment is read as before and
 * the index written anew. Numbers are in the machine's byte order.
 */

/** The columns of one workspace's events, in this order (see WorkspaceLines). */
export interface IndexedLines {
  length: number;
  oldest: number;
  offsets: Float64Array;
  lengths: Uint32Array;
  occurredAt: Float64Array;
  idHashes: Uint32Array;
  keyHashes: Uint32Array;
}

interface Header {
  version: 1;
  segmentBytes: number;
  digest: string;
  workspaces: Array<{ id: string; length: number; oldest: number | null }>;
}

const VERSION = 1;
/** Bytes of an event across the columns. */
const BYTES_PER_EVENT = 8 + 4 + 8 + 4 + 4;

export const indexFileOf = (segmentFile: string) => segmentFile.replace(/\.log$/, '.idx');

/** Writes the index of a sealed segment of `segmentBytes` bytes (to a temporary file, then renamed over). */
export function writeSegmentIndex(segmentFile: string, segmentBytes: number, workspaces: ReadonlyMap<string, IndexedLines>): void {
  const columns: Uint8Array[] = [];
  const header: Header = { version: VERSION, segmentBytes, digest: '', workspaces: [] };
  for (const [id, lines] of workspaces) {
    // JSON has no Infinity: a workspace without events has no oldest.
    header.workspaces.push({ id, length: lines.length, oldest: Number.isFinite(lines.oldest) ? lines.oldest : null });
    for (const column of [lines.offsets, lines.lengths, lines.occurredAt, lines.idHashes, lines.keyHashes]) {
      columns.push(new Uint8Array(column.buffer, column.byteOffset, column.byteLength));
    }
  }
  const digest = createHash('sha256');
  for (const column of columns) digest.update(column);
  header.digest = digest.digest('hex');
  const file = indexFileOf(segmentFile);
  const temp = `${file}.tmp`;
  writeFileSync(temp, Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), ...columns]), { mode: 0o600 });
  renameSync(temp, file);
}

/** The segment's index, or null when there is none that holds for a segment of `segmentBytes` bytes. */
export function readSegmentIndex(segmentFile: string, segmentBytes: number): Map<string, IndexedLines> | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(indexFileOf(segmentFile));
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
  const newline = bytes.indexOf(0x0a);
  let header: Header;
  try {
    header = JSON.parse(bytes.toString('utf8', 0, newline)) as Header;
  } catch {
    return null;
  }
  const events = header.workspaces?.reduce((sum, workspace) => sum + workspace.length, 0);
  if (header.version !== VERSION || header.segmentBytes !== segmentBytes || bytes.length !== newline + 1 + events * BYTES_PER_EVENT) return null;
  const body = bytes.subarray(newline + 1);
  if (createHash('sha256').update(body).digest('hex') !== header.digest) return null;
  const workspaces = new Map<string, IndexedLines>();
  let at = 0;
  const take = <T extends Float64Array | Uint32Array>(kind: new (length: number) => T, length: number): T => {
    const values = new kind(length);
    const size = values.byteLength;
    new Uint8Array(values.buffer).set(body.subarray(at, at + size));
    at += size;
    return values;
  };
  for (const { id, length, oldest } of header.workspaces) {
    workspaces.set(id, {
      length,
      oldest: oldest ?? Number.POSITIVE_INFINITY,
      offsets: take(Float64Array, length),
      lengths: take(Uint32Array, length),
      occurredAt: take(Float64Array, length),
      idHashes: take(Uint32Array, length),
      keyHashes: take(Uint32Array, length),
    });
  }
  return workspaces;
}

/** Removes a segment's index (the segment is deleted or about to be rewritten). */
export function removeSegmentIndex(segmentFile: string): void {
  try {
    unlinkSync(indexFileOf(segmentFile));
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}
