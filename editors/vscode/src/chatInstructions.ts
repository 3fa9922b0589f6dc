/**
 * Chat instructions: the memory VS Code's own chat does not read itself (sub-folder memory of the open files,
 * `.cursor/rules`, GEMINI.md, `.claude/rules`, the other vendors' formats: the server's
 * `contextCompanion.getAgentMemory` for agent `vscode`), put where VS Code's agent reads it on every request.
 *
 * The channel: `contributes.chatInstructions`. VS Code (1.139 measured) re-reads each contributed instructions
 * file on every chat request and puts it into the system message as an `<attachment>`; the file must lie in the
 * extension's install folder, which every window and profile shares and which can be read-only. So:
 * - the manifest declares {@link SLOT_COUNT} slot files, each shown only while this window's context key
 *   {@link SLOT_CONTEXT_KEY} names it (context keys are per window);
 * - a window claims a free slot with a lock file beside it (`slot-N.lock`: the extension host's pid and start
 *   time, created whole; the lock of a window that is gone is taken over by a rename, so of several windows
 *   exactly one gets it: see {@link claimSteps}), and points the slot file at its own file in the extension's
 *   storage (`storageUri`, else `globalStorageUri`), a symlink, or a copy where links are refused; it gives back
 *   only a slot whose lock still names it;
 * - the text is rewritten only when the server's answer changed, so the system message keeps its bytes (and a
 *   provider's prompt cache) while nothing changed; with nothing to deliver the key is cleared (no attachment).
 * Where VS Code has no such channel (no `_listExtensionPromptFiles`, VS Code before chat instructions), where the
 * install folder is read-only or every slot is taken, it logs one line and the memory still reaches the chat
 * through the language model tools. The `vscode` module, the file system and the process probe are injected, and
 * the file work runs in steps, for unit tests that interleave windows.
 */
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import { pidAlive, type ProcessProbe, type ProcessState, probeProcess } from './processes';
import { ServerCommand } from './protocol';

export const SLOT_COUNT = 8;
export const SLOT_CONTEXT_KEY = 'contextCompanion.chatInstructionsSlot';
export const SLOT_DIR = 'chat';
export const MEMORY_CHANGED_NOTIFICATION = 'contextCompanion/memoryChanged';
/** VS Code attaches an instructions file to every request only with this front matter. */
export const FRONT_MATTER = "---\napplyTo: '**'\n---\n";
/** What a slot holds while no window uses it (never attached: its `when` is false). */
export const PLACEHOLDER = `${FRONT_MATTER}Context Companion: this slot is not in use.\n`;
/** An internal command of the VS Code versions that read extension-contributed prompt files. */
export const LIST_PROMPT_FILES = '_listExtensionPromptFiles';
const DEBOUNCE_MS = 150;

export const slotFile = (n: number): string => `${SLOT_DIR}/slot-${n}.instructions.md`;

/** The `contributes.chatInstructions` entries (the manifest test checks package.json against them). */
export function slotContributions(): { path: string; when: string }[] {
  return Array.from({ length: SLOT_COUNT }, (_, n) => ({ path: `./${slotFile(n)}`, when: `${SLOT_CONTEXT_KEY} == ${n}` }));
}

/** The instructions file for `text` (the server's answer): front matter, then the text as is. */
export function fileText(text: string): string {
  return `${FRONT_MATTER}${text}\n`;
}

/** VS Code's settings that decide what its chat reads itself, as `getAgentMemory`'s `vscode` argument. */
export function chatSettings(get: (section: string, key: string) => unknown): Record<string, boolean> {
  const flag = (section: string, key: string, fallback: boolean): boolean => {
    const value = get(section, key);
    return typeof value === 'boolean' ? value : fallback;
  };
  return {
    useAgentsMdFile: flag('chat', 'useAgentsMdFile', true),
    useNestedAgentsMdFiles: flag('chat', 'useNestedAgentsMdFiles', false),
    useClaudeMdFile: flag('chat', 'useClaudeMdFile', true),
    useInstructionFiles: flag('github.copilot.chat.codeGeneration', 'useInstructionFiles', true),
  };
}

/** The settings {@link chatSettings} reads, for onDidChangeConfiguration. */
export const CHAT_SETTINGS = [
  'chat.useAgentsMdFile',
  'chat.useNestedAgentsMdFiles',
  'chat.useClaudeMdFile',
  'github.copilot.chat.codeGeneration.useInstructionFiles',
];

export type Fs = Pick<
  typeof nodeFs,
  | 'openSync'
  | 'writeSync'
  | 'closeSync'
  | 'readFileSync'
  | 'writeFileSync'
  | 'renameSync'
  | 'rmSync'
  | 'symlinkSync'
  | 'mkdirSync'
  | 'lstatSync'
  | 'linkSync'
  | 'readdirSync'
>;

/** The install folder cannot be written: the channel is not available to this window. */
export class ReadOnlyError extends Error {}

const READ_ONLY = new Set(['EACCES', 'EPERM', 'EROFS']);
/** `link()` refused by the file system (FAT, some network shares): an exclusive create is used instead. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EINVAL']);
const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

export { pidAlive, type ProcessProbe, type ProcessState, probeProcess };

/**
 * Who holds a slot: an extension host's pid and its process start time (`/proc/<pid>/stat` field 22, clock
 * ticks since boot), `null` where the system cannot tell (no `/proc`: the pid alone decides).
 */
export interface Owner {
  pid: number;
  startTime: number | null;
}

/** This process (or `pid`) as a lock names it. */
export function ownerOf(pid: number, probe: ProcessProbe = probeProcess): Owner {
  const now = probe(pid);
  return { pid, startTime: now.alive ? now.startTime : null };
}

/** What a lock file holds: `{"pid":…,"startTime":…}`, written whole. */
export function lockText(owner: Owner): string {
  return JSON.stringify({ pid: owner.pid, startTime: owner.startTime });
}

const MAX_PID = 2 ** 31 - 1;
const MAX_LOCK_BYTES = 1024;

/** The owner a lock names; a bare pid is an older version's lock; `undefined` for anything else (partial, garbage). */
export function parseLock(text: string): Owner | undefined {
  const okPid = (pid: unknown): pid is number => Number.isSafeInteger(pid) && (pid as number) > 0 && (pid as number) <= MAX_PID;
  if (/^\s*\d+\s*$/.test(text)) {
    const pid = Number(text);
    return okPid(pid) ? { pid, startTime: null } : undefined;
  }
  try {
    const value = JSON.parse(text) as { pid?: unknown; startTime?: unknown } | null;
    if (typeof value !== 'object' || value === null || !okPid(value.pid)) return undefined;
    const start = value.startTime;
    if (start === undefined || start === null) return { pid: value.pid, startTime: null };
    return Number.isSafeInteger(start) && (start as number) >= 0 ? { pid: value.pid, startTime: start as number } : undefined;
  } catch {
    return undefined;
  }
}

const sameOwner = (a: Owner, b: Owner): boolean => a.pid === b.pid && a.startTime === b.startTime;

/** A lock that cannot be parsed (a writer cut off, garbage) is held for this long after its last write, then stale. */
export const UNPARSEABLE_STALE_MS = 5000;

/**
 * A point between two file operations that another window can see. {@link claimSteps} and
 * {@link releaseSteps} stop at each one, so tests run several windows through them in any order; the
 * extension runs them straight through ({@link runSteps}).
 */
export type Steps<T> = Generator<string, T, void>;

export function runSteps<T>(steps: Steps<T>): T {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

const unique = (): string => `${process.pid}.${Math.random().toString(36).slice(2, 10)}`;

/**
 * What a lock file holds: its text and when it was written; `gone`; or `odd` where it is no lock of ours (a
 * folder, link, FIFO, or over 1 KiB: never read, never taken over).
 */
function readLock(fs: Fs, file: string): { text: string; mtimeMs: number } | 'gone' | 'odd' {
  try {
    const st = fs.lstatSync(file);
    if (!st.isFile() || st.size > MAX_LOCK_BYTES) return 'odd';
    return { text: fs.readFileSync(file, 'utf8'), mtimeMs: st.mtimeMs };
  } catch (err) {
    if (code(err) === 'ENOENT') return 'gone';
    throw err;
  }
}

/** The text of a lock (or of a lock this window renamed); undefined when it is gone or odd. */
const lockTextAt = (fs: Fs, file: string): string | undefined => {
  const read = readLock(fs, file);
  return typeof read === 'object' ? read.text : undefined;
};

/** A lock as this window sees it: its own, `held` by a live window, `stale` (with the text judged), or `gone`. */
type Verdict = { kind: 'mine' } | { kind: 'held' } | { kind: 'gone' } | { kind: 'stale'; text: string };

function judge(fs: Fs, lock: string, me: Owner, probe: ProcessProbe): Verdict {
  const read = readLock(fs, lock);
  if (read === 'gone') return { kind: 'gone' };
  if (read === 'odd') return { kind: 'held' };
  const stale = { kind: 'stale', text: read.text } as const;
  const owner = parseLock(read.text);
  if (owner === undefined) return Date.now() - read.mtimeMs > UNPARSEABLE_STALE_MS ? stale : { kind: 'held' };
  if (sameOwner(owner, me)) return { kind: 'mine' };
  // This pid is this process, and the lock is not its own: its writer is gone.
  if (owner.pid === me.pid) return stale;
  const now = probe(owner.pid);
  if (!now.alive) return stale;
  // Alive with another start time: the pid was reused.
  if (owner.startTime !== null && now.startTime !== null && now.startTime !== owner.startTime) return stale;
  return { kind: 'held' };
}

/**
 * Create `dest` holding `text` whole, or say it exists: a hard link of `src` (which holds `text`), or where the
 * file system refuses links an exclusive create then the write (a reader meanwhile sees a young partial lock:
 * held).
 */
function* createWhole(fs: Fs, src: string, dest: string, text: string): Steps<boolean> {
  try {
    fs.linkSync(src, dest);
    return true;
  } catch (err) {
    if (code(err) === 'EEXIST') return false;
    if (!NO_LINKS.has(code(err) ?? '')) throw err;
  }
  let fd: number;
  try {
    fd = fs.openSync(dest, 'wx', 0o644);
  } catch (err) {
    if (code(err) === 'EEXIST') return false;
    throw err;
  }
  try {
    yield `write ${path.basename(dest)}`;
    fs.writeSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

/** Whether `slot-N.lock` in `dir` names `me` now. */
export function holdsSlot(fs: Fs, dir: string, slot: number, me: Owner): boolean {
  try {
    const owner = parseLock(lockTextAt(fs, path.join(dir, `slot-${slot}.lock`)) ?? '');
    return owner !== undefined && sameOwner(owner, me);
  } catch {
    return false;
  }
}

/**
 * Claim the first free slot in `dir` for `me`, step by step (see {@link Steps}). The lock is written whole
 * into a file of this window's own and linked to `slot-N.lock` (which fails when it exists), then read back. A
 * stale lock (its process gone, or alive with another start time; an unparseable one older than
 * {@link UNPARSEABLE_STALE_MS}) is taken over by renaming it to a name of this window's own: of several windows
 * that judged it stale only one renames it; one that renamed a lock another window had meanwhile claimed puts it
 * back. Returns the slot, or undefined when all are held; throws {@link ReadOnlyError} when the folder cannot
 * be written.
 */
export function* claimSteps(fs: Fs, dir: string, me: Owner, probe: ProcessProbe = probeProcess): Steps<number | undefined> {
  const text = lockText(me);
  const mine = path.join(dir, `.slot-claim.${unique()}.tmp`);
  let fd: number;
  try {
    fd = fs.openSync(mine, 'wx', 0o644);
  } catch (err) {
    if (READ_ONLY.has(code(err) ?? '')) throw new ReadOnlyError(`${dir}: ${(err as Error).message}`);
    throw err;
  }
  try {
    try {
      fs.writeSync(fd, text);
    } finally {
      fs.closeSync(fd);
    }
    for (let n = 0; n < SLOT_COUNT; n++) {
      const name = `slot-${n}.lock`;
      const lock = path.join(dir, name);
      for (let attempt = 0; attempt < 4; attempt++) {
        yield `link ${name}`;
        if (yield* createWhole(fs, mine, lock, text)) {
          yield `read back ${name}`;
          const back = lockTextAt(fs, lock);
          if (back === text) return n;
          continue; // taken from under this window at once: look again
        }
        yield `read ${name}`;
        const verdict = judge(fs, lock, me, probe);
        if (verdict.kind === 'mine') return n; // this extension host's own (activated again)
        if (verdict.kind === 'held') break;
        if (verdict.kind === 'gone') continue;
        yield `rename ${name}`;
        const grave = path.join(dir, `.${name}.${unique()}.stale`);
        try {
          fs.renameSync(lock, grave);
        } catch (err) {
          if (code(err) === 'ENOENT') continue; // another window took it over first
          throw err;
        }
        const taken = lockTextAt(fs, grave);
        if (taken === verdict.text) {
          fs.rmSync(grave, { force: true });
          continue; // this window removed the stale lock: claim the slot
        }
        // Another window claimed the slot between this window's read and its rename: give its lock back.
        yield `restore ${name}`;
        try {
          yield* createWhole(fs, grave, lock, taken ?? '');
        } finally {
          fs.rmSync(grave, { force: true });
        }
        break;
      }
    }
    return undefined;
  } finally {
    fs.rmSync(mine, { force: true });
  }
}

/** {@link claimSteps} run straight through. */
export function claimSlot(fs: Fs, dir: string, me: Owner, probe: ProcessProbe = probeProcess): number | undefined {
  return runSteps(claimSteps(fs, dir, me, probe));
}

/**
 * Remove `slot-N.lock` only when it is `me`'s: renamed to a name of this window's own, checked, removed (put
 * back when it turned out to be another window's). Returns whether it was `me`'s.
 */
export function* releaseSteps(fs: Fs, dir: string, slot: number, me: Owner): Steps<boolean> {
  const name = `slot-${slot}.lock`;
  const lock = path.join(dir, name);
  const grave = path.join(dir, `.${name}.${unique()}.released`);
  yield `release ${name}`;
  try {
    fs.renameSync(lock, grave);
  } catch (err) {
    if (code(err) === 'ENOENT') return false;
    throw err;
  }
  const taken = lockTextAt(fs, grave) ?? '';
  const owner = parseLock(taken);
  try {
    if (owner !== undefined && sameOwner(owner, me)) return true;
    yield `restore ${name}`;
    yield* createWhole(fs, grave, lock, taken);
    return false;
  } finally {
    fs.rmSync(grave, { force: true });
  }
}

/** Write `text` to `file` atomically (a temporary file beside it, then a rename). */
export function writeAtomic(fs: Fs, file: string, text: string): void {
  const tmp = `${file}.${unique()}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** What the channel needs from the server connection. */
export interface InstructionsServer {
  execute<T>(command: string, arg?: object): Promise<T>;
}

export interface AgentMemoryResult {
  etag?: string;
  text?: string;
  files?: { path: string }[];
  readByAgent?: string[];
}

export interface ChannelPlaces {
  /** The extension's install folder (`context.extensionPath`). */
  extensionPath: string;
  /** This window's storage folder (`context.storageUri`, else `globalStorageUri`). */
  storagePath: string;
  pid: number;
}

export type ChannelState =
  | { kind: 'off'; reason: string }
  | { kind: 'on'; slot: number; file: string; linked: boolean; text: string; files: string[]; readByAgent: string[] };

export interface ChannelOptions {
  /** How a lock's process is looked at (tests give their own processes). Default: {@link probeProcess}. */
  probe?: ProcessProbe;
  /** How often the window checks that its slot's lock still names it, in ms (0: only when it refreshes). */
  checkEveryMs?: number;
}

/** How often a window checks that its slot's lock still names it. */
export const CHECK_EVERY_MS = 5000;

/** This window's file in its storage folder (named by the extension host's pid: empty windows share a folder). */
export const storageFileName = (pid: number): string => `chat-instructions-${pid}.md`;
const STORAGE_FILE = /^chat-instructions-(\d+)\.md$/;

/**
 * One window's chat instructions. `start()` claims a slot (or says why not); `refresh()` asks the server and
 * rewrites this window's file when the text changed; `dispose()` gives the slot back, when it is still this
 * window's.
 */
export class ChatInstructions {
  private current: ChannelState = { kind: 'off', reason: 'not started' };
  private held: number | undefined;
  private storageFile = '';
  private linked = false;
  private lastText: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private checker: ReturnType<typeof setInterval> | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Started with a slot, not yet disposed: a lost slot is claimed again. */
  private active = false;
  private readonly listeners = new Set<(state: ChannelState) => void>();
  private readonly probe: ProcessProbe;
  private readonly checkEveryMs: number;
  /** This window as its lock names it: the extension host's pid and start time. */
  readonly owner: Owner;
  private readonly dir: string;

  constructor(
    private readonly vs: typeof vscode,
    private readonly server: InstructionsServer,
    private readonly places: ChannelPlaces,
    private readonly log: (line: string) => void,
    private readonly fs: Fs = nodeFs,
    options: ChannelOptions = {},
  ) {
    this.probe = options.probe ?? probeProcess;
    this.checkEveryMs = options.checkEveryMs ?? CHECK_EVERY_MS;
    this.owner = ownerOf(places.pid, this.probe);
    this.dir = path.join(places.extensionPath, SLOT_DIR);
  }

  get state(): ChannelState {
    return this.current;
  }

  /** The slot this window holds, as far as it knows. */
  get slot(): number | undefined {
    return this.held;
  }

  /** `listener` runs when the channel goes on or off (the MCP server's `--memory-elsewhere` follows it). */
  onDidChangeState(listener: (state: ChannelState) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private setState(state: ChannelState): void {
    const flipped = state.kind !== this.current.kind;
    this.current = state;
    if (flipped) for (const listener of [...this.listeners]) listener(state);
  }

  /** Take a slot when this VS Code reads contributed chat instructions. Never throws. */
  async start(): Promise<boolean> {
    try {
      await this.vs.commands.executeCommand(LIST_PROMPT_FILES);
    } catch {
      return this.off(
        `this VS Code (${this.vs.version}) does not read chat instructions from extensions (contributes.chatInstructions)`,
      );
    }
    const on = runSteps(this.takeSlot());
    if (on && this.checkEveryMs > 0 && !this.checker) {
      this.checker = setInterval(() => {
        if (this.held !== undefined && !this.stillHeld()) this.schedule();
      }, this.checkEveryMs);
      this.checker.unref?.();
    }
    return on;
  }

  /**
   * The file work of {@link start}, step by step (see {@link Steps}): this window's file in its storage, a slot
   * claimed ({@link claimSteps}), the slot pointed at the file. Never throws.
   */
  *takeSlot(): Steps<boolean> {
    try {
      this.fs.mkdirSync(this.places.storagePath, { recursive: true });
      this.removeLeftovers();
      this.storageFile = path.join(this.places.storagePath, storageFileName(this.owner.pid));
      writeAtomic(this.fs, this.storageFile, PLACEHOLDER);
    } catch (err) {
      return this.off(`this window's storage folder cannot be written (${err instanceof Error ? err.message : String(err)})`);
    }
    let slot: number | undefined;
    try {
      slot = yield* claimSteps(this.fs, this.dir, this.owner, this.probe);
    } catch (err) {
      const why = err instanceof ReadOnlyError ? `the extension's folder cannot be written (${err.message})` : String(err);
      return this.off(why);
    }
    if (slot === undefined) return this.off(`all ${SLOT_COUNT} chat instruction slots are used by other VS Code windows`);
    // The slot's lock names this window now: no other window touches the slot file (no step here).
    const slotPath = path.join(this.places.extensionPath, slotFile(slot));
    try {
      try {
        this.fs.rmSync(slotPath, { force: true });
        this.fs.symlinkSync(this.storageFile, slotPath);
        this.linked = true;
      } catch {
        this.linked = false; // links refused (Windows without the right): the slot holds a copy
        writeAtomic(this.fs, slotPath, PLACEHOLDER);
      }
    } catch (err) {
      try {
        yield* releaseSteps(this.fs, this.dir, slot, this.owner);
      } catch {
        /* the lock names this window's process: the next window takes it over once that is gone */
      }
      return this.off(`slot ${slot} cannot be written (${err instanceof Error ? err.message : String(err)})`);
    }
    this.held = slot;
    this.active = true;
    this.log(`Chat instructions: slot ${slot} (${slotPath} ${this.linked ? '→' : 'copied from'} ${this.storageFile}).`);
    return true;
  }

  /** Files of windows whose extension host is gone (killed before it could remove its own). */
  private removeLeftovers(): void {
    for (const name of this.fs.readdirSync(this.places.storagePath)) {
      const pid = Number(STORAGE_FILE.exec(String(name))?.[1] ?? NaN);
      if (!Number.isSafeInteger(pid) || pid === this.owner.pid || this.probe(pid).alive) continue;
      this.fs.rmSync(path.join(this.places.storagePath, String(name)), { force: true });
    }
  }

  /**
   * Whether this window still holds its slot. One whose lock names another window now (taken in a race; see
   * docs/editors/vscode.md) clears its key, leaves that slot alone and claims another.
   */
  private stillHeld(): boolean {
    const slot = this.held;
    if (slot === undefined) return false;
    if (holdsSlot(this.fs, this.dir, slot, this.owner)) return true;
    this.held = undefined;
    this.lastText = undefined;
    void this.vs.commands.executeCommand('setContext', SLOT_CONTEXT_KEY, -1);
    this.log(`Chat instructions: slot ${slot} is another window's now; this window claims another.`);
    return false;
  }

  private off(reason: string): false {
    this.setState({ kind: 'off', reason });
    this.log(`Chat instructions not delivered: ${reason}; VS Code's chat gets the memory through the Context Companion tools only.`);
    return false;
  }

  /** Ask again soon (coalesces bursts of editor and memory events). */
  schedule(): void {
    if (!this.active) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, DEBOUNCE_MS);
  }

  /** Ask the server now and rewrite this window's file when the text changed. One at a time. */
  async refresh(): Promise<void> {
    if (!this.active) return;
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await this.update();
        } catch (err) {
          this.log(`Chat instructions: ${err instanceof Error ? err.message : String(err)}`);
        }
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** This window's slot: the one it holds, or another one claimed when it lost it. */
  private ensureSlot(): boolean {
    if (this.stillHeld() || runSteps(this.takeSlot())) return true;
    this.active = false;
    return false;
  }

  private async update(): Promise<void> {
    if (!this.ensureSlot()) return;
    const get = (section: string, key: string): unknown => this.vs.workspace.getConfiguration(section).get(key);
    const result = await this.server.execute<AgentMemoryResult>(ServerCommand.getAgentMemory, {
      agent: 'vscode',
      vscode: chatSettings(get),
    });
    // The answer took a while: check again right before writing.
    if (!this.active || !this.ensureSlot()) return;
    const slot = this.held;
    if (slot === undefined) return;
    const text = typeof result.text === 'string' ? result.text : '';
    const files = (result.files ?? []).map((f) => f.path);
    const readByAgent = result.readByAgent ?? [];
    if (text !== this.lastText) {
      const content = text === '' ? PLACEHOLDER : fileText(text);
      writeAtomic(this.fs, this.storageFile, content);
      if (!this.linked) writeAtomic(this.fs, path.join(this.places.extensionPath, slotFile(slot)), content);
      await this.vs.commands.executeCommand('setContext', SLOT_CONTEXT_KEY, text === '' ? -1 : slot);
      this.lastText = text;
      this.log(
        text === ''
          ? 'Chat instructions: nothing to add to what VS Code reads itself.'
          : `Chat instructions: ${files.length} file${files.length === 1 ? '' : 's'} (${files.join(', ')}); VS Code reads ${readByAgent.join(', ') || 'none'} itself.`,
      );
    }
    this.setState({ kind: 'on', slot, file: this.storageFile, linked: this.linked, text, files, readByAgent });
  }

  dispose(): void {
    runSteps(this.disposeSteps());
  }

  /**
   * {@link dispose}, step by step (see {@link Steps}): only while the slot's lock still names this window is
   * the slot given its placeholder back and the lock removed ({@link releaseSteps}); a window that lost its
   * slot touches nothing of it. This window's own storage file goes either way.
   */
  *disposeSteps(): Steps<void> {
    if (this.timer) clearTimeout(this.timer);
    if (this.checker) clearInterval(this.checker);
    this.timer = this.checker = undefined;
    this.active = false;
    const slot = this.held;
    if (slot === undefined) return;
    this.held = undefined;
    this.setState({ kind: 'off', reason: 'the window closed' });
    this.listeners.clear();
    void this.vs.commands.executeCommand('setContext', SLOT_CONTEXT_KEY, -1);
    try {
      yield `check slot-${slot}.lock`;
      if (holdsSlot(this.fs, this.dir, slot, this.owner)) {
        yield `reset ${slotFile(slot)}`;
        const slotPath = path.join(this.places.extensionPath, slotFile(slot));
        this.fs.rmSync(slotPath, { force: true });
        writeAtomic(this.fs, slotPath, PLACEHOLDER);
        yield* releaseSteps(this.fs, this.dir, slot, this.owner);
      }
    } catch {
      /* best effort: the lock names this process, and is taken over once it is gone */
    }
    try {
      this.fs.rmSync(this.storageFile, { force: true });
    } catch {
      /* best effort: removed as a leftover by the next window of this folder */
    }
  }
}
