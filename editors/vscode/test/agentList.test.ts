import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentList, parseAgentList, setupDetail } from '../src/agentList';
import { FAKE_ANSWER } from './fakeAgents';

describe('the server’s agent list', () => {
  it('keeps the server’s order, names and setup files', () => {
    const agents = parseAgentList(FAKE_ANSWER);
    assert.deepEqual(agents.map((a) => a.id), ['alpha-cli', 'newcomer', 'editor-bot', 'context-companion']);
    assert.deepEqual(agents[0], FAKE_ANSWER.agents[0]);
    assert.equal(agents[2].setup, null);
  });

  it('skips entries without an id and repeated ids; a missing name is the id, a malformed setup none', () => {
    const agents = parseAgentList({
      agents: [{ name: 'No id' }, 'x', null, { id: 'a', setup: { kind: 'sideways', project: 'p', user: 'u' } }, { id: 'a', name: 'Again' }],
    });
    assert.deepEqual(agents, [{ id: 'a', name: 'a', shortNames: [], hooks: false, setup: null, explain: false }]);
  });

  it('says so when the answer holds no list (a server without listAgents)', () => {
    assert.throws(() => parseAgentList(null), /did not list its agents/);
    assert.throws(() => parseAgentList({ agents: 'all' }), /did not list its agents/);
  });

  it('says where setup writes, as a hook or a plugin', () => {
    assert.equal(setupDetail({ kind: 'hooks', project: '.alpha/settings.json', user: '~/x' }), 'hooks in .alpha/settings.json');
    assert.equal(setupDetail({ kind: 'plugin', project: '.n/plugins/cc.js', user: '~/x' }), 'a plugin in .n/plugins/cc.js');
  });

  it('asks the server once per start, again after forget(), and again after a failure', async () => {
    let asked = 0;
    let fail = false;
    const list = new AgentList(async () => {
      asked++;
      if (fail) throw new Error('The server is not running.');
      return FAKE_ANSWER;
    });
    await list.get();
    await list.get();
    assert.equal(asked, 1);
    list.forget();
    fail = true;
    await assert.rejects(list.get(), /not running/);
    fail = false;
    assert.equal((await list.get()).length, 4);
    assert.equal(asked, 3);
  });
});
