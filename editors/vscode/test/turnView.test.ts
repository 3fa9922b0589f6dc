import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { turnContextMarkdown } from '../src/turnView';

describe('turn context view', () => {
  it('lists the memory updates after the text', () => {
    const md = turnContextMarkdown({
      text: 'Here is what I have open…',
      memoryUpdates: [
        { path: 'api/AGENTS.md', reason: 'active file api/x.py is under api/', content: 'Api rules.', tokens: 4 },
        { path: 'a|b.md', reason: 'not included: no open file under a/', content: 'a|b.md no longer applies', tokens: 9 },
      ],
    });
    assert.match(md, /^Here is what I have open…\n\n## Memory updates \(2\)\n/);
    assert.match(md, /\| `api\/AGENTS\.md` \| 4 \| active file api\/x\.py is under api\/ \|/);
    assert.match(md, /\| `a\\\|b\.md` \| 9 \|/);
  });

  it('shows the text alone without updates, and says so when there is nothing', () => {
    assert.equal(turnContextMarkdown({ text: 'ctx', memoryUpdates: [] }), 'ctx');
    assert.equal(turnContextMarkdown({ text: 'ctx' }), 'ctx');
    assert.match(turnContextMarkdown({ text: null }), /No editor context to share/);
  });
});
