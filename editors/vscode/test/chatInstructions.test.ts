import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type * as vscode from 'vscode';
import {
  chatSettings,
  ChatInstructions,
  claimSlot,
  claimSteps,
  type Fs,
  LIST_PROMPT_FILES,
  lockText,
  ownerOf,
  parseLock,
  PLACEHOLDER,
  type ProcessProbe,
  probeProcess,
  ReadOnlyError,
  runSteps,
  SLOT_CONTEXT_KEY,
  SLOT_COUNT,
  slotContributions,
  slotFile,
  type Steps,
  storageFileName,
  UNPARSEABLE_STALE_MS,
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

/** Made-up processes: pid → start time; a pid not listed is gone. */
function processes(table: Record<number, number>): ProcessProbe {
  return (pid) => (Object.hasOwn(table, pid) ? { alive: true, startTime: table[pid] } : { alive: false });
}

const LIVE: Record<number, number> = { 101: 5001, 102: 5002, 103: 5003, 300: 3000 };
const DEAD = 900;

/** Where the interleaving tests make their thousands of folders: memory where the machine has it, it is quicker. */
const SCRATCH = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

/** A scratch folder holding an install folder (`ext`) and the windows' storage folders. */
function place(): { root: string; ext: string } {
  const root = fs.mkdtempSync(path.join(SCRATCH, 'cc-slots-'));
  const ext = path.join(root, 'ext');
  fs.mkdirSync(path.join(ext, 'chat'), { recursive: true });
  return { root, ext };
}

const lockPath = (ext: string, n: number): string => path.join(ext, 'chat', `slot-${n}.lock`);
const readLockFile = (ext: string, n: number): string | undefined =>
  fs.existsSync(lockPath(ext, n)) ? fs.readFileSync(lockPath(ext, n), 'utf8') : undefined;

interface Window {
  chat: ChatInstructions;
  /** This window's file in its storage folder. */
  file: string;
  contextKeys: unknown[];
  lines: string[];
}

function openWindow(
  root: string,
  ext: string,
  pid: number,
  opts: { probe?: ProcessProbe; fs?: Fs; storage?: string; texts?: string[]; checkEveryMs?: number } = {},
): Window {
  const { vs, contextKeys } = fakeVscode();
  const storage = opts.storage ?? path.join(root, `storage-${pid}`);
  const lines: string[] = [];
  const chat = new ChatInstructions(
    vs,
    fakeServer(opts.texts ?? [`MEMORY OF WINDOW ${pid}`]),
    { extensionPath: ext, storagePath: storage, pid },
    (line) => lines.push(line),
    opts.fs ?? fs,
    { probe: opts.probe ?? processes(LIVE), checkEveryMs: opts.checkEveryMs ?? 0 },
  );
  return { chat, file: path.join(storage, storageFileName(pid)), contextKeys, lines };
}

/**
 * What a user would see: no slot held by two windows; a held slot's lock names its window and its slot file
 * leads to that window's own file; no temporary file left in the install folder.
 */
function assertSlots(ext: string, windows: Window[]): void {
  for (let n = 0; n < SLOT_COUNT; n++) {
    const holders = windows.filter((w) => w.chat.slot === n);
    assert.ok(holders.length <= 1, `slot ${n} is held by ${holders.length} windows`);
    if (holders.length === 0) continue;
    const [w] = holders;
    assert.equal(readLockFile(ext, n), lockText(w.chat.owner), `slot ${n}'s lock names its window`);
    assert.equal(fs.realpathSync(path.join(ext, slotFile(n))), fs.realpathSync(w.file), `slot ${n} leads to its window's file`);
  }
  assert.deepEqual(fs.readdirSync(path.join(ext, 'chat')).filter((f) => f.startsWith('.')), [], 'no temporary file left');
}

type Run = Steps<unknown>;
interface Trial {
  runs: Run[];
  check(results: unknown[]): void;
  /** After every step. */
  each?(): void;
  done(): void;
}

const NAMES = 'ABCDEF';

/**
 * Run `make()`'s runs in every order of their steps (a step is one file operation another window can see),
 * on a fresh set-up each time, after `prefix` (the runs stepped first, in that order); `check` gets each run's
 * result. Each order runs once, start to end: where it could have stepped another run, that order is queued. A
 * failure names the order (each window, and the operation it then stopped before).
 * Returns how many orders ran.
 */
function everyOrder(make: () => Trial, prefix: number[] = []): number {
  const pending: number[][] = [prefix];
  let orders = 0;
  while (pending.length > 0) {
    const forced = pending.pop()!;
    const trial = make();
    const results: unknown[] = [];
    const finished = trial.runs.map(() => false);
    const taken: number[] = [];
    const trace: string[] = [];
    const explain = (err: unknown): Error =>
      new Error(`${err instanceof Error ? err.message : String(err)}\n  in the order: ${trace.join(' → ')}`, { cause: err });
    try {
      for (;;) {
        const live = finished.flatMap((f, i) => (f ? [] : [i]));
        if (live.length === 0) break;
        let i = live[0];
        if (taken.length < forced.length) i = forced[taken.length];
        else for (const other of live.slice(1)) pending.push([...taken, other]);
        taken.push(i);
        const next = trial.runs[i].next();
        trace.push(`${NAMES[i]} ${next.done ? 'done' : `before ${next.value}`}`);
        if (next.done) {
          finished[i] = true;
          results[i] = next.value;
        }
        try {
          trial.each?.();
        } catch (err) {
          throw explain(err);
        }
      }
      orders++;
      try {
        trial.check(results);
      } catch (err) {
        throw explain(err);
      }
    } finally {
      trial.done();
    }
  }
  return orders;
}

/** Step `run` until it stops before `label`. */
function stepUntil(run: Run, label: string): void {
  for (;;) {
    const next = run.next();
    assert.ok(!next.done, `the run ended before ${label}`);
    if (next.value === label) return;
  }
}

function* chain(...runs: Run[]): Steps<unknown[]> {
  const results: unknown[] = [];
  for (const run of runs) results.push(yield* run);
  return results;
}

const ascending = (xs: (number | undefined)[]): (number | undefined)[] => [...xs].sort((a, b) => (a ?? -1) - (b ?? -1));

describe('chat instructions: claiming a slot', () => {
  it('gives each live window its own slot, keeps an extension host its own, and takes over the slot of a dead one', () => {
    const dir = tmp();
    const probe = processes(LIVE);
    const a = { pid: 101, startTime: 5001 };
    assert.equal(claimSlot(fs, dir, a, probe), 0);
    assert.equal(claimSlot(fs, dir, { pid: 102, startTime: 5002 }, probe), 1);
    assert.equal(claimSlot(fs, dir, a, probe), 0, 'the same extension host keeps its slot');
    fs.writeFileSync(path.join(dir, 'slot-2.lock'), lockText({ pid: DEAD, startTime: 1 }));
    assert.equal(claimSlot(fs, dir, { pid: 103, startTime: 5003 }, probe), 2);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'slot-2.lock'), 'utf8')), { pid: 103, startTime: 5003 });
    assert.deepEqual(fs.readdirSync(dir).sort(), ['slot-0.lock', 'slot-1.lock', 'slot-2.lock']);
  });

  it('says when every slot is taken, and when the folder is read-only', () => {
    const dir = tmp();
    const table: Record<number, number> = {};
    for (let n = 0; n < SLOT_COUNT; n++) {
      table[500 + n] = 7;
      fs.writeFileSync(path.join(dir, `slot-${n}.lock`), lockText({ pid: 500 + n, startTime: 7 }));
    }
    assert.equal(claimSlot(fs, dir, { pid: 42, startTime: 1 }, processes(table)), undefined);
    assert.deepEqual(fs.readdirSync(dir).filter((f) => !f.startsWith('slot-')), [], 'no temporary file left');
    const readOnly = {
      ...fs,
      openSync: () => {
        throw Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
      },
    } as unknown as Fs;
    assert.throws(() => claimSlot(readOnly, tmp(), { pid: 42, startTime: 1 }), ReadOnlyError);
  });

  it('judges a reused pid by its start time, an older version\'s bare pid by the pid alone', () => {
    const cases: { lock: string; procs: Record<number, number>; slot: number; why: string }[] = [
      { lock: lockText({ pid: 200, startTime: 7 }), procs: { 200: 7 }, slot: 1, why: 'alive, same start time: held' },
      { lock: lockText({ pid: 200, startTime: 7 }), procs: { 200: 8 }, slot: 0, why: 'pid reused (another start time): stale' },
      { lock: lockText({ pid: 200, startTime: 7 }), procs: {}, slot: 0, why: 'gone: stale' },
      { lock: '200', procs: { 200: 8 }, slot: 1, why: 'a bare pid, alive: held' },
      { lock: '200', procs: {}, slot: 0, why: 'a bare pid, gone: stale' },
      { lock: lockText({ pid: 101, startTime: 4 }), procs: {}, slot: 0, why: 'this pid with another start time: not this window' },
      { lock: '101', procs: {}, slot: 0, why: 'this pid as a bare pid: an earlier process' },
      { lock: lockText({ pid: 200, startTime: null }), procs: { 200: 8 }, slot: 1, why: 'no start time known: the pid decides' },
    ];
    for (const c of cases) {
      const dir = tmp();
      fs.writeFileSync(path.join(dir, 'slot-0.lock'), c.lock);
      const me = { pid: 101, startTime: 5001 };
      assert.equal(claimSlot(fs, dir, me, processes({ ...c.procs, 101: 5001 })), c.slot, c.why);
      assert.equal(fs.readFileSync(path.join(dir, `slot-${c.slot}.lock`), 'utf8'), lockText(me), c.why);
      if (c.slot === 1) assert.equal(fs.readFileSync(path.join(dir, 'slot-0.lock'), 'utf8'), c.lock, `${c.why}: left as it was`);
    }
  });

  it('holds a lock it cannot parse while it is young, and lets exactly one window take it over once old', () => {
    for (const garbage of ['', '{"pid":', 'not a lock']) {
      const { root, ext } = place();
      fs.writeFileSync(lockPath(ext, 0), garbage);
      const [a, b] = [openWindow(root, ext, 101), openWindow(root, ext, 102)];
      assert.ok(runSteps(a.chat.takeSlot()) && runSteps(b.chat.takeSlot()));
      assert.deepEqual([a.chat.slot, b.chat.slot], [1, 2], `${JSON.stringify(garbage)} young: held`);
      assert.equal(readLockFile(ext, 0), garbage);
    }
    const { root, ext } = place();
    fs.writeFileSync(lockPath(ext, 0), '{"pid":');
    const old = new Date(Date.now() - UNPARSEABLE_STALE_MS - 5000);
    fs.utimesSync(lockPath(ext, 0), old, old);
    const w = openWindow(root, ext, 101);
    assert.ok(runSteps(w.chat.takeSlot()));
    assert.equal(w.chat.slot, 0, 'old: stale (two windows at once: below)');
    assertSlots(ext, [w]);
  });

  it('never leaves a folder, link or FIFO at a lock name, nor a large file, to be read or taken', () => {
    const { root, ext } = place();
    fs.mkdirSync(lockPath(ext, 0));
    fs.symlinkSync(path.join(root, 'nowhere'), lockPath(ext, 1));
    fs.writeFileSync(lockPath(ext, 2), 'x'.repeat(5000));
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(lockPath(ext, 2), old, old);
    const w = openWindow(root, ext, 101);
    assert.ok(runSteps(w.chat.takeSlot()));
    assert.equal(w.chat.slot, 3);
    assert.ok(fs.statSync(lockPath(ext, 0)).isDirectory());
    assert.ok(fs.lstatSync(lockPath(ext, 1)).isSymbolicLink());
    assert.equal(fs.statSync(lockPath(ext, 2)).size, 5000);
  });
});

describe('chat instructions: windows starting and closing at once (every order of their file operations)', () => {
  it('two windows that see the same dead window\'s lock: exactly one takes it over, the other takes the next free slot', () => {
    const orders = everyOrder(() => {
      const { root, ext } = place();
      fs.writeFileSync(lockPath(ext, 0), lockText({ pid: DEAD, startTime: 1 }));
      const windows = [openWindow(root, ext, 101), openWindow(root, ext, 102)];
      return {
        runs: windows.map((w) => w.chat.takeSlot()),
        check: (results) => {
          assert.deepEqual(results, [true, true]);
          assert.deepEqual(ascending(windows.map((w) => w.chat.slot)), [0, 1]);
          assertSlots(ext, windows);
        },
        done: () => fs.rmSync(root, { recursive: true, force: true }),
      };
    });
    assert.ok(orders > 100, `${orders} orders`);
  });

  it('two windows that see the same reused pid, or the same old unparseable lock: exactly one takes the slot over', () => {
    for (const [stale, why] of [
      [lockText({ pid: 300, startTime: 1 }), '300 runs now, started later'],
      ['{"pid":', 'cut off, written long ago'],
    ]) {
      const orders = everyOrder(() => {
        const dir = fs.mkdtempSync(path.join(SCRATCH, 'cc-slots-'));
        fs.writeFileSync(path.join(dir, 'slot-0.lock'), stale);
        const old = new Date(Date.now() - UNPARSEABLE_STALE_MS - 5000);
        fs.utimesSync(path.join(dir, 'slot-0.lock'), old, old);
        const owners = [
          { pid: 101, startTime: 5001 },
          { pid: 102, startTime: 5002 },
        ];
        return {
          runs: owners.map((me) => claimSteps(fs, dir, me, processes(LIVE))),
          check: (results) => {
            assert.deepEqual(ascending(results as number[]), [0, 1], why);
            owners.forEach((me, i) => assert.equal(fs.readFileSync(path.join(dir, `slot-${results[i]}.lock`), 'utf8'), lockText(me)));
            assert.deepEqual(fs.readdirSync(dir).sort(), ['slot-0.lock', 'slot-1.lock'], 'no temporary file left');
          },
          done: () => fs.rmSync(dir, { recursive: true, force: true }),
        };
      });
      assert.ok(orders > 50, `${why}: ${orders} orders`);
    }
  });

  it('a lock is never seen empty or partial: it appears whole (a hard link of a file written first)', () => {
    let seen = 0;
    everyOrder(() => {
      const { root, ext } = place();
      const windows = [openWindow(root, ext, 101), openWindow(root, ext, 102)];
      return {
        runs: windows.map((w) => w.chat.takeSlot()),
        each: () => {
          for (let n = 0; n < SLOT_COUNT; n++) {
            const text = readLockFile(ext, n);
            if (text === undefined) continue;
            seen++;
            assert.ok(parseLock(text), `slot-${n}.lock holds ${JSON.stringify(text)}`);
          }
        },
        check: () => {
          assert.deepEqual(ascending(windows.map((w) => w.chat.slot)), [0, 1]);
          assertSlots(ext, windows);
        },
        done: () => fs.rmSync(root, { recursive: true, force: true }),
      };
    });
    assert.ok(seen > 0);
  });

  it('where links are refused, a window that reads a lock another is still writing leaves it alone', () => {
    const noLinks = {
      ...fs,
      linkSync: () => {
        throw Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
      },
    } as unknown as Fs;
    const { root, ext } = place();
    const [a, b] = [openWindow(root, ext, 101, { fs: noLinks }), openWindow(root, ext, 102, { fs: noLinks })];
    const runA = a.chat.takeSlot();
    stepUntil(runA, 'write slot-0.lock'); // created, not yet written
    assert.equal(readLockFile(ext, 0), '');
    assert.ok(runSteps(b.chat.takeSlot()));
    assert.equal(b.chat.slot, 1, 'the empty lock being written is held');
    assert.ok(runSteps(runA));
    assert.equal(a.chat.slot, 0);
    assertSlots(ext, [a, b]);

    const orders = everyOrder(() => {
      const { root, ext } = place();
      const windows = [openWindow(root, ext, 101, { fs: noLinks }), openWindow(root, ext, 102, { fs: noLinks })];
      return {
        runs: windows.map((w) => w.chat.takeSlot()),
        check: () => {
          assert.deepEqual(ascending(windows.map((w) => w.chat.slot)), [0, 1]);
          assertSlots(ext, windows);
        },
        done: () => fs.rmSync(root, { recursive: true, force: true }),
      };
    });
    assert.ok(orders > 10, `${orders} orders`);
  });

  it('a window closing while another starts: the slot ends with one holder, its file leading to that window', () => {
    const orders = everyOrder(() => {
      const { root, ext } = place();
      const [a, b] = [openWindow(root, ext, 101), openWindow(root, ext, 102)];
      assert.ok(runSteps(a.chat.takeSlot()));
      return {
        runs: [a.chat.disposeSteps(), b.chat.takeSlot()],
        check: () => {
          assert.equal(a.chat.slot, undefined);
          assert.ok(b.chat.slot === 0 || b.chat.slot === 1);
          assertSlots(ext, [a, b]);
          assert.ok(!fs.existsSync(a.file), "the closed window's own file is gone");
          if (b.chat.slot === 1) {
            assert.equal(readLockFile(ext, 0), undefined);
            assert.equal(fs.readFileSync(path.join(ext, slotFile(0)), 'utf8'), PLACEHOLDER);
          }
        },
        done: () => fs.rmSync(root, { recursive: true, force: true }),
      };
    });
    assert.ok(orders > 10, `${orders} orders`);
  });

  it('release racing a takeover: a window read the dead lock, then another takes it over and closes, in every order', () => {
    const orders = everyOrder(
      () => {
        const { root, ext } = place();
        fs.writeFileSync(lockPath(ext, 0), lockText({ pid: DEAD, startTime: 1 }));
        const [a, b] = [openWindow(root, ext, 101), openWindow(root, ext, 102)];
        return {
          runs: [chain(a.chat.takeSlot(), a.chat.disposeSteps()), b.chat.takeSlot()],
          check: (results) => {
            assert.deepEqual(results, [[true, undefined], true]);
            assert.equal(a.chat.slot, undefined);
            assertSlots(ext, [a, b]);
            assert.ok(!fs.existsSync(a.file));
            if (b.chat.slot !== 0) {
              // Nobody shows slot 0; its lock is gone, or names the closing window (whose process exits with it).
              const left = readLockFile(ext, 0);
              assert.ok(left === undefined || left === lockText(a.chat.owner), `slot 0's lock: ${left}`);
            }
          },
          done: () => fs.rmSync(root, { recursive: true, force: true }),
        };
      },
      [1, 1, 1], // B stops before its rename: it has judged the dead window's lock stale
    );
    assert.ok(orders > 100, `${orders} orders`);
  });
});

describe('chat instructions: a window that lost its slot', () => {
  it('three windows, one stalled between its read and its rename: the window robbed of its slot notices, claims another, and leaves the slot alone', async () => {
    const { root, ext } = place();
    fs.writeFileSync(lockPath(ext, 0), lockText({ pid: DEAD, startTime: 1 }));
    const [a, b, c] = [openWindow(root, ext, 101), openWindow(root, ext, 102), openWindow(root, ext, 103)];
    const runB = b.chat.takeSlot();
    stepUntil(runB, 'rename slot-0.lock'); // B judged the dead lock stale, then stalled
    assert.ok(runSteps(a.chat.takeSlot()));
    assert.equal(a.chat.slot, 0);
    assert.equal(runB.next().value, 'restore slot-0.lock', 'B renamed what it found: A\'s fresh lock');
    assert.ok(runSteps(c.chat.takeSlot())); // in B's gap: slot 0 has no lock
    assert.equal(c.chat.slot, 0);
    assert.ok(runSteps(runB));
    assert.equal(b.chat.slot, 1);
    assert.equal(readLockFile(ext, 0), lockText(c.chat.owner));
    assert.deepEqual(fs.readdirSync(path.join(ext, 'chat')).filter((f) => f.startsWith('.')), []);

    await a.chat.refresh(); // A checks its lock before it writes
    assert.equal(a.chat.slot, 2);
    assert.ok(a.lines.some((l) => /slot 0 is another window's now; this window claims another/.test(l)), a.lines.join('\n'));
    assert.deepEqual(a.contextKeys, [-1, 2]);
    assertSlots(ext, [a, b, c]);
    assert.equal(fs.readFileSync(path.join(ext, slotFile(2)), 'utf8'), "---\napplyTo: '**'\n---\nMEMORY OF WINDOW 101\n");
    await c.chat.refresh();
    assert.equal(fs.readFileSync(path.join(ext, slotFile(0)), 'utf8'), "---\napplyTo: '**'\n---\nMEMORY OF WINDOW 103\n");

    a.chat.dispose();
    c.chat.dispose();
    b.chat.dispose();
    assert.deepEqual(fs.readdirSync(path.join(ext, 'chat')).filter((f) => f.endsWith('.lock')), []);
  });

  it('notices on its own within its check interval, without a refresh', async () => {
    const { root, ext } = place();
    const a = openWindow(root, ext, 101, { checkEveryMs: 20 });
    assert.equal(await a.chat.start(), true);
    await a.chat.refresh();
    assert.equal(a.chat.slot, 0);
    // Another window holds slot 0 now (as after the race above) and has pointed the slot at its own file.
    const other = path.join(root, 'other.md');
    fs.writeFileSync(other, 'THE OTHER WINDOW');
    fs.writeFileSync(lockPath(ext, 0), lockText({ pid: 103, startTime: 5003 }));
    fs.rmSync(path.join(ext, slotFile(0)));
    fs.symlinkSync(other, path.join(ext, slotFile(0)));
    const deadline = Date.now() + 10_000;
    const slotNow = (): number | undefined => a.chat.slot;
    while (slotNow() !== 1 || fs.readFileSync(a.file, 'utf8') === PLACEHOLDER) {
      assert.ok(Date.now() < deadline, `still slot ${a.chat.slot}: ${a.lines.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(a.contextKeys, [0, -1, 1]);
    assert.equal(fs.realpathSync(path.join(ext, slotFile(0))), fs.realpathSync(other));
    assert.equal(readLockFile(ext, 0), lockText({ pid: 103, startTime: 5003 }));
    a.chat.dispose();
  });

  it('closing it touches nothing of the slot: not the lock, not the slot file', async () => {
    const { root, ext } = place();
    const a = openWindow(root, ext, 101);
    assert.equal(await a.chat.start(), true);
    const other = path.join(root, 'other.md');
    fs.writeFileSync(other, 'THE OTHER WINDOW');
    fs.writeFileSync(lockPath(ext, 0), lockText({ pid: 103, startTime: 5003 }));
    fs.rmSync(path.join(ext, slotFile(0)));
    fs.symlinkSync(other, path.join(ext, slotFile(0)));
    a.chat.dispose();
    assert.equal(readLockFile(ext, 0), lockText({ pid: 103, startTime: 5003 }));
    assert.equal(fs.readFileSync(path.join(ext, slotFile(0)), 'utf8'), 'THE OTHER WINDOW');
    assert.ok(!fs.existsSync(a.file), 'its own file in its storage is gone');
    assert.deepEqual(a.contextKeys, [-1]);
  });
});

describe('chat instructions: the process probe', () => {
  it('gives this process its start time from /proc, and a process that ended as gone', { skip: !fs.existsSync('/proc/self/stat') && 'no /proc here' }, () => {
    const stat = fs.readFileSync(`/proc/${process.pid}/stat`, 'utf8');
    const startTime = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    assert.deepEqual(probeProcess(process.pid), { alive: true, startTime });
    const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    assert.deepEqual(probeProcess(Number(child.stdout.trim())), { alive: false });
    assert.deepEqual(ownerOf(process.pid), { pid: process.pid, startTime });
  });
});

describe('chat instructions: one window', () => {
  it('points its slot at its storage, rewrites it only when the text changed, and gives it back', async () => {
    const ext = installFolder();
    const storage = path.join(tmp(), 'workspace-storage');
    const { vs, contextKeys } = fakeVscode();
    const server = fakeServer(['MEMORY ONE', 'MEMORY ONE', 'MEMORY TWO', '']);
    // Left in the storage folder: the file of a window whose extension host was killed, a live one's, another file.
    const gone = Number(spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim());
    fs.mkdirSync(storage, { recursive: true });
    for (const name of [storageFileName(gone), storageFileName(process.ppid), 'notes.md']) fs.writeFileSync(path.join(storage, name), 'x');
    const chat = new ChatInstructions(vs, server, { extensionPath: ext, storagePath: storage, pid: process.pid }, () => {});
    const states: string[] = [];
    chat.onDidChangeState((state) => states.push(state.kind));
    assert.equal(await chat.start(), true);
    assert.deepEqual(states, []); // a slot, but nothing delivered yet: the tools still carry the memory
    const slot = path.join(ext, slotFile(0));
    assert.ok(fs.lstatSync(slot).isSymbolicLink());
    const own = path.join(storage, storageFileName(process.pid));
    assert.equal(fs.realpathSync(slot), fs.realpathSync(own));
    assert.deepEqual(fs.readdirSync(storage).sort(), [storageFileName(process.pid), storageFileName(process.ppid), 'notes.md'].sort());
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(ext, 'chat', 'slot-0.lock'), 'utf8')), ownerOf(process.pid));

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
    assert.ok(!fs.existsSync(own));
    assert.deepEqual(fs.readdirSync(path.join(ext, 'chat')).sort(), Array.from({ length: SLOT_COUNT }, (_, n) => path.basename(slotFile(n))).sort());
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
