import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { diffAnswer, formatGeminiStatus, geminiAskedFor, mergeTerminalEnvs, terminalEnv } from '../src/gemini';

describe('Gemini CLI companion: terminal environment', () => {
  it('takes the variables from contextCompanion/companionStarted', () => {
    const env = terminalEnv({
      geminiCli: {
        port: 41537,
        env: {
          GEMINI_CLI_IDE_SERVER_PORT: '41537',
          GEMINI_CLI_IDE_AUTH_TOKEN: 'tok',
          GEMINI_CLI_IDE_WORKSPACE_PATH: '/w/a:/w/b',
          GEMINI_CLI_IDE_PID: 4242,
        },
      },
    });
    assert.deepEqual(env, {
      GEMINI_CLI_IDE_SERVER_PORT: '41537',
      GEMINI_CLI_IDE_AUTH_TOKEN: 'tok',
      GEMINI_CLI_IDE_WORKSPACE_PATH: '/w/a:/w/b',
      GEMINI_CLI_IDE_PID: '4242',
    });
  });

  it('means "take them away" when the companion stopped or the message is malformed', () => {
    assert.equal(terminalEnv({ geminiCli: null }), undefined);
    assert.equal(terminalEnv(undefined), undefined);
    assert.equal(terminalEnv({ geminiCli: { port: 1 } }), undefined);
  });

  it('never sets a variable outside GEMINI_CLI_* (a server cannot change PATH in terminals)', () => {
    assert.deepEqual(terminalEnv({ geminiCli: { env: { PATH: '/evil', GEMINI_CLI_IDE_SERVER_PORT: '1', X: { a: 1 } } } }), {
      GEMINI_CLI_IDE_SERVER_PORT: '1',
    });
  });
});

describe('Claude Code integration: terminal environment', () => {
  it('takes its own key, and only its two variables', () => {
    const params = { claudeCode: { port: 41000, env: { CLAUDE_CODE_SSE_PORT: '41000', ENABLE_IDE_INTEGRATION: 'true', PATH: '/evil' } } };
    assert.deepEqual(terminalEnv(params, 'claudeCode'), { CLAUDE_CODE_SSE_PORT: '41000', ENABLE_IDE_INTEGRATION: 'true' });
    assert.equal(terminalEnv(params), undefined);
  });

  it("one integration's announcement leaves the other's variables alone; null removes only its own", () => {
    let envs = mergeTerminalEnvs(new Map(), { geminiCli: { env: { GEMINI_CLI_IDE_SERVER_PORT: '1' } } });
    envs = mergeTerminalEnvs(envs, { claudeCode: { env: { CLAUDE_CODE_SSE_PORT: '2' } } });
    assert.deepEqual(Object.fromEntries(envs), {
      geminiCli: { GEMINI_CLI_IDE_SERVER_PORT: '1' },
      claudeCode: { CLAUDE_CODE_SSE_PORT: '2' },
    });
    envs = mergeTerminalEnvs(envs, { claudeCode: null });
    assert.deepEqual(Object.fromEntries(envs), { geminiCli: { GEMINI_CLI_IDE_SERVER_PORT: '1' } });
  });
});

describe('Gemini CLI companion: status bar', () => {
  it('says "Gemini CLI connected" when a CLI is attached', () => {
    const view = formatGeminiStatus({ running: true, port: 41537, discoveryFile: '/tmp/x.json', connectedClients: 1 });
    assert.equal(view?.text, '$(terminal) Gemini CLI connected');
    assert.match(view!.tooltip, /port 41537, 1 client\)/);
  });

  it('says nothing while no CLI is attached, unless the user asked for the companion', () => {
    // On by default: most users run no Gemini CLI, and "ready" told each of them about it.
    assert.equal(formatGeminiStatus({ running: true, port: 5, discoveryFile: null, connectedClients: 0 }), undefined);
  });

  it('says it is ready, and how to connect, when the user asked for it and no CLI is attached', () => {
    const view = formatGeminiStatus({ running: true, port: 5, discoveryFile: null, connectedClients: 0 }, true);
    assert.equal(view?.text, '$(terminal) Gemini CLI: ready');
    assert.match(view!.tooltip, /run `gemini` in a new integrated terminal/);
  });

  it('is hidden when the companion does not run', () => {
    assert.equal(formatGeminiStatus({ running: false, port: null, discoveryFile: null, connectedClients: 0 }), undefined);
    assert.equal(formatGeminiStatus(undefined), undefined);
  });
});

describe('Gemini CLI companion: asked for', () => {
  const inspect = (values: Record<string, Record<string, unknown>>) => (key: string) => values[key] ?? { defaultValue: key === 'enabled' ? true : 0 };

  it('is asked for when the user set the companion on, or a port, in any scope', () => {
    assert.equal(geminiAskedFor(inspect({})), false); // the defaults only
    assert.equal(geminiAskedFor(inspect({ enabled: { defaultValue: true, globalValue: true } })), true);
    assert.equal(geminiAskedFor(inspect({ enabled: { defaultValue: true, workspaceValue: true } })), true);
    assert.equal(geminiAskedFor(inspect({ port: { defaultValue: 0, workspaceFolderValue: 41000 } })), true);
    assert.equal(geminiAskedFor(inspect({ enabled: { defaultValue: true, globalValue: false } })), false);
  });
});

describe('Gemini CLI companion: diff answers', () => {
  it('sends the edited proposal back when accepted or closed, nothing when rejected', () => {
    assert.deepEqual(diffAnswer('accepted', 'new\n'), { outcome: 'accepted', text: 'new\n' });
    assert.deepEqual(diffAnswer('closed', 'half\n'), { outcome: 'closed', text: 'half\n' });
    assert.deepEqual(diffAnswer('rejected', 'ignored'), { outcome: 'rejected' });
    assert.deepEqual(diffAnswer('closed', undefined), { outcome: 'closed' });
  });
});
