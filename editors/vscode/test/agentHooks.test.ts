import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CONNECT_AGENT_HOOKS,
  type CommandLine,
  registerAgentHooks,
  type RunResult,
  setupCommandLine,
  setupOutcome,
} from '../src/agentHooks';
import { type AgentInfo, parseAgentList } from '../src/agentList';
import type { LaunchPlan } from '../src/launch';
import { FAKE_ANSWER } from './fakeAgents';

const PYTHON_PLAN: LaunchPlan = {
  command: '/venv/bin/python',
  args: ['-m', 'context_companion', 'serve'],
  source: 'interpreter',
  python: ['/venv/bin/python'],
};

interface Shown {
  info: string[];
  errors: string[];
  picks: unknown[][];
  runs: { line: CommandLine; cwd: string }[];
}

const SERVER_AGENTS = parseAgentList({
  agents: [
    ...FAKE_ANSWER.agents,
    {
      id: 'codex',
      name: 'Codex',
      shortNames: [],
      hooks: true,
      setup: { project: '.codex/hooks.json', user: '~/.codex/hooks.json', kind: 'hooks' },
      explain: true,
    },
  ],
});

function fakeVs(
  folders: string[],
  answers: (items: { label: string }[]) => unknown,
  result: RunResult,
  agents: () => Promise<AgentInfo[]> = async () => SERVER_AGENTS,
) {
  const shown: Shown = { info: [], errors: [], picks: [], runs: [] };
  const commands = new Map<string, () => Promise<void>>();
  const vs = {
    window: {
      showQuickPick: async (items: { label: string }[]) => {
        shown.picks.push(items);
        return answers(items);
      },
      showInformationMessage: async (m: string) => void shown.info.push(m),
      showErrorMessage: async (m: string) => void shown.errors.push(m),
    },
    workspace: { workspaceFolders: folders.map((p) => ({ name: p.split('/').pop(), uri: { scheme: 'file', fsPath: p } })) },
    commands: {
      registerCommand: (id: string, fn: () => Promise<void>) => {
        commands.set(id, fn);
        return { dispose() {} };
      },
    },
  };
  const deps = {
    agents,
    plan: async () => PYTHON_PLAN,
    launchFolder: () => '/home/ada/.config/Code/User/globalStorage/cc/launch',
    run: async (line: CommandLine, cwd: string) => {
      shown.runs.push({ line, cwd });
      return result;
    },
    log: () => {},
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  registerAgentHooks(vs as any, deps);
  const run = commands.get(CONNECT_AGENT_HOOKS);
  assert.ok(run, 'the palette command is registered');
  return { run, shown };
}

describe('Connect Agent Memory Hooks…', () => {
  it("offers the server's agents with hooks, with its names and where setup writes", async () => {
    const { run, shown } = fakeVs(['/w'], () => undefined, { code: 0, stdout: '', stderr: '' });
    await run();
    assert.deepEqual(shown.picks[0], [
      { label: 'Alpha CLI', description: 'alpha-cli', detail: 'hooks in .alpha/settings.json', id: 'alpha-cli' },
      { label: 'Newcomer Code', description: 'newcomer', detail: 'a plugin in .newcomer/plugins/context-companion.js', id: 'newcomer' },
      { label: 'Codex', description: 'codex', detail: 'hooks in .codex/hooks.json', id: 'codex' },
    ]);
    assert.deepEqual(shown.runs, []);
  });

  it('sets up an agent the extension never heard of, by the id the server gave', async () => {
    const { run, shown } = fakeVs(['/w'], (items) => items.find((i) => i.label === 'Newcomer Code'), { code: 0, stdout: 'done', stderr: '' });
    await run();
    assert.deepEqual(shown.runs[0].line.args.slice(-5), ['setup', '--agent', 'newcomer', '--workspace', '/w']);
  });

  it('says in one message that the server is not running, and offers nothing', async () => {
    const notRunning = async (): Promise<AgentInfo[]> => {
      throw new Error('The server is not running: Python 3.10 or newer was not found');
    };
    const { run, shown } = fakeVs(['/w'], (items) => items[0], { code: 0, stdout: '', stderr: '' }, notRunning);
    await run();
    assert.deepEqual(shown.errors, [
      "Context Companion: cannot set up the agent's hooks: The server is not running: Python 3.10 or newer was not found",
    ]);
    assert.deepEqual(shown.picks, []);
    assert.deepEqual(shown.runs, []);
  });

  it('says so when the server lists no agent with hooks', async () => {
    const none = async () => SERVER_AGENTS.filter((a) => !a.hooks);
    const { run, shown } = fakeVs(['/w'], (items) => items[0], { code: 0, stdout: '', stderr: '' }, none);
    await run();
    assert.deepEqual(shown.errors, ['Context Companion: the server lists no agent with hooks to set up.']);
    assert.deepEqual(shown.picks, []);
  });

  it('runs setup with the interpreter of the server, or the program of a serverCommand', () => {
    assert.deepEqual(setupCommandLine(PYTHON_PLAN, 'codex', '/w/my project'), {
      command: '/venv/bin/python',
      args: ['-m', 'context_companion', 'setup', '--agent', 'codex', '--workspace', '/w/my project'],
    });
    const custom: LaunchPlan = { command: '/opt/cc/bin/context-companion', args: ['serve', '--log-file', 'x'], source: 'serverCommand' };
    assert.deepEqual(setupCommandLine(custom, 'gemini-cli', '/w'), {
      command: '/opt/cc/bin/context-companion',
      args: ['setup', '--agent', 'gemini-cli', '--workspace', '/w'],
    });
  });

  it('sets up the picked agent for the window folder and shows what setup did', async () => {
    const stdout =
      'Codex: added the hooks SessionStart, UserPromptSubmit to /w/.codex/hooks.json (command: cc hook --agent codex)\n' +
      'Codex will ask "Hooks need review" the next time it starts here: trust the Context Companion hooks there.\n';
    const { run, shown } = fakeVs(['/w'], (items) => items.find((i) => i.label === 'Codex'), { code: 0, stdout, stderr: '' });
    await run();
    assert.equal(shown.runs.length, 1);
    assert.deepEqual(shown.runs[0].line.args.slice(-5), ['setup', '--agent', 'codex', '--workspace', '/w']);
    // The project goes in --workspace; setup runs in the extension's launch folder, never the project, whose
    // context_companion/ or pydantic/ `python -m context_companion` would import.
    assert.equal(shown.runs[0].cwd, '/home/ada/.config/Code/User/globalStorage/cc/launch');
    assert.equal(shown.info.length, 1);
    assert.match(shown.info[0], /^Context Companion: Codex: added the hooks .* Codex will ask "Hooks need review"/);
    assert.deepEqual(shown.errors, []);
  });

  it("shows setup's one-line error when it refuses (a settings file it cannot parse)", async () => {
    const stderr = 'context-companion: /w/.gemini/settings.json: not plain JSON: Expecting value; left untouched\n';
    const { run, shown } = fakeVs(['/w'], (items) => items[0], { code: 2, stdout: '', stderr });
    await run();
    assert.deepEqual(shown.errors, [
      'Context Companion: Alpha CLI hooks not set up: /w/.gemini/settings.json: not plain JSON: Expecting value; left untouched',
    ]);
    assert.deepEqual(shown.info, []);
  });

  it('asks which folder in a multi-root window, and does nothing when a pick is dismissed', async () => {
    let calls = 0;
    const answers = (items: { label: string }[]) => (++calls === 1 ? items[0] : undefined);
    const { run, shown } = fakeVs(['/a', '/b'], answers, { code: 0, stdout: 'x', stderr: '' });
    await run();
    assert.equal(shown.picks.length, 2);
    assert.deepEqual(shown.runs, []);
  });

  it('needs a folder', async () => {
    const { run, shown } = fakeVs([], () => undefined, { code: 0, stdout: '', stderr: '' });
    await run();
    assert.match(shown.errors[0], /open a folder first/);
  });

  it('keeps only the last line of an error, without the program name', () => {
    assert.deepEqual(setupOutcome({ code: 2, stdout: '', stderr: 'warning\ncontext-companion: bad\n' }), { ok: false, message: 'bad' });
    assert.deepEqual(setupOutcome({ code: null, stdout: '', stderr: '' }), { ok: false, message: 'setup exited with status unknown' });
  });
});
