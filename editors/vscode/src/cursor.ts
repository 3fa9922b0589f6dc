/**
 * Build `contextCompanion/didChangeCursor` params from an editor's selections: positions only,
 * never text (the server reads the text from its synced copy). Pure: unit-tested without VS Code.
 */
import type { CursorParams, Position, Range } from './protocol';

/** URI schemes whose documents the client syncs to the server (and so may report a cursor for). */
export const TRACKED_SCHEMES: readonly string[] = ['file', 'untitled'];

export function isTrackedScheme(scheme: string): boolean {
  return TRACKED_SCHEMES.includes(scheme);
}

/** The parts of a VS Code `Selection` this needs (`start` ≤ `end`; `active` is where the caret is). */
export interface SelectionLike {
  start: Position;
  end: Position;
  active: Position;
}

function pos(p: Position): Position {
  return { line: p.line, character: p.character };
}

function isEmpty(s: SelectionLike): boolean {
  return s.start.line === s.end.line && s.start.character === s.end.character;
}

/**
 * The primary selection (first) gives the cursor position; every non-empty selection is sent as a
 * range so the server can take the selected text. An empty list means "nothing selected".
 */
export function toCursorParams(uri: string, selections: readonly SelectionLike[]): CursorParams | undefined {
  if (selections.length === 0) return undefined;
  const ranges: Range[] = selections.filter((s) => !isEmpty(s)).map((s) => ({ start: pos(s.start), end: pos(s.end) }));
  return { textDocument: { uri }, position: pos(selections[0].active), selections: ranges };
}

/** True when two cursor reports carry the same information (so the second need not be sent). */
export function sameCursor(a: CursorParams | undefined, b: CursorParams | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}
