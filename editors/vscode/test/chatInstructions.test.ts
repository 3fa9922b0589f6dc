import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import {
  chatSettings,
  ChatInstructions,
  claimSlot,
  type Fs,
  LIST_PROMPT_FILES,
  PLACEHOLDER,
  ReadOnlyError,
  SLOT_CONTEXT_KEY,
  SLOT_COUNT,
  slotContributions,
  slotFile,
} from '../src/chatInstructions';
import { ServerCommand } from '../src/protocol';

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'cc-chat-'));
}

/** An install folder with the slots as the build lays them out. */
function installFolder(): string {
  const dir = tmp();
  fs.mkdirSync(path.join(dir, 'chat'));
  for (let n = 0; n < SLOT_COUNT; n++) fs.writeFileSync(path.join(dir, slotFile(n)), PLACEHOLDER);
  return dir;
}

function fakeVscode(opts: { listCommand?: boolean; settings?: Record<string, unknown> } = {}) {
  const contextKeys: unknown[] = [];
  const vs = {
    version: '1.139.1',
    commands: {
      async executeCommand(command: string, ...args: unknown[]) {
        if (command === LIST_PROMPT_FILES) {
          if (opts.listCommand === false) throw new Error(`command '${command}' not found`);
          return [];
        }
        if (command === 'setContext') {
          assert.equal(args[0], SLOT_CONTEXT_KEY);
          contextKeys.push(args[1]);
        }
        return undefined;
      },
    },
    workspace: {
      getConfiguration: (section: string) => ({ get: (key: string) => opts.settings?.[`${section}.${key}`] }),
    },
  };
  return { vs: vs as unknown as typeof vscode, contextKeys };
}

function fakeServer(texts: string[]) {
  const calls: object[] = [];
  return {
    calls,
    async execute<T>(command: string, arg?: object): Promise<T> {
      assert.equal(command, ServerCommand.getAgentMemory);
      calls.push(arg ?? {});
      const text = texts.length > 1 ? texts.shift()! : texts[0];
      return { text, files: text ? [{ path: 'pkg/AGENTS.md' }] : [], readByAgent: ['AGENTS.md'] } as T;
    },
  };
}

describe('chat instructions: the manifest', () => {
  it('declares one chatInstructions slot per window slot, each shown only by its context key', () => {
    assert.deepEqual(manifest.contributes.chatInstructions, slotContributions());
    assert.equal(SLOT_COUNT, 8);
  });

  it('ships the slots in the .vsix: the build lays them out with the placeholder', () => {
    assert.match(fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8'), /^!chat\/\*\.instructions\.md$/m);
    assert.match(fs.readFileSync(path.join(root, 'scripts', 'build.mjs'), 'utf8'), /this slot is not in use/);
    assert.ok(PLACEHOLDER.startsWith("---\napplyTo: '**'\n---\n"));
  });
});

describe('chat instructions: claiming a slot', () => {
  it('gives each live window its own slot and takes over the slot of a dead one', () => {
    const dir = tmp();
    const alive = (pid: number) => pid !== 999;
    assert.equal(claimSlot(fs, dir, 101, alive), 0);
    assert.equal(claimSlot(fs, dir, 102, alive), 1);
    assert.equal(claimSlot(fs, dir, 101, alive), 0, 'the same extension host keeps its slot');
    fs.writeFileSync(path.join(dir, 'slot-2.lock'), '999');
    assert.equal(claimSlot(fs, dir, 103, alive), 2);
    assert.equal(fs.readFileSync(path.join(dir, 'slot-2.lock'), 'utf8'), '103');
  });

  it('says when every slot is taken, and when the folder is read-only', () => {
    const dir = tmp();
    for (let n = 0; n < SLOT_COUNT; n++) fs.writeFileSync(path.join(dir, `slot-${n}.lock`), String(500 + n));
    assert.equal(claimSlot(fs, dir, 42, () => true), undefined);
    const readOnly = {
      ...fs,
      openSync: () => {
        throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
      },
    } as unknown as Fs;
    assert.throws(() => claimSlot(readOnly, tmp(), 42), ReadOnlyError);
  });
});

describe('chat instructions: one window', () => {
  it('points its slot at its storage, rewrites it only when the text changed, and gives it back', async () => {
    const ext = installFolder();
    const storage = path.join(tmp(), 'workspace-storage');
    const { vs, contextKeys } = fakeVscode();
    const server = fakeServer(['MEMORY ONE', 'MEMORY ONE', 'MEMORY TWO', '']);
    const chat = new ChatInstructions(vs, server, { extensionPath: ext, storagePath: storage, pid: process.pid }, () => {});
    const states: string[] = [];
    chat.onDidChangeState((state) => states.push(state.kind));
    assert.equal(await chat.start(), true);
    assert.deepEqual(states, []); // a slot, but nothing delivered yet: the tools still carry the memory
    const slot = path.join(ext, slotFile(0));
    assert.ok(fs.lstatSync(slot).isSymbolicLink());
    assert.equal(fs.realpathSync(slot), fs.realpathSync(path.join(storage, 'chat-instructions-slot-0.md')));

    await chat.refresh();
    assert.equal(fs.readFileSync(slot, 'utf8'), "---\napplyTo: '**'\n---\nMEMORY ONE\n");
    assert.deepEqual(contextKeys, [0]);
    assert.deepEqual(states, ['on']); // the MCP server definition follows (--memory-elsewhere)
    const before = fs.statSync(slot).mtimeMs;
    const inode = fs.statSync(slot).ino;

    await chat.refresh(); // same text: the file keeps its bytes and its inode (no rewrite)
    assert.equal(fs.statSync(slot).ino, inode);
    assert.equal(fs.statSync(slot).mtimeMs, before);
    assert.deepEqual(contextKeys, [0]);

    await chat.refresh();
    assert.equal(fs.readFileSync(slot, 'utf8'), "---\napplyTo: '**'\n---\nMEMORY TWO\n");
    await chat.refresh(); // nothing left to deliver: no attachment at all
    assert.deepEqual(contextKeys, [0, 0, -1]);
    assert.equal(chat.state.kind, 'on');
    assert.deepEqual(server.calls[0], {
      agent: 'vscode',
      vscode: { useAgentsMdFile: true, useNestedAgentsMdFiles: false, useClaudeMdFile: true, useInstructionFiles: true },
    });

    assert.deepEqual(states, ['on']); // told once, not on every text
    chat.dispose();
    assert.deepEqual(states, ['on', 'off']);
    assert.ok(!fs.lstatSync(slot).isSymbolicLink());
    assert.equal(fs.readFileSync(slot, 'utf8'), PLACEHOLDER);
    assert.ok(!fs.existsSync(path.join(ext, 'chat', 'slot-0.lock')));
    assert.ok(!fs.existsSync(path.join(storage, 'chat-instructions-slot-0.md')));
  });

  it('stays off with one line where VS Code has no chat instructions, and writes nothing', async () => {
    const ext = installFolder();
    const lines: string[] = [];
    const { vs, contextKeys } = fakeVscode({ listCommand: false });
    const chat = new ChatInstructions(vs, fakeServer(['X']), { extensionPath: ext, storagePath: tmp(), pid: 7 }, (l) => lines.push(l));
    assert.equal(await chat.start(), false);
    await chat.refresh();
    assert.equal(chat.state.kind, 'off');
    assert.match(lines[0], /does not read chat instructions from extensions .*tools only/);
    assert.deepEqual(fs.readdirSync(path.join(ext, 'chat')).filter((f) => f.endsWith('.lock')), []);
    assert.deepEqual(contextKeys, []);
  });

  it('passes VS Code\'s own reading settings to the server', () => {
    const settings = { 'chat.useClaudeMdFile': false, 'chat.useNestedAgentsMdFiles': true, 'chat.useAgentsMdFile': 'yes' };
    const get = (section: string, key: string) => (settings as Record<string, unknown>)[`${section}.${key}`];
    assert.deepEqual(chatSettings(get), {
      useAgentsMdFile: true,
      useNestedAgentsMdFiles: true,
      useClaudeMdFile: false,
      useInstructionFiles: true,
    });
  });
});
