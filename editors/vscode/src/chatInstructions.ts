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
 * - a window claims a free slot with a lock file beside it (`slot-N.lock`, the extension host's pid; a dead
 *   pid's lock is taken over), and points the slot file at its own file in the extension's storage
 *   (`storageUri`, else `globalStorageUri`), a symlink, or a copy where links are refused;
 * - the text is rewritten only when the server's answer changed, so the system message keeps its bytes (and a
 *   provider's prompt cache) while nothing changed; with nothing to deliver the key is cleared (no attachment).
 * Where VS Code has no such channel (no `_listExtensionPromptFiles`, VS Code before chat instructions), where the
 * install folder is read-only or every slot is taken, it logs one line and the memory still reaches the chat
 * through the language model tools. The `vscode` module and the file system are injected, for unit tests.
 */
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';
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
  'openSync' | 'writeSync' | 'closeSync' | 'readFileSync' | 'writeFileSync' | 'renameSync' | 'rmSync' | 'symlinkSync' | 'mkdirSync' | 'lstatSync'
>;

/** The install folder cannot be written: the channel is not available to this window. */
export class ReadOnlyError extends Error {}

const READ_ONLY = new Set(['EACCES', 'EPERM', 'EROFS']);
const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return code(err) === 'EPERM'; // alive, another user's
  }
}

/**
 * Claim the first free slot in `dir` for `pid`: `slot-N.lock` created exclusively, holding the pid. A lock
 * whose pid is dead (a window that was killed) is taken over. Returns the slot, or undefined when all are
 * taken; throws {@link ReadOnlyError} when the folder cannot be written.
 */
export function claimSlot(fs: Fs, dir: string, pid: number, alive: (pid: number) => boolean = pidAlive): number | undefined {
  for (let n = 0; n < SLOT_COUNT; n++) {
    const lock = path.join(dir, `slot-${n}.lock`);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = fs.openSync(lock, 'wx', 0o644);
        try {
          fs.writeSync(fd, String(pid));
        } finally {
          fs.closeSync(fd);
        }
        return n;
      } catch (err) {
        if (READ_ONLY.has(code(err) ?? '')) throw new ReadOnlyError(`${dir}: ${(err as Error).message}`);
        if (code(err) !== 'EEXIST') throw err;
      }
      let owner = NaN;
      try {
        owner = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10);
      } catch {
        /* removed meanwhile: try again */
      }
      if (owner === pid) return n; // this extension host's own (activated again)
      if (Number.isInteger(owner) && owner > 0 && alive(owner)) break; // taken
      fs.rmSync(lock, { force: true });
    }
  }
  return undefined;
}

/** Write `text` to `file` atomically (a temporary file beside it, then a rename). */
export function writeAtomic(fs: Fs, file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
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

/**
 * One window's chat instructions. `start()` claims a slot (or says why not); `refresh()` asks the server and
 * rewrites this window's file when the text changed; `dispose()` gives the slot back.
 */
export class ChatInstructions {
  private current: ChannelState = { kind: 'off', reason: 'not started' };
  private slot: number | undefined;
  private storageFile = '';
  private linked = false;
  private lastText: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private readonly listeners = new Set<(state: ChannelState) => void>();

  constructor(
    private readonly vs: typeof vscode,
    private readonly server: InstructionsServer,
    private readonly places: ChannelPlaces,
    private readonly log: (line: string) => void,
    private readonly fs: Fs = nodeFs,
  ) {}

  get state(): ChannelState {
    return this.current;
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
    const dir = path.join(this.places.extensionPath, SLOT_DIR);
    let slot: number | undefined;
    try {
      slot = claimSlot(this.fs, dir, this.places.pid);
    } catch (err) {
      const why = err instanceof ReadOnlyError ? `the extension's folder cannot be written (${err.message})` : String(err);
      return this.off(why);
    }
    if (slot === undefined) return this.off(`all ${SLOT_COUNT} chat instruction slots are used by other VS Code windows`);
    this.slot = slot;
    this.fs.mkdirSync(this.places.storagePath, { recursive: true });
    this.storageFile = path.join(this.places.storagePath, `chat-instructions-slot-${slot}.md`);
    writeAtomic(this.fs, this.storageFile, PLACEHOLDER);
    const slotPath = path.join(this.places.extensionPath, slotFile(slot));
    try {
      this.fs.rmSync(slotPath, { force: true });
      this.fs.symlinkSync(this.storageFile, slotPath);
      this.linked = true;
    } catch {
      this.linked = false; // links refused (Windows without the right): the slot holds a copy
      writeAtomic(this.fs, slotPath, PLACEHOLDER);
    }
    this.log(
      `Chat instructions: slot ${slot} (${slotPath} ${this.linked ? '→' : 'copied from'} ${this.storageFile}).`,
    );
    return true;
  }

  private off(reason: string): false {
    this.setState({ kind: 'off', reason });
    this.log(`Chat instructions not delivered: ${reason}; VS Code's chat gets the memory through the Context Companion tools only.`);
    return false;
  }

  /** Ask again soon (coalesces bursts of editor and memory events). */
  schedule(): void {
    if (this.slot === undefined) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, DEBOUNCE_MS);
  }

  /** Ask the server now and rewrite this window's file when the text changed. One at a time. */
  async refresh(): Promise<void> {
    if (this.slot === undefined) return;
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

  private async update(): Promise<void> {
    const slot = this.slot;
    if (slot === undefined) return;
    const get = (section: string, key: string): unknown => this.vs.workspace.getConfiguration(section).get(key);
    const result = await this.server.execute<AgentMemoryResult>(ServerCommand.getAgentMemory, {
      agent: 'vscode',
      vscode: chatSettings(get),
    });
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
    if (this.timer) clearTimeout(this.timer);
    const slot = this.slot;
    if (slot === undefined) return;
    this.slot = undefined;
    this.setState({ kind: 'off', reason: 'the window closed' });
    this.listeners.clear();
    void this.vs.commands.executeCommand('setContext', SLOT_CONTEXT_KEY, -1);
    const dir = path.join(this.places.extensionPath, SLOT_DIR);
    try {
      this.fs.rmSync(path.join(dir, `slot-${slot}.instructions.md`), { force: true });
      writeAtomic(this.fs, path.join(dir, `slot-${slot}.instructions.md`), PLACEHOLDER);
      this.fs.rmSync(this.storageFile, { force: true });
      this.fs.rmSync(path.join(dir, `slot-${slot}.lock`), { force: true });
    } catch {
      /* best effort: a dead pid's lock is taken over by the next window */
    }
  }
}
