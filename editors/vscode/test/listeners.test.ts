import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { OPEN_LISTENERS, TerminalListeners } from '../src/listeners';

function fakeVscode(terminals: unknown[]) {
  let opened: (() => void) | undefined;
  const vs = {
    window: {
      terminals,
      onDidOpenTerminal(listener: () => void) {
        opened = listener;
        return { dispose() {} };
      },
    },
  } as unknown as typeof vscode;
  return { vs, openTerminal: () => opened?.() };
}

function host(running = true) {
  const calls: unknown[][] = [];
  const lines: string[] = [];
  return {
    calls,
    lines,
    running,
    async execute(command: string, args: unknown) {
      calls.push([command, args]);
      return {};
    },
    log: (line: string) => lines.push(line),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('Terminal agents: listening ports opened when a terminal is', () => {
  it('asks for nothing while the window has no terminal', async () => {
    const { vs } = fakeVscode([]);
    const h = host();
    const listeners = new TerminalListeners(vs, h);
    assert.equal(await listeners.serverStarted(), false);
    assert.deepEqual(h.calls, []);
  });

  it('asks when a terminal opens, and again when the server restarts while one is open', async () => {
    const terminals: unknown[] = [];
    const { vs, openTerminal } = fakeVscode(terminals);
    const h = host();
    const listeners = new TerminalListeners(vs, h);
    terminals.push({ name: 'bash' });
    openTerminal();
    await settle();
    assert.deepEqual(h.calls, [[OPEN_LISTENERS, { for: 'terminal' }]]);
    assert.equal(await listeners.serverStarted(), true);
    assert.equal(h.calls.length, 2);
  });

  it('a terminal restored at start: asked once the server runs; not before', async () => {
    const { vs } = fakeVscode([{ name: 'restored' }]);
    const h = host(false);
    const listeners = new TerminalListeners(vs, h);
    assert.equal(await listeners.serverStarted(), false);
    h.running = true;
    assert.equal(await listeners.serverStarted(), true);
    assert.deepEqual(h.calls, [[OPEN_LISTENERS, { for: 'terminal' }]]);
  });

  it('a server that refuses is logged, nothing thrown', async () => {
    const { vs } = fakeVscode([{}]);
    const h = host();
    h.execute = async () => {
      throw new Error('unknown command');
    };
    const listeners = new TerminalListeners(vs, h);
    assert.equal(await listeners.serverStarted(), false);
    assert.match(h.lines[0], /terminal agents' listeners: unknown command/);
  });
});
