import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isTrackedScheme, sameCursor, toCursorParams, type SelectionLike } from '../src/cursor';

const p = (line: number, character: number) => ({ line, character });
const sel = (start: [number, number], end: [number, number], activeAtStart = false): SelectionLike => ({
  start: p(...start),
  end: p(...end),
  active: activeAtStart ? p(...start) : p(...end),
});

describe('didChangeCursor params', () => {
  it('a bare cursor: its position and no selections', () => {
    assert.deepEqual(toCursorParams('file:///w/a.py', [sel([3, 7], [3, 7])]), {
      textDocument: { uri: 'file:///w/a.py' },
      position: { line: 3, character: 7 },
      selections: [],
    });
  });

  it('a backwards selection: the cursor is where the caret is, the range is ordered', () => {
    const params = toCursorParams('file:///w/a.py', [sel([1, 0], [4, 2], true)]);
    assert.deepEqual(params?.position, { line: 1, character: 0 });
    assert.deepEqual(params?.selections, [{ start: { line: 1, character: 0 }, end: { line: 4, character: 2 } }]);
  });

  it('several cursors: the primary gives the position, every non-empty one is a range', () => {
    const params = toCursorParams('untitled:Untitled-1', [sel([0, 0], [0, 5]), sel([2, 1], [2, 1]), sel([5, 0], [6, 0])]);
    assert.deepEqual(params?.position, { line: 0, character: 5 });
    assert.equal(params?.selections.length, 2);
  });

  it('carries positions only, never text', () => {
    const params = toCursorParams('file:///w/a.py', [sel([0, 0], [0, 5])]);
    assert.deepEqual(Object.keys(params!).sort(), ['position', 'selections', 'textDocument']);
    assert.deepEqual(Object.keys(params!.textDocument), ['uri']);
    assert.doesNotMatch(JSON.stringify(params), /"text"/);
  });

  it('no selections, no report', () => {
    assert.equal(toCursorParams('file:///w/a.py', []), undefined);
  });

  it('dedupes identical reports', () => {
    const a = toCursorParams('file:///w/a.py', [sel([1, 1], [1, 1])]);
    const b = toCursorParams('file:///w/a.py', [sel([1, 1], [1, 1])]);
    const c = toCursorParams('file:///w/a.py', [sel([1, 2], [1, 2])]);
    assert.equal(sameCursor(a, b), true);
    assert.equal(sameCursor(a, c), false);
    assert.equal(sameCursor(a, undefined), false);
  });

  it('reports documents the server syncs, not output panes or our own views', () => {
    assert.equal(isTrackedScheme('file'), true);
    assert.equal(isTrackedScheme('untitled'), true);
    assert.equal(isTrackedScheme('output'), false);
    assert.equal(isTrackedScheme('context-companion'), false);
    assert.equal(isTrackedScheme('git'), false);
  });
});
