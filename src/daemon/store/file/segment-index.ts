import { indexFileOf, readIndexFile, removeIndexFile, writeIndexFile, type IndexColumn } from '../index-file.js';

/**
 * The index of a sealed event segment, kept beside it (`segment-000001.idx`)
 * so that a start reads a few bytes an event instead of every line: per
 * workspace, its events' columns as the log holds them in memory. A segment
 * is immutable once sealed (retention writes a new one, and a new index), so
 * an index stays true as long as its segment keeps the size it names (see
 * index-file.ts for the rest). An index that is missing, of another size or
 * unreadable is ignored: the segment is read as before and the index written
 * anew.
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
  workspaces: Array<{ id: string; length: number; oldest: number | null }>;
}

const VERSION = 1;
/** Bytes of an event across the columns. */
const BYTES_PER_EVENT = 8 + 4 + 8 + 4 + 4;


/** Writes the index of a sealed segment of `segmentBytes` bytes (to a temporary file, then renamed over). */
export function writeSegmentIndex(segmentFile: string, segmentBytes: number, workspaces: ReadonlyMap<string, IndexedLines>): void {
  const columns: IndexColumn[] = [];
  const header: Header = { version: VERSION, segmentBytes, workspaces: [] };
  for (const [id, lines] of workspaces) {
    // JSON has no Infinity: a workspace without events has no oldest.
    header.workspaces.push({ id, length: lines.length, oldest: Number.isFinite(lines.oldest) ? lines.oldest : null });
    columns.push(lines.offsets, lines.lengths, lines.occurredAt, lines.idHashes, lines.keyHashes);
  }
  writeIndexFile(indexFileOf(segmentFile), header, columns);
}

/** The segment's index, or null when there is none that holds for a segment of `segmentBytes` bytes. */
export function readSegmentIndex(segmentFile: string, segmentBytes: number): Map<string, IndexedLines> | null {
  const index = readIndexFile<Header>(indexFileOf(segmentFile), (header) =>
    header.version === VERSION && header.segmentBytes === segmentBytes ? header.workspaces.reduce((sum, workspace) => sum + workspace.length, 0) * BYTES_PER_EVENT : -1,
  );
  if (!index) return null;
  const workspaces = new Map<string, IndexedLines>();
  for (const { id, length, oldest } of index.header.workspaces) {
    workspaces.set(id, {
      length,
      oldest: oldest ?? Number.POSITIVE_INFINITY,
      offsets: index.take(Float64Array, length),
      lengths: index.take(Uint32Array, length),
      occurredAt: index.take(Float64Array, length),
      idHashes: index.take(Uint32Array, length),
      keyHashes: index.take(Uint32Array, length),
    });
  }
  return workspaces;
}

/** Removes a segment's index (the segment is deleted or about to be rewritten). */
export function removeSegmentIndex(segmentFile: string): void {
  removeIndexFile(indexFileOf(segmentFile));
}
