import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toMemoryPickItems } from '../src/memoryItems';

describe('memory files quick pick', () => {
  it('shows tier, tokens and whether and why each file is included', () => {
    const items = toMemoryPickItems([
      { path: '/w/AGENTS.md', tier: 'workspace', tokens: 1520, included: true, reason: 'workspace root' },
      { path: '/w/pkg/AGENTS.md', tier: 'jit', tokens: 80, included: false, reason: 'no open file under pkg/' },
    ]);
    assert.deepEqual(items, [
      {
        label: '$(check) AGENTS.md',
        description: 'workspace · 1,520 tokens',
        detail: 'included: workspace root — /w/AGENTS.md',
        path: '/w/AGENTS.md',
      },
      {
        label: '$(circle-slash) AGENTS.md',
        description: 'jit · 80 tokens',
        detail: 'not included: no open file under pkg/ — /w/pkg/AGENTS.md',
        path: '/w/pkg/AGENTS.md',
      },
    ]);
  });

  it('marks a file that comes with the turn rather than in the instruction', () => {
    const [item] = toMemoryPickItems([
      { path: '/w/api/AGENTS.md', tier: 'jit', tokens: 18, included: true, reason: 'active file api/h.go', comesWithTurn: true },
    ]);
    assert.equal(item.description, 'jit · 18 tokens · comes with the turn');
  });

  it('keeps the server order and skips entries without a path', () => {
    const items = toMemoryPickItems([
      { path: 'b/CLAUDE.md' },
      { path: '' },
      null as unknown as { path: string },
      { path: 'C:\\Users\\ada\\.claude\\CLAUDE.md', tier: 'global' },
    ]);
    assert.deepEqual(
      items.map((i) => [i.label, i.description, i.detail]),
      [
        ['$(check) CLAUDE.md', '', 'included — b/CLAUDE.md'],
        ['$(check) CLAUDE.md', 'global', 'included — C:\\Users\\ada\\.claude\\CLAUDE.md'],
      ],
    );
  });
});
