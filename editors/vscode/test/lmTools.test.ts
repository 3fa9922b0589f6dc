import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import {
  commandFor,
  LmTool,
  memoryFilesText,
  registerLanguageModelTools,
  runTool,
  TOOL_SESSION,
  ToolInputError,
  turnContextText,
} from '../src/lmTools';
import { toMemoryPickItems } from '../src/memoryItems';
import { ServerCommand } from '../src/protocol';

const manifest = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
const INSTRUCTION = 'You are a coding agent.\n\n--- Context from: AGENTS.md ---\nUse tabs. é\n--- End of Context from: AGENTS.md ---';

/** A server that answers like the real one and records what it was asked. */
function fakeServer() {
  const calls: { command: string; arg?: object }[] = [];
  return {
    calls,
    async execute<T>(command: string, arg?: object): Promise<T> {
      calls.push({ command, arg });
      if (command === ServerCommand.getSystemInstruction) {
        return { sessionId: TOOL_SESSION, etag: 'e1', unchanged: false, text: INSTRUCTION } as T;
      }
      if (command === ServerCommand.getTurnContext) {
        return { kind: 'full', context: {}, text: 'Here is what I have open: app.py line 3', memoryUpdates: [] } as T;
      }
      return {
        files: [
          { path: 'AGENTS.md', tier: 'workspace', tokens: 12, included: true, reason: 'workspace memory' },
          { path: 'CLAUDE.md', tier: 'workspace', tokens: 0, included: false, reason: 'not included: only repeats AGENTS.md' },
        ],
        warnings: ['big.md: cut at memory.maxFileBytes'],
      } as T;
    },
  };
}

describe('language model tools: which server command each one runs', () => {
  it('asks for the instruction of the VS Code chat session unless the model names one', () => {
    assert.deepEqual(commandFor(LmTool.systemInstruction, {}), {
      command: ServerCommand.getSystemInstruction,
      arg: { sessionId: 'vscode-chat' },
    });
    assert.deepEqual(commandFor(LmTool.systemInstruction, undefined).arg, { sessionId: 'vscode-chat' });
    assert.deepEqual(commandFor(LmTool.systemInstruction, { sessionId: 'chat-7' }).arg, { sessionId: 'chat-7' });
  });

  it('leaves memory out of the turn context and the instruction while the chat has it in its system message', () => {
    assert.deepEqual(commandFor(LmTool.turnContext, {}, true).arg, { sessionId: 'vscode-chat', includeMemory: false });
    assert.deepEqual(commandFor(LmTool.turnContext, {}, false).arg, { sessionId: 'vscode-chat' });
    assert.deepEqual(commandFor(LmTool.systemInstruction, {}, true).arg, { sessionId: 'vscode-chat', includeMemory: false });
    assert.deepEqual(commandFor(LmTool.systemInstruction, {}, false).arg, { sessionId: 'vscode-chat' });
  });

  it('passes forceFull to getTurnContext and asks showMemory with no argument', () => {
    assert.deepEqual(commandFor(LmTool.turnContext, { forceFull: true }), {
      command: ServerCommand.getTurnContext,
      arg: { sessionId: 'vscode-chat', forceFull: true },
    });
    assert.deepEqual(commandFor(LmTool.memoryFiles, {}), { command: ServerCommand.showMemory, arg: {} });
  });

  it('answers bad input with one line naming the tool and the field', () => {
    assert.throws(() => commandFor(LmTool.systemInstruction, { sessionId: 5 }), {
      name: 'ToolInputError',
      message: 'contextCompanion_systemInstruction: sessionId: must be a string',
    });
    assert.throws(() => commandFor(LmTool.systemInstruction, { sessionId: 'x'.repeat(201) }), /longer than 200/);
    assert.throws(() => commandFor(LmTool.turnContext, { forceFull: 'yes' }), /forceFull: must be true or false/);
    assert.throws(() => commandFor(LmTool.memoryFiles, { path: 'x' }), /contextCompanion_memoryFiles: path: unknown field/);
    assert.throws(() => commandFor(LmTool.systemInstruction, ['a']), ToolInputError);
  });
});

describe('language model tools: the text the model gets', () => {
  it('returns the instruction byte for byte, the same on every call', async () => {
    const server = fakeServer();
    const first = await runTool(server, LmTool.systemInstruction, {});
    const second = await runTool(server, LmTool.systemInstruction, {});
    assert.equal(first, INSTRUCTION);
    assert.equal(second, first);
  });

  it('returns the turn context message, and says so when nothing changed', async () => {
    assert.equal(await runTool(fakeServer(), LmTool.turnContext, {}), 'Here is what I have open: app.py line 3');
    assert.match(turnContextText({ kind: 'none', context: null, text: null, memoryUpdates: [] }), /Nothing changed/);
  });

  it('lists each memory file with whether it is included and why', async () => {
    const text = await runTool(fakeServer(), LmTool.memoryFiles, {});
    assert.equal(
      text,
      [
        '2 memory files, 1 included in the system instruction:',
        '- AGENTS.md [workspace, 12 tokens]: included: workspace memory',
        '- CLAUDE.md [workspace, 0 tokens]: not included: only repeats AGENTS.md',
        '',
        'Warnings:',
        '- big.md: cut at memory.maxFileBytes',
      ].join('\n'),
    );
    assert.match(memoryFilesText({ files: [] }), /No memory files were found/);
  });

  it('says a subfolder file comes with the turn and does not count it as in the system instruction', () => {
    const text = memoryFilesText({
      files: [
        { path: 'AGENTS.md', tier: 'workspace', tokens: 1520, included: true, reason: 'workspace root' },
        { path: 'api/AGENTS.md', tier: 'jit', tokens: 18, included: true, reason: 'active file api/h.go', comesWithTurn: true },
        { path: 'web/AGENTS.md', tier: 'jit', tokens: 9, included: false, reason: 'not included: no open file under web/' },
      ],
    });
    assert.equal(
      text,
      [
        '3 memory files, 1 included in the system instruction, 1 comes with the turn:',
        '- AGENTS.md [workspace, 1,520 tokens]: included: workspace root',
        '- api/AGENTS.md [jit, 18 tokens, comes with the turn]: included: active file api/h.go',
        '- web/AGENTS.md [jit, 9 tokens]: not included: no open file under web/',
      ].join('\n'),
    );
  });

  it('says about each file what the "Show Memory Files" quick pick says', () => {
    const files = [
      { path: 'api/AGENTS.md', tier: 'jit', tokens: 18, included: true, reason: 'active file api/h.go', comesWithTurn: true },
      { path: 'CLAUDE.md', tier: 'workspace', tokens: 0, included: false, reason: 'not included: only repeats AGENTS.md' },
    ];
    assert.deepEqual(
      toMemoryPickItems(files).map((i) => [i.description, i.detail]),
      [
        ['jit · 18 tokens · comes with the turn', 'included: active file api/h.go — api/AGENTS.md'],
        ['workspace · 0 tokens', 'not included: only repeats AGENTS.md — CLAUDE.md'],
      ],
    );
    assert.equal(
      memoryFilesText({ files }),
      [
        '2 memory files, 0 included in the system instruction, 1 comes with the turn:',
        '- api/AGENTS.md [jit, 18 tokens, comes with the turn]: included: active file api/h.go',
        '- CLAUDE.md [workspace, 0 tokens]: not included: only repeats AGENTS.md',
      ].join('\n'),
    );
  });
});

/** The parts of the `vscode` module the registration touches. */
function fakeVscode(withTools = true) {
  const registered = new Map<string, vscode.LanguageModelTool<unknown>>();
  class LanguageModelTextPart {
    constructor(readonly value: string) {}
  }
  class LanguageModelToolResult {
    constructor(readonly content: unknown[]) {}
  }
  const vs = {
    LanguageModelTextPart,
    LanguageModelToolResult,
    lm: withTools
      ? {
          registerTool(name: string, tool: vscode.LanguageModelTool<unknown>) {
            registered.set(name, tool);
            return { dispose: () => registered.delete(name) };
          },
        }
      : {},
  };
  return { vs: vs as unknown as typeof vscode, registered };
}

const noToken = {} as vscode.CancellationToken;

describe('language model tools: registration', () => {
  it('registers the three tools the manifest contributes, each answering with a text part', async () => {
    const { vs, registered } = fakeVscode();
    const server = fakeServer();
    const disposables = registerLanguageModelTools(vs, server, () => undefined);
    const contributed = manifest.contributes.languageModelTools.map((t: { name: string }) => t.name).sort();
    assert.deepEqual([...registered.keys()].sort(), contributed);
    const tool = registered.get(LmTool.systemInstruction)!;
    const result = (await tool.invoke({ input: {}, toolInvocationToken: undefined }, noToken)) as unknown as {
      content: { value: string }[];
    };
    assert.equal(result.content.length, 1);
    assert.equal(result.content[0].value, INSTRUCTION);
    assert.deepEqual(server.calls.at(-1), { command: ServerCommand.getSystemInstruction, arg: { sessionId: 'vscode-chat' } });
    const prepared = await tool.prepareInvocation!({ input: {} }, noToken);
    assert.match(String(prepared?.invocationMessage), /system instruction/);
    for (const d of disposables) d.dispose();
    assert.equal(registered.size, 0);
  });

  it('registers nothing, and says why, on a VS Code without vscode.lm.registerTool', () => {
    const { vs } = fakeVscode(false);
    const lines: string[] = [];
    assert.deepEqual(registerLanguageModelTools(vs, fakeServer(), (l) => lines.push(l)), []);
    assert.match(lines[0], /no vscode\.lm\.registerTool/);
  });
});

describe('package.json: language model tools', () => {
  const tools: Record<string, unknown>[] = manifest.contributes.languageModelTools;

  it('contributes each tool with the fields VS Code and agent mode need', () => {
    assert.deepEqual(tools.map((t) => t.name).sort(), Object.values(LmTool).sort());
    for (const t of tools) {
      for (const key of ['toolReferenceName', 'displayName', 'modelDescription', 'userDescription']) {
        assert.equal(typeof t[key], 'string', `${t.name}: ${key}`);
      }
      assert.match(String(t.name), /^[A-Za-z0-9_-]+$/);
      assert.equal(t.canBeReferencedInPrompt, true);
      assert.ok(Array.isArray(t.tags) && t.tags.includes('context-companion'), `${t.name}: tags`);
      assert.equal((t.inputSchema as { type: string }).type, 'object');
    }
  });

  it('declares exactly the input fields each tool accepts', () => {
    for (const t of tools) {
      const schema = t.inputSchema as { properties: Record<string, unknown>; additionalProperties: boolean };
      assert.equal(schema.additionalProperties, false);
      for (const key of Object.keys(schema.properties)) {
        const sample = key === 'forceFull' ? true : 'chat-1';
        assert.doesNotThrow(() => commandFor(String(t.name), { [key]: sample }), `${t.name} rejects its own field ${key}`);
      }
    }
  });

  it('needs no newer VS Code than the one the end-to-end test runs (code-server 4.100.3 = VS Code 1.100.3)', () => {
    const engine = String(manifest.engines.vscode).replace(/^\^/, '').split('.').map(Number);
    const types = String(manifest.devDependencies['@types/vscode']).replace(/^[~^]/, '').split('.').map(Number);
    assert.ok(engine[0] === 1 && engine[1] >= 95 && engine[1] <= 100, `engines.vscode ${manifest.engines.vscode}`);
    assert.ok(types[1] <= engine[1], '@types/vscode must not be newer than engines.vscode (vsce refuses)');
  });
});
