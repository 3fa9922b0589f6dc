/**
 * The server the extension carries (`server/context_companion-<version>-py3-none-any.whl` in the
 * `.vsix`) and the private environment it installs it into when no server is found:
 * `<global storage>/server/env-<version>-<wheel hash>/`, a venv made with the Python the extension
 * found (or `uv` when it is on PATH), its dependencies from the user's own package index settings.
 *
 * No `vscode` import: unit-tested in test/serverInstall.test.ts with injected process runners and
 * against a real Python.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { shellQuote } from './launch';

// ------------------------------------------------------------------------------------ processes

export interface RunOptions {
  timeoutMs: number;
  /**
   * The working folder: required, and never the workspace (the install root under the extension's global
   * storage): `python -c`/`-m` import from it first, and the extension host's own working folder may be the
   * folder `code .` was run in.
   */
  cwd: string;
  /** Each line the process writes (stdout and stderr), as it comes. */
  onLine?: (line: string) => void;
}

export interface RunResult {
  /** Node's spawn error code (`ENOENT`, `EACCES`, ...) when the process could not start. */
  spawnError?: string;
  exitCode: number | null;
  timedOut?: boolean;
  stdout: string;
  stderr: string;
}

/** Runs a program; never rejects. Injected so the decisions can be tested without processes. */
export type Runner = (command: string, args: readonly string[], options: RunOptions) => Promise<RunResult>;

/** Output kept per stream: the end of it (pip's reason is in its last lines). */
const KEEP_OUTPUT = 256 * 1024;

export const runProcess: Runner = (command, args, options) =>
  new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    let timedOut = false;
    const done = (result: RunResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(command, [...args], {
        cwd: options.cwd,
        env: process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (err) {
      resolve({ spawnError: (err as NodeJS.ErrnoException).code ?? 'EINVAL', exitCode: null, stdout: '', stderr: String(err) });
      return;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill();
    }, options.timeoutMs);
    const lines = (chunk: string, partial: { text: string }): void => {
      if (!options.onLine) return;
      partial.text += chunk;
      const parts = partial.text.split(/\r?\n/);
      partial.text = parts.pop() ?? '';
      for (const line of parts) if (line.trim() !== '') options.onLine(line);
    };
    const outPartial = { text: '' };
    const errPartial = { text: '' };
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      stdout = (stdout + chunk).slice(-KEEP_OUTPUT);
      lines(chunk, outPartial);
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-KEEP_OUTPUT);
      lines(chunk, errPartial);
    });
    child.on('error', (err: NodeJS.ErrnoException) => done({ spawnError: err.code ?? 'EINVAL', exitCode: null, stdout, stderr }));
    child.on('close', (code) => {
      for (const p of [outPartial, errPartial]) if (p.text.trim() !== '') options.onLine?.(p.text);
      done({ exitCode: code, timedOut, stdout, stderr });
    });
  });

// ------------------------------------------------------------------------------------ the bundled wheel

/** Where the `.vsix` carries the wheel, relative to the extension's folder. */
export const WHEEL_DIR = 'server';
const WHEEL_NAME = /^context_companion-([0-9][A-Za-z0-9.+!]*)-py3-none-any\.whl$/;

export interface BundledWheel {
  path: string;
  version: string;
  /** Hex SHA-256 of the file: a rebuilt wheel of the same version is a different environment. */
  sha256: string;
}

/** The version in a wheel's file name, or undefined when it is not our wheel. */
export function wheelVersion(fileName: string): string | undefined {
  return WHEEL_NAME.exec(fileName)?.[1];
}

/** Of the wheels in `files`, the one of the extension's version, else the newest. */
export function pickWheel(files: readonly string[], extensionVersion: string): { file: string; version: string } | undefined {
  const wheels = files.flatMap((file) => {
    const version = wheelVersion(file);
    return version ? [{ file, version }] : [];
  });
  const same = wheels.find((w) => w.version === extensionVersion);
  if (same) return same;
  return wheels.sort((a, b) => compareVersions(b.version, a.version))[0];
}

/** The wheel in `<extensionPath>/server`, or undefined (a development build that carries none). */
export function findBundledWheel(extensionPath: string, extensionVersion: string): BundledWheel | undefined {
  const dir = path.join(extensionPath, WHEEL_DIR);
  let files: string[];
  try {
    files = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const picked = pickWheel(files, extensionVersion);
  if (!picked) return undefined;
  const file = path.join(dir, picked.file);
  const sha256 = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  return { path: file, version: picked.version, sha256 };
}

// ------------------------------------------------------------------------------------ versions

/**
 * Compare two PEP 440 versions of the kinds we publish (`1.2.3`, `1.2.3rc1`, `1.2.3.dev4`,
 * `1.2.3.post1`, a `+local` part is ignored): negative when a < b, 0 when equal, positive when a > b.
 */
export function compareVersions(a: string, b: string): number {
  const pa = versionKey(a);
  const pb = versionKey(b);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? 0;
    const y = pb[i] ?? 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** Release numbers padded to 6, then a phase (dev < a < b < rc < final) and its number, post, dev. */
function versionKey(version: string): number[] {
  const v = version.toLowerCase().replace(/\+.*$/, '').replace(/^v/, '');
  const m =
    /^(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|rc|c|pre|preview)[-_.]?(\d*))?(?:[-_.]?(post|rev|r)[-_.]?(\d*))?(?:[-_.]?(dev)[-_.]?(\d*))?$/.exec(
      v,
    );
  if (!m) return [-1];
  const release = m[1].split('.').map(Number);
  while (release.length < 6) release.push(0);
  const phases: Record<string, number> = { a: 1, alpha: 1, b: 2, beta: 2, rc: 3, c: 3, pre: 3, preview: 3 };
  const devOfFinal = m[6] !== undefined && m[2] === undefined && m[4] === undefined; // 1.0.dev1 comes before 1.0a1
  const phase = m[2] ? phases[m[2]] : devOfFinal ? 0 : 4;
  const phaseNumber = m[2] ? Number(m[3] || 0) : 0;
  const post = m[4] ? Number(m[5] || 0) + 1 : 0;
  const dev = m[6] ? Number(m[7] || 0) : Number.MAX_SAFE_INTEGER;
  return [...release, phase, phaseNumber, post, dev];
}

// ------------------------------------------------------------------------------------ Python

export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** What the extension needs to know of a Python before it makes a venv with it. */
export interface PythonInfo {
  /** The command line it was found as (`['python3']`, the Python extension's, ...). */
  command: string[];
  /** `sys.executable`: the real interpreter behind a shim (pyenv, asdf) or a `conda run`. */
  executable: string;
  version: [number, number, number];
  /** A Python whose own site-packages pip refuses to write (PEP 668, e.g. Debian's /usr/bin/python3). */
  externallyManaged: boolean;
  /** Runs inside a virtual environment. */
  inVenv: boolean;
}

export const INSPECT_SCRIPT = [
  'import json, os, sys, sysconfig',
  'venv = sys.prefix != sys.base_prefix',
  'marker = os.path.join(sysconfig.get_path("stdlib") or "", "EXTERNALLY-MANAGED")',
  'print(json.dumps({"executable": sys.executable, "version": list(sys.version_info[:3]), "venv": venv,',
  '  "externallyManaged": (not venv) and os.path.isfile(marker)}))',
].join('\n');

export type Inspected = { ok: true; info: PythonInfo } | { ok: false; why: string };

function describePython(command: readonly string[], platform: string): string {
  return command.map((a) => shellQuote(a, platform)).join(' ');
}

/** Ask `command` (a Python command line) what it is. */
export async function inspectPython(run: Runner, command: readonly string[], platform: string, cwd: string): Promise<Inspected> {
  const [program, ...prefix] = command;
  const result = await run(program, [...prefix, '-c', INSPECT_SCRIPT], { timeoutMs: 30_000, cwd });
  if (result.spawnError === 'ENOENT') return { ok: false, why: 'not found' };
  if (result.spawnError) return { ok: false, why: `cannot be started (${result.spawnError})` };
  if (result.timedOut) return { ok: false, why: 'did not answer in time' };
  const line = result.stdout.trim().split(/\r?\n/).pop() ?? '';
  try {
    const data = JSON.parse(line) as { executable?: unknown; version?: unknown; venv?: unknown; externallyManaged?: unknown };
    const version = Array.isArray(data.version) ? data.version.map(Number) : [];
    if (result.exitCode === 0 && typeof data.executable === 'string' && version.length === 3 && version.every(Number.isFinite)) {
      return {
        ok: true,
        info: {
          command: [...command],
          executable: data.executable || program,
          version: version as [number, number, number],
          externallyManaged: data.externallyManaged === true,
          inVenv: data.venv === true,
        },
      };
    }
  } catch {
    /* not Python 3, or not a Python at all */
  }
  const last = lastLine(result.stderr) || `exit status ${result.exitCode}`;
  return { ok: false, why: `is not a usable Python (${last}) as ${describePython(command, platform)}` };
}

export function isRecentEnough(version: readonly number[]): boolean {
  return version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1]);
}

/**
 * The Pythons to make the private environment with, in order: the one the extension found (the
 * Python extension's interpreter, or `python3` on PATH), then `python3`, then versioned names on
 * PATH (a system whose `python3` is too old often has a newer `python3.12` beside it).
 */
export function pythonCandidates(found: readonly string[] | undefined, platform: string): string[][] {
  const names: string[][] =
    platform === 'win32'
      ? [['python'], ['py', '-3']]
      : [['python3'], ['python3.14'], ['python3.13'], ['python3.12'], ['python3.11'], ['python3.10']];
  const out: string[][] = [];
  for (const c of [...(found && found.length > 0 ? [[...found]] : []), ...names]) {
    if (!out.some((o) => o.join('\0') === c.join('\0'))) out.push(c);
  }
  return out;
}

export interface BasePython {
  python?: PythonInfo;
  /** What each candidate was, for the message when none will do: `python3 3.8.10`, `python3.12 not found`. */
  tried: string[];
}

/** The first candidate that is Python 3.10 or newer. */
export async function findBasePython(run: Runner, candidates: readonly string[][], platform: string, cwd: string): Promise<BasePython> {
  const tried: string[] = [];
  for (const command of candidates) {
    const shown = describePython(command, platform);
    const got = await inspectPython(run, command, platform, cwd);
    if (!got.ok) {
      if (got.why === 'not found') tried.push(`${shown} not found`);
      else tried.push(`${shown} ${got.why}`);
      continue;
    }
    if (isRecentEnough(got.info.version)) return { python: got.info, tried };
    tried.push(`${shown} is ${got.info.version.join('.')}`);
  }
  return { tried };
}

/** `uv` on PATH (its own name when it answers `uv --version`), else undefined. */
export async function findUv(run: Runner, cwd: string): Promise<string | undefined> {
  const result = await run('uv', ['--version'], { timeoutMs: 15_000, cwd });
  return result.exitCode === 0 ? 'uv' : undefined;
}

/** Before the Install offer: whether an install could start here (a Python 3.10+ among the candidates, or uv);
 *  when not, the one message naming what is missing and how to get it, and that command. Every check runs in
 *  `cwd` (launch.ts launchFolder), never the workspace. */
export async function installPrerequisite(
  run: Runner,
  foundPython: readonly string[] | undefined,
  platform: string,
  cwd: string,
): Promise<{ ok: true } | { ok: false; message: string; command: string }> {
  const base = await findBasePython(run, pythonCandidates(foundPython, platform), platform, cwd);
  if (base.python || (await findUv(run, cwd))) return { ok: true };
  return { ok: false, ...noPythonMessage(base.tried, platform) };
}

// ------------------------------------------------------------------------------------ the private environment

/** Written into an environment last, so a folder without it is an install that did not finish. */
export const MARKER_FILE = 'context-companion-install.json';
const ENV_PREFIX = 'env-';
const LOCK_DIR = 'install.lock';

export interface InstallMarker {
  version: string;
  sha256: string;
  /** The interpreter the venv was made from. */
  basePython: string;
  installer: 'pip' | 'uv';
  installedAt: string;
}

/** `env-<version>-<first 12 hex of the wheel's hash>`. */
export function envDirName(wheel: Pick<BundledWheel, 'version' | 'sha256'>): string {
  return `${ENV_PREFIX}${wheel.version}-${wheel.sha256.slice(0, 12)}`;
}

export function envPython(envDir: string, platform: string): string {
  return platform === 'win32' ? path.join(envDir, 'Scripts', 'python.exe') : path.join(envDir, 'bin', 'python');
}

function readMarker(envDir: string): InstallMarker | undefined {
  try {
    const data = JSON.parse(fs.readFileSync(path.join(envDir, MARKER_FILE), 'utf8')) as InstallMarker;
    return typeof data.version === 'string' && typeof data.sha256 === 'string' ? data : undefined;
  } catch {
    return undefined;
  }
}

/** The Python of the finished environment for this wheel, or undefined when there is none. */
export function readyEnv(root: string, wheel: BundledWheel, platform: string): string | undefined {
  const dir = path.join(root, envDirName(wheel));
  const marker = readMarker(dir);
  if (!marker || marker.sha256 !== wheel.sha256 || marker.version !== wheel.version) return undefined;
  const python = envPython(dir, platform);
  // existsSync follows the venv's link to its base interpreter: false when that Python was removed.
  return fs.existsSync(python) ? python : undefined;
}

/** Versions of the other finished environments under `root` (a previous extension's). */
export function otherEnvs(root: string, wheel: BundledWheel): { dir: string; version: string }[] {
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch {
    return [];
  }
  const mine = envDirName(wheel);
  return names
    .filter((n) => n.startsWith(ENV_PREFIX) && n !== mine)
    .flatMap((n) => {
      const marker = readMarker(path.join(root, n));
      return marker ? [{ dir: path.join(root, n), version: marker.version }] : [];
    });
}

// ------------------------------------------------------------------------------------ what to do

export type ServerDecision =
  /** Start the private environment's server. */
  | { kind: 'usePrivate'; python: string }
  /** Install (or upgrade) now, without asking: the user said so, or this replaces an environment they already accepted. */
  | { kind: 'install'; reason: 'autoInstall' | 'approved' | 'upgrade' }
  /** Ask first (one "Install" button). */
  | { kind: 'ask' }
  /** The extension carries no wheel (a development build): only the message is left. */
  | { kind: 'noWheel' };

/**
 * What to do when the interpreter the extension found (not one the user set: that is never touched)
 * cannot import the server.
 */
export function decideServer(inputs: {
  wheel: BundledWheel | undefined;
  ready: string | undefined;
  others: readonly { version: string }[];
  autoInstall: boolean;
  approved: boolean;
}): ServerDecision {
  if (!inputs.wheel) return { kind: 'noWheel' };
  if (inputs.ready) return { kind: 'usePrivate', python: inputs.ready };
  if (inputs.approved) return { kind: 'install', reason: 'approved' };
  if (inputs.autoInstall) return { kind: 'install', reason: 'autoInstall' };
  if (inputs.others.length > 0) return { kind: 'install', reason: 'upgrade' };
  return { kind: 'ask' };
}

// ------------------------------------------------------------------------------------ installing

export interface InstallDeps {
  run: Runner;
  log: (line: string) => void;
  /** A short progress line for the notification. */
  report: (message: string) => void;
}

export interface InstallOptions {
  /** `<global storage>/server` */
  root: string;
  wheel: BundledWheel;
  /** The interpreter command line the extension found (tried first). */
  foundPython: readonly string[] | undefined;
  platform: string;
  /** How long to wait for another window's install before giving up. */
  lockTimeoutMs?: number;
}

export type InstallProblem = 'python' | 'venv' | 'index' | 'install' | 'busy';

export type InstallResult =
  | { kind: 'installed'; python: string; removed: string[]; installer: 'pip' | 'uv' | 'other window' }
  | {
      kind: 'failed';
      problem: InstallProblem;
      /** One line: what is missing and what to do. */
      message: string;
      /** The exact command that works, when there is one to copy. */
      command?: string;
    };

const VENV_TIMEOUT_MS = 5 * 60_000;
const PIP_TIMEOUT_MS = 15 * 60_000;

/**
 * Install the bundled wheel into `<root>/env-<version>-<hash>`, under a lock so two windows never
 * write one environment; a finished environment of an older version (or an older build) is removed.
 */
export async function installBundledServer(deps: InstallDeps, options: InstallOptions): Promise<InstallResult> {
  try {
    return await installUnderLock(deps, options);
  } catch (err) {
    // the storage folder cannot be written, a marker cannot be saved, ...: one line, never a stack
    const why = err instanceof Error ? err.message : String(err);
    deps.log(`Installing the server failed: ${why}`);
    return { kind: 'failed', problem: 'install', message: `Installing the server failed: ${why}` };
  }
}

async function installUnderLock(deps: InstallDeps, options: InstallOptions): Promise<InstallResult> {
  const { root, wheel, platform } = options;
  fs.mkdirSync(root, { recursive: true });
  let lock: Lock;
  try {
    lock = await acquireLock(path.join(root, LOCK_DIR), {
      timeoutMs: options.lockTimeoutMs ?? PIP_TIMEOUT_MS + VENV_TIMEOUT_MS,
      onWait: () => {
        deps.log('Another window is installing the server: waiting for it.');
        deps.report('waiting for another window that installs it');
      },
    });
  } catch (err) {
    return { kind: 'failed', problem: 'busy', message: err instanceof Error ? err.message : String(err) };
  }
  try {
    const already = readyEnv(root, wheel, platform);
    if (already) return { kind: 'installed', python: already, removed: [], installer: 'other window' };
    const result = await installLocked(deps, options);
    if (result.kind === 'installed') result.removed = removeOlder(root, wheel, deps.log);
    return result;
  } finally {
    lock.release();
  }
}

async function installLocked(deps: InstallDeps, options: InstallOptions): Promise<InstallResult> {
  const { root, wheel, platform } = options;
  const envDir = path.join(root, envDirName(wheel));
  const python = envPython(envDir, platform);
  fs.rmSync(envDir, { recursive: true, force: true }); // an install that did not finish (no marker)

  deps.report('looking for Python');
  const uv = await findUv(deps.run, root);
  const base = await findBasePython(deps.run, pythonCandidates(options.foundPython, platform), platform, root);
  if (!base.python && !uv) {
    return { kind: 'failed', problem: 'python', ...noPythonMessage(base.tried, platform) };
  }
  const installer: 'pip' | 'uv' = uv ? 'uv' : 'pip';
  const basePython = base.python;
  deps.log(
    `Installing the bundled server ${wheel.version} into ${envDir} with ${
      basePython ? `Python ${basePython.version.join('.')} (${basePython.executable})` : 'a Python uv finds'
    }${uv ? ' and uv' : ''}.`,
  );

  // 1. the environment
  deps.report('creating its environment');
  const venv = uv
    ? { command: uv, args: ['venv', '--python', basePython?.executable ?? `>=${MIN_PYTHON.join('.')}`, envDir] }
    : { command: basePython!.executable, args: ['-m', 'venv', envDir] };
  const made = await runLogged(deps, venv.command, venv.args, VENV_TIMEOUT_MS, root);
  if (made.exitCode !== 0) {
    fs.rmSync(envDir, { recursive: true, force: true });
    return { kind: 'failed', problem: base.python ? 'venv' : 'python', ...venvFailure(made, basePython, base.tried, wheel, platform) };
  }

  // 2. the wheel, and its dependencies from the user's index (pip's and uv's own settings: nothing here overrides them)
  deps.report('installing it and its dependencies from your package index');
  const install = uv
    ? { command: uv, args: ['pip', 'install', '--python', python, wheel.path] }
    : { command: python, args: ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wheel.path] };
  const installed = await runLogged(deps, install.command, install.args, PIP_TIMEOUT_MS, root, (line) => {
    const m = /^\s*(Collecting|Downloading|Installing collected packages|Resolved|Prepared|Installed)\b.*$/.exec(line);
    if (m) deps.report(line.trim().slice(0, 80));
  });
  if (installed.exitCode !== 0) {
    fs.rmSync(envDir, { recursive: true, force: true });
    return { kind: 'failed', ...installFailure(installed, basePython, installer, wheel, platform) };
  }

  // 3. it imports
  const check = await runLogged(
    deps,
    python,
    ['-c', 'import sys, context_companion; from importlib.metadata import version; sys.stdout.write(version("context-companion"))'],
    60_000,
    root,
  );
  if (check.exitCode !== 0) {
    fs.rmSync(envDir, { recursive: true, force: true });
    return {
      kind: 'failed',
      problem: 'install',
      message: `The server was installed but does not import: ${lastLine(check.stderr) || `exit status ${check.exitCode}`}.`,
    };
  }
  const marker: InstallMarker = {
    version: wheel.version,
    sha256: wheel.sha256,
    basePython: basePython?.executable ?? 'uv',
    installer,
    installedAt: new Date().toISOString(),
  };
  fs.writeFileSync(path.join(envDir, MARKER_FILE), `${JSON.stringify(marker, null, 2)}\n`);
  deps.log(`Installed the server ${check.stdout.trim() || wheel.version} in ${envDir}.`);
  return { kind: 'installed', python, removed: [], installer };
}

async function runLogged(
  deps: InstallDeps,
  command: string,
  args: readonly string[],
  timeoutMs: number,
  cwd: string,
  onLine?: (line: string) => void,
): Promise<RunResult> {
  deps.log(`$ ${[command, ...args].map((a) => shellQuote(a, process.platform)).join(' ')}`);
  const result = await deps.run(command, args, {
    timeoutMs,
    cwd,
    onLine: (line) => {
      deps.log(`  ${line}`);
      onLine?.(line);
    },
  });
  if (result.spawnError) deps.log(`  could not start ${command}: ${result.spawnError}`);
  else if (result.timedOut) deps.log(`  stopped after ${Math.round(timeoutMs / 1000)} s`);
  else if (result.exitCode !== 0) deps.log(`  exit status ${result.exitCode}`);
  return result;
}

/** Remove the finished environments of older versions (and older builds of this version). */
function removeOlder(root: string, wheel: BundledWheel, log: (line: string) => void): string[] {
  const removed: string[] = [];
  for (const other of otherEnvs(root, wheel)) {
    if (compareVersions(other.version, wheel.version) > 0) continue; // a newer extension's: not ours to remove
    try {
      fs.rmSync(other.dir, { recursive: true, force: true });
      removed.push(other.version);
      log(`Removed the previous server environment ${other.dir} (${other.version}).`);
    } catch (err) {
      log(`Could not remove ${other.dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return removed;
}

// ------------------------------------------------------------------------------------ what the user is told

function lastLine(text: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.length > 0 ? lines[lines.length - 1] : '';
}

/** The line of pip's or uv's output that says why (`ERROR: ...`, `error: ...`, `× ...`), else the last line. */
export function failureReason(result: RunResult): string {
  const lines = `${result.stderr}\n${result.stdout}`
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const reason =
    lines.find((l) => /^ERROR:/.test(l)) ??
    lines.find((l) => /^(error:|×|╰─▶)/.test(l)) ??
    (result.timedOut ? 'it did not finish in time' : undefined) ??
    (result.spawnError ? `could not be started (${result.spawnError})` : undefined) ??
    lastLine(result.stderr) ??
    '';
  const text = reason.replace(/^ERROR:\s*/, '').replace(/^error:\s*/, '').replace(/^[×╰─▶\s]+/, '');
  return (text || `exit status ${result.exitCode}`).slice(0, 300);
}

const INDEX_TROUBLE = [
  /No matching distribution found/i,
  /Could not find a version that satisfies the requirement/i,
  /Failed to establish a new connection/i,
  /Max retries exceeded/i,
  /Temporary failure in name resolution/i,
  /Name or service not known/i,
  /nodename nor servname/i,
  /Network is unreachable/i,
  /Connection refused/i,
  /Read timed out|ConnectTimeout|connection timed out/i,
  /SSLError|CERTIFICATE_VERIFY_FAILED/i,
  /ProxyError/i,
  /Failed to fetch/i,
  /error sending request/i,
  /dns error/i,
  /was not found in the package registry/i,
  /not found in the provided package locations/i,
  /Could not connect/i,
];

/** Whether pip's (or uv's) failure is the package index: unreachable, or without what the server needs. */
export function isIndexTrouble(result: RunResult): boolean {
  const text = `${result.stderr}\n${result.stdout}`;
  return INDEX_TROUBLE.some((re) => re.test(text));
}

/**
 * The command that installs the bundled wheel by hand into `python` once the index is reachable:
 * into its environment, or with `--user` where PEP 668 protects a system Python.
 */
export function handInstallCommand(
  python: PythonInfo | undefined,
  wheelPath: string,
  platform: string,
  installer: 'pip' | 'uv',
): string | undefined {
  const q = (a: string): string => shellQuote(a, platform);
  if (!python) return undefined; // uv chose (or fetched) the Python: no interpreter to name
  const exe = q(python.executable);
  if (installer === 'uv') return `uv pip install --python ${exe} ${python.externallyManaged ? '--break-system-packages ' : ''}${q(wheelPath)}`;
  if (python.externallyManaged) return `${exe} -m pip install --user --break-system-packages ${q(wheelPath)}`;
  return `${exe} -m pip install ${q(wheelPath)}`;
}

/** How to get a Python 3.10+ here. */
export function installPythonCommand(platform: string): string {
  switch (platform) {
    case 'darwin':
      return 'brew install python@3.12';
    case 'win32':
      return 'winget install Python.Python.3.12';
    default:
      return 'sudo apt install python3 python3-venv';
  }
}

function noPythonMessage(tried: readonly string[], platform: string): { message: string; command: string } {
  const command = installPythonCommand(platform);
  const where = platform === 'linux' ? ' (Debian, Ubuntu; elsewhere your system\'s package manager or python.org)' : '';
  return {
    message:
      `The server needs Python ${MIN_PYTHON.join('.')} or newer and none was found (${tried.join('; ') || 'no candidate'}). ` +
      `Install one, for example with: ${command}${where}, then run "Context Companion: Restart Server"; ` +
      'or set contextCompanion.interpreter to a Python 3.10+.',
    command,
  };
}

function venvFailure(
  result: RunResult,
  python: PythonInfo | undefined,
  tried: readonly string[],
  wheel: BundledWheel,
  platform: string,
): { message: string; command?: string } {
  if (!python) {
    // uv found no Python 3.10+ and could not fetch one
    const { message, command } = noPythonMessage(tried, platform);
    return { message: `${message} (uv: ${failureReason(result)})`, command };
  }
  const text = `${result.stderr}\n${result.stdout}`;
  const apt = /apt(?:-get)? install (python3(?:\.\d+)?-venv)/.exec(text);
  if (apt || /ensurepip is not available|No module named venv/.test(text)) {
    const pkg = apt?.[1] ?? `python${python.version[0]}.${python.version[1]}-venv`;
    const command = `sudo apt install ${pkg}`;
    return {
      message:
        `${python.executable} cannot make a virtual environment: its venv module (or ensurepip) is missing. ` +
        `Install it with: ${command}, then run "Context Companion: Restart Server".`,
      command,
    };
  }
  const command = handInstallCommand(python, wheel.path, platform, 'pip');
  return {
    message: `Making a virtual environment with ${python.executable} failed: ${failureReason(result)}. To install the server by hand: ${command}`,
    command,
  };
}

function installFailure(
  result: RunResult,
  python: PythonInfo | undefined,
  installer: 'pip' | 'uv',
  wheel: BundledWheel,
  platform: string,
): { problem: InstallProblem; message: string; command?: string } {
  const command = handInstallCommand(python, wheel.path, platform, installer);
  const byHand = command ? `; or install it by hand: ${command}` : '';
  const reason = failureReason(result);
  if (isIndexTrouble(result)) {
    const settings =
      installer === 'uv' ? "uv's index settings (uv.toml, UV_INDEX_URL)" : "pip's index settings (pip.conf, PIP_INDEX_URL)";
    return {
      problem: 'index',
      message:
        `The server's dependencies could not be installed from your package index (${reason}). ` +
        `Check the network and ${settings}, then choose Retry${byHand}`,
      command,
    };
  }
  return {
    problem: 'install',
    message: `Installing the server failed (${installer}: ${reason}); see the output${byHand}`,
    command,
  };
}

// ------------------------------------------------------------------------------------ the lock

export interface Lock {
  release(): void;
}

interface LockOwner {
  pid: number;
  host: string;
  at: number;
}

/** A lock older than this is taken over even when its owner seems alive (a pid reused, a frozen machine). */
const LOCK_MAX_AGE_MS = 30 * 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the lock at `dir` was left by a process that is gone (or is far too old). */
export function lockIsStale(dir: string, now = Date.now()): boolean {
  let owner: LockOwner | undefined;
  try {
    owner = JSON.parse(fs.readFileSync(path.join(dir, 'owner.json'), 'utf8')) as LockOwner;
  } catch {
    // made but not yet written (or written by a process that died in between): stale after a while
    try {
      return now - fs.statSync(dir).mtimeMs > 60_000;
    } catch {
      return false; // gone already
    }
  }
  if (now - owner.at > LOCK_MAX_AGE_MS) return true;
  return owner.host === os.hostname() && !alive(owner.pid);
}

/**
 * Take the lock `dir` (an atomic mkdir), waiting while another live process holds it; a lock whose
 * owner died is moved aside (an atomic rename: of two windows taking it over, one wins) and removed.
 */
export async function acquireLock(dir: string, options: { timeoutMs: number; pollMs?: number; onWait?: () => void }): Promise<Lock> {
  const end = Date.now() + options.timeoutMs;
  let waited = false;
  for (;;) {
    try {
      fs.mkdirSync(dir);
      const owner: LockOwner = { pid: process.pid, host: os.hostname(), at: Date.now() };
      fs.writeFileSync(path.join(dir, 'owner.json'), JSON.stringify(owner));
      return {
        release: () => {
          try {
            const now = JSON.parse(fs.readFileSync(path.join(dir, 'owner.json'), 'utf8')) as LockOwner;
            if (now.pid === owner.pid && now.at === owner.at && now.host === owner.host) fs.rmSync(dir, { recursive: true, force: true });
          } catch {
            /* taken over or gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (lockIsStale(dir)) {
      const aside = `${dir}.stale-${randomBytes(4).toString('hex')}`;
      try {
        fs.renameSync(dir, aside);
        fs.rmSync(aside, { recursive: true, force: true });
      } catch {
        /* another window moved it first */
      }
      continue;
    }
    if (Date.now() > end) {
      throw new Error(
        `Another VS Code window has been installing the server for over ${Math.round(options.timeoutMs / 60_000)} minutes ` +
          `(${dir} is held); run "Context Companion: Restart Server" when it is done.`,
      );
    }
    if (!waited) {
      waited = true;
      options.onWait?.();
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 500));
  }
}
