/**
 * How the server process is found and started, and what to tell the user when it cannot be.
 * No `vscode` import: unit-tested in test/launch.test.ts.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The working folder of every process the extension starts (the import probe, the server, `setup`, the MCP
 * server VS Code starts from our definition): `<global storage>/launch`, a folder of the extension's own that
 * holds nothing. Never the workspace: `python -m …` and `python -c …` put the working folder first on
 * `sys.path`, so a repository's own `context_companion/` or `pydantic/` would run as the user, even in
 * Restricted Mode (`-P` is Python 3.11+). The workspace goes to each process as an argument or in
 * `initialize` instead. docs/reliability.md "A repository's Python files".
 */
export function launchFolder(globalStorage: string): string {
  const folder = path.join(globalStorage, 'launch');
  fs.mkdirSync(folder, { recursive: true, mode: 0o700 });
  return folder;
}

/** Arguments that run the server from a Python interpreter (the client appends `--stdio`). */
export const SERVER_MODULE_ARGS: readonly string[] = ['-m', 'context_companion', 'serve'];
/** The module the import probe checks for. */
export const SERVER_MODULE = 'context_companion';
/** The console script the package installs. */
export const CLI_PROGRAM = 'context-companion';

/** `bundled`: the private environment the extension installed its own wheel into (serverInstall.ts). */
export type LaunchSource = 'serverCommand' | 'interpreter' | 'pythonExtension' | 'path' | 'bundled';

export interface LaunchInputs {
  /** Raw value of `contextCompanion.serverCommand` (anything a settings.json may hold). */
  serverCommand: unknown;
  /** Raw value of `contextCompanion.interpreter`. */
  interpreter: unknown;
  /** The Python extension's command line for its active interpreter, when that extension is installed. */
  pythonExtension?: readonly string[];
  platform: string;
  home: string;
  workspaceFolder?: string;
  /**
   * Restricted Mode (the workspace is not trusted): VS Code already hides the workspace's values of
   * `serverCommand` and `interpreter` (package.json `restrictedConfigurations`); here nothing names a program
   * in the workspace either: no `${workspaceFolder}`, no relative program path, no Python extension's
   * interpreter (it may be the workspace's own `.venv`).
   */
  restricted?: boolean;
}

export interface LaunchPlan {
  command: string;
  args: string[];
  source: LaunchSource;
  /** The interpreter command line (without the module args), when the server runs from Python. */
  python?: string[];
}

/**
 * Another `context-companion` subcommand (`tail`) from the plan that starts the server: the same
 * interpreter (`<python> -m context_companion …`), the same program when
 * `contextCompanion.serverCommand` runs `… serve`, else `context-companion` on PATH.
 */
export function cliCommandLine(plan: LaunchPlan, tail: string[]): { command: string; args: string[] } {
  if (plan.python && plan.python.length > 0) {
    const [command, ...prefix] = plan.python;
    return { command, args: [...prefix, '-m', SERVER_MODULE, ...tail] };
  }
  const parts = [plan.command, ...plan.args];
  const serve = parts.indexOf('serve');
  if (serve > 0) {
    const [command, ...rest] = parts.slice(0, serve);
    return { command, args: [...rest, ...tail] };
  }
  return { command: CLI_PROGRAM, args: tail };
}

/** A launch setting holds something that cannot be run; `setting` names it for the message. */
export class LaunchSettingError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'LaunchSettingError';
  }
}

interface ExpandContext {
  home: string;
  workspaceFolder?: string;
  restricted?: boolean;
}

/** Expand `${workspaceFolder}`, `${userHome}` and a leading `~` (as VS Code's own settings do). */
export function expandPath(value: string, ctx: ExpandContext, setting: string): string {
  let out = value;
  if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) {
    out = ctx.home + out.slice(1);
  }
  out = out.replace(/\$\{userHome\}/g, ctx.home);
  if (out.includes('${workspaceFolder}')) {
    if (ctx.restricted) {
      throw new LaunchSettingError(
        setting,
        `${setting} uses \${workspaceFolder}, which names a program in the workspace: not run in Restricted Mode (trust the folder to run it).`,
      );
    }
    if (!ctx.workspaceFolder) {
      throw new LaunchSettingError(setting, `${setting} uses \${workspaceFolder}, but no folder is open.`);
    }
    out = out.replace(/\$\{workspaceFolder\}/g, ctx.workspaceFolder);
  }
  return out;
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

/**
 * Pick the server command line. Order: `serverCommand` → `interpreter` → the Python extension's
 * active interpreter → `python3` (`python` on Windows) on PATH.
 * Throws {@link LaunchSettingError} when a setting is set to something unusable.
 */
export function resolveLaunch(inputs: LaunchInputs): LaunchPlan {
  const ctx: ExpandContext = { home: inputs.home, workspaceFolder: inputs.workspaceFolder, restricted: inputs.restricted };
  const raw = inputs.serverCommand;
  if (raw !== undefined && raw !== null && !(Array.isArray(raw) && raw.length === 0)) {
    const setting = 'contextCompanion.serverCommand';
    if (!Array.isArray(raw)) {
      throw new LaunchSettingError(
        setting,
        `${setting} must be a list of strings such as ["context-companion", "serve"], not ${describeType(raw)}.`,
      );
    }
    raw.forEach((item, i) => {
      if (typeof item !== 'string') {
        throw new LaunchSettingError(setting, `${setting}: item ${i + 1} must be a string, not ${describeType(item)}.`);
      }
    });
    const parts = raw as string[];
    if (parts[0].trim() === '') {
      throw new LaunchSettingError(setting, `${setting}: the first item (the program to run) is empty.`);
    }
    const [command, ...args] = parts.map((p) => expandPath(p, ctx, setting));
    return { command: programPath(command, ctx, setting), args, source: 'serverCommand' };
  }

  const interp = inputs.interpreter;
  if (interp !== undefined && interp !== null && !(typeof interp === 'string' && interp.trim() === '')) {
    const setting = 'contextCompanion.interpreter';
    if (typeof interp !== 'string') {
      throw new LaunchSettingError(setting, `${setting} must be the path of a Python interpreter, not ${describeType(interp)}.`);
    }
    return fromPython([programPath(expandPath(interp.trim(), ctx, setting), ctx, setting)], 'interpreter');
  }

  const fromExtension = inputs.restricted ? [] : (inputs.pythonExtension ?? []).filter((p) => typeof p === 'string' && p !== '');
  if (fromExtension.length > 0) {
    return fromPython(fromExtension, 'pythonExtension');
  }
  return fromPython([inputs.platform === 'win32' ? 'python' : 'python3'], 'path');
}

/**
 * A relative program path with a folder in it (`.venv/bin/python`) meant the workspace's while the server ran
 * there: it still does, made absolute, since the process now starts elsewhere ({@link launchFolder}). Not in
 * Restricted Mode: a program of the workspace is workspace code. A bare name is looked up on PATH as before.
 */
function programPath(program: string, ctx: ExpandContext, setting: string): string {
  if (path.isAbsolute(program) || !/[\\/]/.test(program)) return program;
  if (ctx.restricted) {
    throw new LaunchSettingError(
      setting,
      `${setting}: ${program} is a program in the workspace: not run in Restricted Mode (trust the folder, or give an absolute path).`,
    );
  }
  if (!ctx.workspaceFolder) {
    throw new LaunchSettingError(setting, `${setting}: ${program} is relative to the workspace folder, but no folder is open.`);
  }
  return path.resolve(ctx.workspaceFolder, program);
}

/**
 * How the server process starts (the client appends `--stdio`): from {@link launchFolder}, never the workspace,
 * which the server learns from `initialize` (workspaceFolders/rootUri).
 */
export function serverSpawn(plan: LaunchPlan, folder: string): { command: string; args: string[]; cwd: string } {
  return { command: plan.command, args: [...plan.args, '--stdio'], cwd: folder };
}

/** The plan that runs the server from the private environment's Python. */
export function bundledPlan(python: string): LaunchPlan {
  return fromPython([python], 'bundled');
}

function fromPython(python: string[], source: LaunchSource): LaunchPlan {
  const [command, ...prefix] = python;
  return { command, args: [...prefix, ...SERVER_MODULE_ARGS], source, python };
}

/** Quote one argument for the user's shell, only when it needs it. */
export function shellQuote(arg: string, platform: string): string {
  if (arg !== '' && /^[A-Za-z0-9_@%+=:,./\\-]+$/.test(arg)) {
    return arg;
  }
  if (platform === 'win32') {
    return `"${arg.replace(/"/g, '\\"')}"`;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The exact command that installs the server into the interpreter the extension runs: the wheel the
 * extension carries (the package is not on any public index under our name, so never a bare name);
 * a development build without a wheel can only point at a clone.
 */
export function pipInstallCommand(python: readonly string[], platform: string, wheelPath: string | undefined): string {
  const target = wheelPath ? [wheelPath] : ['-e', '<clone of context-companion>'];
  return [...python, '-m', 'pip', 'install', ...target].map((a) => (a.startsWith('<') ? a : shellQuote(a, platform))).join(' ');
}

/** How long the import probe may take before it counts as hung. */
export const PROBE_TIMEOUT_MS = 30_000;

/** The arguments of the probe that checks the interpreter can import the server package. */
export function probeArgs(python: readonly string[]): { command: string; args: string[] } {
  const [command, ...prefix] = python;
  return { command, args: [...prefix, '-c', `import ${SERVER_MODULE}`] };
}

export interface ProbeResult {
  /** Node's spawn error code (`ENOENT`, `EACCES`, ...) when the process could not start. */
  spawnError?: string;
  exitCode: number | null;
  /** True when the probe was killed for taking too long. */
  timedOut?: boolean;
  stderr: string;
}

/**
 * Run the import probe for `python` (a command line such as `['python3']`) in `cwd` ({@link launchFolder}:
 * `-c` imports from the working folder first). Never rejects.
 */
export function runProbe(python: readonly string[], cwd: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const { command, args } = probeArgs(python);
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, windowsHide: true, cwd }, (error, _stdout, stderr) => {
      const text = String(stderr ?? '');
      if (!error) return resolve({ exitCode: 0, stderr: text });
      const e = error as NodeJS.ErrnoException & { killed?: boolean; code?: string | number };
      if (typeof e.code === 'string') return resolve({ spawnError: e.code, exitCode: null, stderr: text });
      resolve({ exitCode: typeof e.code === 'number' ? e.code : null, timedOut: e.killed === true, stderr: text });
    });
  });
}

export type ProbeOutcome =
  | { kind: 'ok' }
  | { kind: 'noInterpreter'; message: string }
  | { kind: 'missingPackage'; message: string; installCommand: string }
  | { kind: 'broken'; message: string };

function lastLine(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.length > 0 ? lines[lines.length - 1] : '';
}

/** Turn the import probe's result into what the user is told. */
export function classifyProbe(result: ProbeResult, plan: LaunchPlan, platform: string, wheelPath?: string): ProbeOutcome {
  const python = plan.python ?? [plan.command];
  const shown = python.map((a) => shellQuote(a, platform)).join(' ');
  const where = describeSource(plan.source);
  if (result.spawnError) {
    const why = result.spawnError === 'ENOENT' ? 'was not found' : `could not be started (${result.spawnError})`;
    return {
      kind: 'noInterpreter',
      message:
        `The Python interpreter ${shown} (${where}) ${why}. ` +
        'Set "contextCompanion.interpreter" to a Python that has the context-companion package installed.',
    };
  }
  if (result.timedOut) {
    return {
      kind: 'broken',
      message: `${shown} did not finish "import ${SERVER_MODULE}" in time.`,
    };
  }
  if (result.exitCode === 0) {
    return { kind: 'ok' };
  }
  const err = result.stderr;
  if (new RegExp(`No module named '?${SERVER_MODULE}'?(\\s|$)`).test(err)) {
    const installCommand = pipInstallCommand(python, platform, wheelPath);
    return {
      kind: 'missingPackage',
      message:
        `The server package is not installed for ${shown} (${where}). ` +
        `Install it with: ${installCommand}`,
      installCommand,
    };
  }
  const detail = lastLine(err) || `exit status ${result.exitCode}`;
  return {
    kind: 'broken',
    message: `${shown} cannot import ${SERVER_MODULE}: ${detail}`,
  };
}

export function describeSource(source: LaunchSource): string {
  switch (source) {
    case 'serverCommand':
      return 'from contextCompanion.serverCommand';
    case 'interpreter':
      return 'from contextCompanion.interpreter';
    case 'pythonExtension':
      return "the Python extension's active interpreter";
    case 'path':
      return 'looked up on PATH';
    case 'bundled':
      return "the extension's own environment";
  }
}
