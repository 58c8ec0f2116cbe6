import { DomainError, invalidCursor, notACursor } from '../errors.js';

/**
 * Opaque page cursors: base64url JSON naming the listing (kind and workspace)
 * and the position after the last item returned. A cursor of another listing
 * or workspace, or one that does not decode, is a 400.
 */
export function encodeCursor(kind: string, workspaceId: string, position: number | string): string {
  return Buffer.from(JSON.stringify({ k: kind, w: workspaceId, p: position })).toString('base64url');
}

export const isSequence = (position: unknown): position is number =>
  typeof position === 'number' && Number.isSafeInteger(position) && position >= 0;

export function decodeCursor<T>(cursor: string, kind: string, workspaceId: string, isPosition: (position: unknown) => position is T): T {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    decoded = null;
  }
  const fields = decoded as { k?: unknown; w?: unknown; p?: unknown } | null;
  if (!fields || typeof fields !== 'object' || !isPosition(fields.p)) throw notACursor();
  if (fields.k !== kind || fields.w !== workspaceId) throw invalidCursor('belongs to another listing or workspace');
  return fields.p;
}

/**
 * A listing paged by offset continues where a page stopped (a page may end
 * before `limit`, at the byte limit): `nextOffset`, and the same position as
 * `nextCursor` for clients that follow cursors everywhere. Present while more
 * items follow.
 */
export function offsetMeta(kind: string, scope: string, offset: number, count: number, more: boolean): { nextOffset?: number; nextCursor?: string } {
  const next = offset + count;
  return more ? { nextOffset: next, nextCursor: encodeCursor(kind, scope, next) } : {};
}

/** Where a page of an offset listing starts: the cursor's offset when one is given (it wins over `offset`). */
export function startOffset(cursor: string | undefined, offset: number, kind: string, scope: string, maxOffset: number): number {
  if (cursor === undefined) return offset;
  return decodeCursor(cursor, kind, scope, (position): position is number => isSequence(position) && position <= maxOffset);
}

/** `since` after `until` is refused like any other invalid query. */
export function checkRange(since: number | undefined, until: number | undefined): void {
  if (since !== undefined && until !== undefined && since > until) {
    const message = 'must not be after until';
    throw new DomainError('VALIDATION_ERROR', `since: ${message}`, { issues: [{ path: 'since', message }] });
  }
}
