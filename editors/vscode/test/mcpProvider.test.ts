import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import type { LaunchPlan } from '../src/launch';
import { MCP_PROVIDER_ID, mcpCommandLine, registerMcpProvider, withMcpEndpoint, type McpProviderSource } from '../src/mcpProvider';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const venvPlan: LaunchPlan = {
  command: '/venv/bin/python',
  args: ['-m', 'context_companion', 'serve'],
  source: 'interpreter',
  python: ['/venv/bin/python'],
};

describe('MCP server definition: the command line', () => {
  it('runs mcp --attach with the interpreter the server runs with', () => {
    assert.deepEqual(mcpCommandLine(venvPlan, '/work/proj'), {
      command: '/venv/bin/python',
      args: ['-m', 'context_companion', 'mcp', '--attach', '--workspace', '/work/proj'],
    });
    const withPrefix: LaunchPlan = { ...venvPlan, command: 'py', python: ['py', '-3.12'], args: ['-3.12', '-m', 'context_companion', 'serve'] };
    assert.deepEqual(mcpCommandLine(withPrefix, '/p').args, ['-3.12', '-m', 'context_companion', 'mcp', '--attach', '--workspace', '/p']);
  });

  it("names this window's server by its pid when it is known (two windows on one folder run two servers)", () => {
    assert.deepEqual(mcpCommandLine(venvPlan, '/work/proj', 31337).args, [
      '-m',
      'context_companion',
      'mcp',
      '--attach',
      '--workspace',
      '/work/proj',
      '--server-pid',
      '31337',
    ]);
  });

  it('reuses the program of a serverCommand that runs serve, else context-companion on PATH', () => {
    const own: LaunchPlan = { command: '/opt/cc/bin/context-companion', args: ['serve', '-v'], source: 'serverCommand' };
    assert.deepEqual(mcpCommandLine(own, '/p'), {
      command: '/opt/cc/bin/context-companion',
      args: ['mcp', '--attach', '--workspace', '/p'],
    });
    const wrapped: LaunchPlan = { command: 'uv', args: ['run', 'context-companion', 'serve'], source: 'serverCommand' };
    assert.deepEqual(mcpCommandLine(wrapped, '/p'), { command: 'uv', args: ['run', 'context-companion', 'mcp', '--attach', '--workspace', '/p'] });
    const other: LaunchPlan = { command: 'my-launcher', args: [], source: 'serverCommand' };
    assert.deepEqual(mcpCommandLine(other, '/p'), { command: 'context-companion', args: ['mcp', '--attach', '--workspace', '/p'] });
  });

  it('says --memory-elsewhere while the chat has the memory in its system message', () => {
    assert.deepEqual(mcpCommandLine(venvPlan, '/p', 7, true).args.slice(-3), ['--server-pid', '7', '--memory-elsewhere']);
    assert.ok(!mcpCommandLine(venvPlan, '/p', 7, false).args.includes('--memory-elsewhere'));
  });

  it('starts the window server with --mcp-endpoint so mcp --attach finds it', () => {
    assert.deepEqual(withMcpEndpoint(venvPlan).args, ['-m', 'context_companion', 'serve', '--mcp-endpoint']);
    assert.deepEqual(withMcpEndpoint(withMcpEndpoint(venvPlan)).args, ['-m', 'context_companion', 'serve', '--mcp-endpoint']);
    const other: LaunchPlan = { command: 'my-launcher', args: ['--x'], source: 'serverCommand' };
    assert.equal(withMcpEndpoint(other), other);
  });
});

class FakeDefinition {
  cwd?: { fsPath: string };
  constructor(
    readonly label: string,
    readonly command: string,
    public args: string[],
    readonly env: object,
    readonly version: string,
  ) {}
}

function fakeVscode(lm: object, withDefinition = true) {
  return {
    version: '1.101.0',
    lm,
    Uri: { file: (fsPath: string) => ({ fsPath }) },
    ...(withDefinition ? { McpStdioServerDefinition: FakeDefinition } : {}),
  } as unknown as typeof vscode;
}

function source(over: Partial<McpProviderSource> = {}): McpProviderSource {
  return {
    workspace: () => '/work/proj',
    launchFolder: () => '/home/ada/.config/Code/User/globalStorage/cc/launch',
    plan: async () => venvPlan,
    serverPid: async () => 4242,
    memoryElsewhere: () => false,
    onDidChange: (() => ({ dispose() {} })) as unknown as vscode.Event<void>,
    version: '0.1.0',
    ...over,
  };
}

type Provider = { provideMcpServerDefinitions(token: unknown): Promise<FakeDefinition[]> };

describe('MCP server definition provider: registration', () => {
  it('registers under the contributed id and provides one stdio definition for the workspace', async () => {
    let got: { id: string; provider: Provider } | undefined;
    const vs = fakeVscode({
      registerMcpServerDefinitionProvider(id: string, provider: Provider) {
        got = { id, provider };
        return { dispose() {} };
      },
    });
    const reg = registerMcpProvider(vs, source(), () => undefined);
    assert.equal(reg.registered, true);
    assert.equal(got?.id, MCP_PROVIDER_ID);
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, [{ id: MCP_PROVIDER_ID, label: 'Context Companion' }]);
    assert.deepEqual(manifest.contributes.modelContextServerCollections, [{ id: MCP_PROVIDER_ID, label: 'Context Companion' }]);
    const [def, ...rest] = await got!.provider.provideMcpServerDefinitions({});
    assert.equal(rest.length, 0);
    assert.equal(def.label, 'Context Companion');
    assert.equal(def.command, '/venv/bin/python');
    assert.deepEqual(def.args, ['-m', 'context_companion', 'mcp', '--attach', '--workspace', '/work/proj', '--server-pid', '4242']);
    assert.equal(def.version, '0.1.0');
    // VS Code starts it in the extension's launch folder, never the workspace (passed as --workspace above).
    assert.deepEqual(def.cwd, { fsPath: '/home/ada/.config/Code/User/globalStorage/cc/launch' });
  });

  it('adds --memory-elsewhere while the chat instructions deliver, and decides it again when VS Code starts the server', async () => {
    let provider: (Provider & { resolveMcpServerDefinition(def: FakeDefinition, token: unknown): Promise<FakeDefinition> }) | undefined;
    const vs = fakeVscode({
      registerMcpServerDefinitionProvider(_id: string, p: typeof provider) {
        provider = p;
        return { dispose() {} };
      },
    });
    let elsewhere = true;
    registerMcpProvider(vs, source({ memoryElsewhere: () => elsewhere }), () => undefined);
    const [def] = await provider!.provideMcpServerDefinitions({});
    assert.deepEqual(def.args.slice(-1), ['--memory-elsewhere']);
    elsewhere = false; // the channel went off (a window closing): the server VS Code starts now gets the memory
    const resolved = await provider!.resolveMcpServerDefinition(def, {});
    assert.ok(!resolved.args.includes('--memory-elsewhere'));
    elsewhere = true;
    const again = await provider!.resolveMcpServerDefinition(resolved, {});
    assert.equal(again.args.filter((a) => a === '--memory-elsewhere').length, 1);
  });

  it("opens the server's MCP endpoint before VS Code starts the server (it listens only when asked); a failure is logged, the start goes on", async () => {
    let provider: (Provider & { resolveMcpServerDefinition(def: FakeDefinition, token: unknown): Promise<FakeDefinition> }) | undefined;
    const vs = fakeVscode({
      registerMcpServerDefinitionProvider(_id: string, p: typeof provider) {
        provider = p;
        return { dispose() {} };
      },
    });
    const events: string[] = [];
    let fail = false;
    const lines: string[] = [];
    registerMcpProvider(
      vs,
      source({
        openEndpoint: async () => {
          events.push('open');
          if (fail) throw new Error('the server is not running');
        },
      }),
      (line) => lines.push(line),
    );
    const [def] = await provider!.provideMcpServerDefinitions({});
    assert.deepEqual(events, []); // listing the servers opens nothing
    const resolved = await provider!.resolveMcpServerDefinition(def, {});
    assert.deepEqual(events, ['open']);
    assert.equal(resolved, def);
    fail = true;
    assert.equal(await provider!.resolveMcpServerDefinition(def, {}), def);
    assert.match(lines.at(-1) ?? '', /MCP endpoint could not be opened: the server is not running/);
  });

  it('provides nothing without a folder, or when the settings cannot start a server', async () => {
    let provider: Provider | undefined;
    const vs = fakeVscode({
      registerMcpServerDefinitionProvider(_id: string, p: Provider) {
        provider = p;
        return { dispose() {} };
      },
    });
    registerMcpProvider(vs, source({ workspace: () => undefined }), () => undefined);
    assert.deepEqual(await provider!.provideMcpServerDefinitions({}), []);
    const lines: string[] = [];
    registerMcpProvider(vs, source({ plan: async () => Promise.reject(new Error('contextCompanion.interpreter must be a path')) }), (l) =>
      lines.push(l),
    );
    assert.deepEqual(await provider!.provideMcpServerDefinitions({}), []);
    assert.match(lines.at(-1)!, /left out: contextCompanion\.interpreter must be a path/);
  });

  it('names the missing API on a VS Code without it, and does not throw', () => {
    const lines: string[] = [];
    const reg = registerMcpProvider(fakeVscode({}, false), source(), (l) => lines.push(l));
    assert.equal(reg.registered, false);
    assert.match(lines[0], /not registered: this VS Code \(1\.101\.0\) has no vscode\.lm\.registerMcpServerDefinitionProvider/);
  });

  it('reports the refusal of VS Code 1.100, where the API is a proposal', () => {
    const lines: string[] = [];
    const vs = fakeVscode({
      registerMcpServerDefinitionProvider() {
        throw new Error("Extension 'context-companion.context-companion' CANNOT use API proposal: mcpConfigurationProvider.");
      },
    });
    const reg = registerMcpProvider(vs, source(), (l) => lines.push(l));
    assert.equal(reg.registered, false);
    assert.match(lines[0], /refused: .*CANNOT use API proposal: mcpConfigurationProvider/);
  });
});
