import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentList } from '../src/agentList';
import { explainItems, formatExplanation } from '../src/explainView';
import { FAKE_ANSWER } from './fakeAgents';

describe('explain memory view', () => {
  it('offers the agents the server says explain knows, in its order, by name', () => {
    assert.deepEqual(explainItems(parseAgentList(FAKE_ANSWER)), [
      { label: 'Alpha CLI', description: 'alpha-cli', id: 'alpha-cli' },
      { label: 'Editor Bot in the editor', description: 'editor-bot', id: 'editor-bot' },
      { label: 'Context Companion', description: 'context-companion', id: 'context-companion' },
    ]);
  });

  it('renders loaded files as a table, then listed, not loaded and the differences', () => {
    const md = formatExplanation({
      agent: 'codex',
      name: 'Codex',
      docs: ['https://developers.openai.com/codex/guides/agents-md'],
      files: [{ path: 'AGENTS.override.md', tier: 'workspace', trigger: 'workspace', why: 'project memory | root', tokens: 12 }],
      listed: [],
      notLoaded: [{ path: 'AGENTS.md', reason: 'Codex reads one file per folder: AGENTS.override.md is used' }],
      onlyAgent: [],
      onlyContextCompanion: ['.cursor/rules/a.mdc'],
      tokens: 12,
    });
    assert.match(md, /^# What Codex would load\n/);
    assert.ok(md.includes('| `AGENTS.override.md` | workspace | project memory \\| root | 12 |'));
    assert.ok(md.includes('1 file, 12 tokens.'));
    assert.ok(md.includes('## Not loaded\n\n- `AGENTS.md`: Codex reads one file per folder'));
    assert.ok(md.includes('**Loaded by Context Companion, not by Codex:** `.cursor/rules/a.mdc`'));
    assert.ok(!md.includes('Offered by description'));
  });

  it('says so when the agent loads nothing, and survives a partial answer', () => {
    assert.ok(formatExplanation({ agent: 'zed' }).includes('_zed would load no memory or rule file here._'));
  });
});
