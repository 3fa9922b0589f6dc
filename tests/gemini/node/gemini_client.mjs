// Gemini CLI's own IDE client (@google/gemini-cli-core) against Context Companion.
//
// Started by harness.py from a child shell of the scripted editor (so the CLI's walk up the
// process tree finds the editor as it would in a terminal). Speaks to the harness by JSON lines:
// it prints {"event": ...} on stdout and reads {"go": ...} lines on stdin. Exits non-zero with
// the reason on stderr when an expectation fails.
import assert from 'node:assert/strict';
import * as readline from 'node:readline';
import { IdeClient, IDEConnectionStatus, ideContextStore } from '@google/gemini-cli-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const expected = JSON.parse(process.env.HARNESS_EXPECT);
const say = (event, data = {}) => process.stdout.write(JSON.stringify({ event, ...data }) + '\n');

const lines = readline.createInterface({ input: process.stdin });
const waiting = [];
lines.on('line', (line) => waiting.shift()?.(JSON.parse(line)));
const nextGo = () => new Promise((resolve) => waiting.push(resolve));

const seen = [];
ideContextStore.subscribe((state) => {
  if (state === undefined) return;
  const files = state.workspaceState?.openFiles ?? [];
  for (const f of files) {
    assert.ok(!f.path.endsWith('.env'), `an excluded file reached the CLI: ${f.path}`);
  }
  seen.push(structuredClone(state));
});

async function until(what, predicate, ms = 10000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const state = ideContextStore.get();
    if (state !== undefined && predicate(state)) return state;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}; last context: ${JSON.stringify(ideContextStore.get())}`);
}

const files = (state) => state.workspaceState?.openFiles ?? [];

async function main() {
  const ide = await IdeClient.getInstance();
  assert.deepEqual(ide.getCurrentIde(), { name: 'neovim', displayName: 'Neovim' });
  await ide.connect({ logToConsole: false });
  const status = ide.getConnectionStatus();
  assert.equal(status.status, IDEConnectionStatus.Connected, JSON.stringify(status));
  assert.equal(ide.isDiffingEnabled(), true, 'openDiff and closeDiff are listed');
  say('connected', { ide: ide.getCurrentIde() });

  // The first update arrives without any editor change: it is sent when our stream opens.
  const first = await until('the open files', (s) => files(s).length === expected.first.length);
  assert.deepEqual(
    files(first).map((f) => f.path),
    expected.first.map((f) => f.path),
  );
  const active = files(first)[0];
  assert.equal(active.isActive, true);
  assert.deepEqual(active.cursor, expected.first[0].cursor);
  assert.equal(active.selectedText, expected.first[0].selectedText);
  for (const other of files(first).slice(1)) {
    assert.equal(other.isActive, false);
    assert.equal(other.cursor, undefined);
  }
  say('context', { state: first });

  // The editor moves to the excluded file, then to another file: only the latter is seen.
  say('move');
  await nextGo();
  const moved = await until('the moved cursor', (s) => files(s)[0]?.path === expected.moved.path);
  assert.deepEqual(files(moved)[0].cursor, expected.moved.cursor);
  assert.equal(files(moved)[0].isActive, true);
  say('moved', { state: moved });

  // openDiff: the editor's answer comes back as the CLI's diff result.
  const accepted = await ide.openDiff(expected.diff.path, expected.diff.proposed);
  assert.deepEqual(accepted, { status: 'accepted', content: expected.diff.edited });
  say('diffAccepted', { result: accepted });
  const rejected = await ide.openDiff(expected.diff.path, expected.diff.proposed + '# again\n');
  assert.deepEqual(rejected, { status: 'rejected', content: undefined });
  say('diffRejected', { result: rejected });

  // A client with a wrong token is refused (the SDK surfaces the HTTP 401).
  const intruder = new Client({ name: 'intruder', version: '0' });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${expected.port}/mcp`), {
    requestInit: { headers: { Authorization: 'Bearer wrong-token' } },
  });
  let refused;
  try {
    await intruder.connect(transport);
  } catch (err) {
    refused = String(err?.message ?? err);
  }
  assert.ok(refused !== undefined, 'a wrong token must not connect');
  assert.match(refused, /401/);
  say('refused', { error: refused });

  await ide.disconnect();
  say('done', { updates: seen.length });
  lines.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
