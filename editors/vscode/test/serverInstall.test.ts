import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { bundledPlan, cliCommandLine } from '../src/launch';
import {
  acquireLock,
  type BundledWheel,
  compareVersions,
  decideServer,
  envDirName,
  envPython,
  findBasePython,
  installPrerequisite,
  findBundledWheel,
  installBundledServer,
  type InstallResult,
  MARKER_FILE,
  otherEnvs,
  pickWheel,
  pythonCandidates,
  readyEnv,
  type RunResult,
  type Runner,
  runProcess,
  wheelVersion,
} from '../src/serverInstall';

const made: string[] = [];
const tmp = (name: string): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cc-install-${name}-`));
  made.push(dir);
  return dir;
};
after(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
const ok = (stdout = ''): RunResult => ({ exitCode: 0, stdout, stderr: '' });
const fail = (stderr: string, exitCode = 1): RunResult => ({ exitCode, stdout: '', stderr });
const missing: RunResult = { spawnError: 'ENOENT', exitCode: null, stdout: '', stderr: '' };
const pythonAnswer = (executable: string, version: number[], extra: object = {}): RunResult =>
  ok(`${JSON.stringify({ executable, version, venv: false, externallyManaged: false, ...extra })}\n`);

function fakeWheel(dir: string, version = '0.2.0'): BundledWheel {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `context_companion-${version}-py3-none-any.whl`);
  fs.writeFileSync(file, `wheel ${version} ${Math.random()}`);
  return { path: file, version, sha256: `${'ab'.repeat(6)}${Math.random().toString(16).slice(2)}`.padEnd(64, '0') };
}

/** A finished environment as installBundledServer leaves it (marker last, a Python file). */
function finishedEnv(root: string, wheel: Pick<BundledWheel, 'version' | 'sha256'>): string {
  const dir = path.join(root, envDirName(wheel));
  fs.mkdirSync(path.dirname(envPython(dir, 'linux')), { recursive: true });
  fs.writeFileSync(envPython(dir, 'linux'), '');
  fs.writeFileSync(path.join(dir, MARKER_FILE), JSON.stringify({ version: wheel.version, sha256: wheel.sha256 }));
  return dir;
}

interface Call {
  command: string;
  args: string[];
}

/**
 * A scripted runner: `uv`, the Pythons named in `pythons` (command → answer of the inspect script),
 * `venv` and `pip` results. A successful venv step makes the environment's python file, as venv does.
 */
function scripted(opts: {
  uv?: boolean;
  pythons?: Record<string, RunResult>;
  venv?: RunResult;
  pip?: RunResult;
  check?: RunResult;
  delayMs?: number;
}): { run: Runner; calls: Call[]; cwds: string[] } {
  const calls: Call[] = [];
  const cwds: string[] = [];
  const run: Runner = async (command, args, options) => {
    calls.push({ command, args: [...args] });
    cwds.push(options.cwd);
    if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    if (command === 'uv' && args[0] === '--version') return opts.uv ? ok('uv 0.9.0') : missing;
    const venvTarget = command === 'uv' && args[0] === 'venv' ? args[args.length - 1] : args[0] === '-m' && args[1] === 'venv' ? args[2] : undefined;
    if (venvTarget) {
      const result = opts.venv ?? ok();
      if (result.exitCode === 0) {
        fs.mkdirSync(path.join(venvTarget, 'bin'), { recursive: true });
        fs.writeFileSync(path.join(venvTarget, 'bin', 'python'), '');
      } else {
        fs.mkdirSync(venvTarget, { recursive: true }); // a half-made environment
      }
      return result;
    }
    if ((command === 'uv' && args[0] === 'pip') || args.includes('pip')) return opts.pip ?? ok('Successfully installed context-companion-0.2.0');
    if (args[0] === '-c' && args[1].includes('import sys, context_companion')) return opts.check ?? ok('0.2.0');
    if (args.includes('-c')) return opts.pythons?.[command] ?? missing;
    throw new Error(`unexpected command ${command} ${args.join(' ')}`);
  };
  return { run, calls, cwds };
}

const quiet = { log: () => undefined, report: () => undefined };

describe('the bundled wheel', () => {
  it('reads the version from the file name and ignores other files', () => {
    assert.equal(wheelVersion('context_companion-0.1.0-py3-none-any.whl'), '0.1.0');
    assert.equal(wheelVersion('context_companion-1.2.0rc1-py3-none-any.whl'), '1.2.0rc1');
    assert.equal(wheelVersion('context_companion-0.1.0.tar.gz'), undefined);
    assert.equal(wheelVersion('other-0.1.0-py3-none-any.whl'), undefined);
  });

  it("picks the extension's version, else the newest", () => {
    const files = ['README', 'context_companion-0.3.0-py3-none-any.whl', 'context_companion-0.10.0-py3-none-any.whl'];
    assert.equal(pickWheel(files, '0.3.0')?.version, '0.3.0');
    assert.equal(pickWheel(files, '9.9.9')?.version, '0.10.0');
    assert.equal(pickWheel(['README'], '0.3.0'), undefined);
  });

  it('is found in <extension>/server with its hash; a build without one has none', () => {
    const ext = tmp('ext');
    assert.equal(findBundledWheel(ext, '0.1.0'), undefined);
    fs.mkdirSync(path.join(ext, 'server'));
    fs.writeFileSync(path.join(ext, 'server', 'context_companion-0.1.0-py3-none-any.whl'), 'PK');
    const wheel = findBundledWheel(ext, '0.1.0');
    assert.equal(wheel?.version, '0.1.0');
    assert.equal(wheel?.path, path.join(ext, 'server', 'context_companion-0.1.0-py3-none-any.whl'));
    assert.equal(wheel?.sha256, createHash('sha256').update('PK').digest('hex'));
    assert.equal(envDirName(wheel!), `env-0.1.0-${wheel!.sha256.slice(0, 12)}`);
  });
});

describe('compareVersions', () => {
  const ordered = ['0.1.0.dev1', '0.1.0a1', '0.1.0b2', '0.1.0rc1', '0.1.0', '0.1.0.post1', '0.1.1', '0.2.0', '0.10.0', '1.0.0'];
  it('orders releases, pre-releases, post and dev releases as PEP 440 does', () => {
    for (let i = 0; i < ordered.length - 1; i++) {
      assert.ok(compareVersions(ordered[i], ordered[i + 1]) < 0, `${ordered[i]} < ${ordered[i + 1]}`);
      assert.ok(compareVersions(ordered[i + 1], ordered[i]) > 0, `${ordered[i + 1]} > ${ordered[i]}`);
    }
  });
  it('treats 1.0 and 1.0.0 as one version and ignores a local part', () => {
    assert.equal(compareVersions('1.0', '1.0.0'), 0);
    assert.equal(compareVersions('1.0.0+local.3', '1.0.0'), 0);
  });
});

describe('which Python makes the environment', () => {
  it("tries the found interpreter first, then python3 and versioned names, each once", () => {
    assert.deepEqual(pythonCandidates(['/venv/bin/python'], 'linux').slice(0, 3), [['/venv/bin/python'], ['python3'], ['python3.14']]);
    assert.deepEqual(pythonCandidates(['python3'], 'linux').filter((c) => c[0] === 'python3').length, 1);
    assert.deepEqual(pythonCandidates(undefined, 'win32'), [['python'], ['py', '-3']]);
  });

  it('skips a Python older than 3.10 and one that is not there, and says so', async () => {
    const { run } = scripted({
      pythons: {
        '/old/bin/python': pythonAnswer('/old/bin/python', [3, 9, 18]),
        'python3.12': pythonAnswer('/usr/bin/python3.12', [3, 12, 3]),
      },
    });
    const found = await findBasePython(run, pythonCandidates(['/old/bin/python'], 'linux'), 'linux', '/storage/server');
    assert.equal(found.python?.executable, '/usr/bin/python3.12');
    assert.deepEqual(found.tried, ['/old/bin/python is 3.9.18', 'python3 not found', 'python3.14 not found', 'python3.13 not found']);
  });
});

describe('before the Install offer: can an install start here?', () => {
  it('yes with a Python 3.10+ among the candidates, or with uv', async () => {
    const newer = scripted({ pythons: { 'python3.12': pythonAnswer('/usr/bin/python3.12', [3, 12, 3]) } });
    assert.deepEqual(await installPrerequisite(newer.run, ['python3'], 'linux', '/launch'), { ok: true });
    const uv = scripted({ uv: true, pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 8, 10]) } });
    assert.deepEqual(await installPrerequisite(uv.run, ['python3'], 'linux', '/launch'), { ok: true });
  });

  it('no: one message naming what is missing (each Python tried) and the command that gets one', async () => {
    const { run, cwds } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 8, 10]) } });
    const got = await installPrerequisite(run, ['python3'], 'linux', '/launch');
    assert.deepEqual([...new Set(cwds)], ['/launch']); // every check ran in the launch folder, never the workspace
    assert.equal(got.ok, false);
    if (got.ok) return;
    assert.match(got.message, /^The server needs Python 3\.10 or newer and none was found \(python3 is 3\.8\.10; python3\.14 not found;/);
    assert.match(got.message, /sudo apt install python3 python3-venv/);
    assert.equal(got.command, 'sudo apt install python3 python3-venv');
  });
});

describe('decideServer: what happens when the found Python cannot import the server', () => {
  const wheel: BundledWheel = { path: '/ext/server/w.whl', version: '0.2.0', sha256: 'f'.repeat(64) };
  const base = { wheel, ready: undefined, others: [], autoInstall: false, approved: false };
  it('uses a finished environment without asking', () => {
    assert.deepEqual(decideServer({ ...base, ready: '/s/env/bin/python' }), { kind: 'usePrivate', python: '/s/env/bin/python' });
  });
  it('asks before the first install (one click)', () => {
    assert.deepEqual(decideServer(base), { kind: 'ask' });
  });
  it('installs without asking with contextCompanion.server.autoInstall, or after the click', () => {
    assert.deepEqual(decideServer({ ...base, autoInstall: true }), { kind: 'install', reason: 'autoInstall' });
    assert.deepEqual(decideServer({ ...base, approved: true }), { kind: 'install', reason: 'approved' });
  });
  it('upgrades an environment the user already accepted without asking again', () => {
    assert.deepEqual(decideServer({ ...base, others: [{ version: '0.1.0' }] }), { kind: 'install', reason: 'upgrade' });
  });
  it('has nothing to install in a development build without a wheel', () => {
    assert.deepEqual(decideServer({ ...base, wheel: undefined, autoInstall: true }), { kind: 'noWheel' });
  });
});

describe('installBundledServer with scripted processes', () => {
  it('pip: a venv from the found Python, the wheel installed with pip and no index flags, the marker written last', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run, calls } = scripted({ pythons: { '/home/ada/.venvs/work/bin/python': pythonAnswer('/usr/bin/python3.11', [3, 11, 2]) } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['/home/ada/.venvs/work/bin/python'], platform: 'linux' });
    const envDir = path.join(root, envDirName(wheel));
    assert.deepEqual(result, { kind: 'installed', python: path.join(envDir, 'bin', 'python'), removed: [], installer: 'pip' });
    const steps = calls.filter((c) => !c.args.includes('-c') && !(c.command === 'uv'));
    assert.deepEqual(steps, [
      { command: '/usr/bin/python3.11', args: ['-m', 'venv', envDir] },
      { command: path.join(envDir, 'bin', 'python'), args: ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wheel.path] },
    ]);
    for (const c of calls) assert.ok(!c.args.some((a) => /index-url|--index|--find-links|--no-index/.test(a)), `index flag in ${c.args}`);
    assert.equal(readyEnv(root, wheel, 'linux'), path.join(envDir, 'bin', 'python'));
    const marker = JSON.parse(fs.readFileSync(path.join(envDir, MARKER_FILE), 'utf8'));
    assert.equal(marker.version, '0.2.0');
    assert.equal(marker.sha256, wheel.sha256);
    assert.equal(marker.basePython, '/usr/bin/python3.11');
    assert.ok(!fs.existsSync(path.join(root, 'install.lock')), 'the lock is released');
  });

  it('runs every process (uv, the Pythons it asks, venv, pip, the check) in the install root, never elsewhere', async () => {
    // `python -c`/`-m` import from the working folder first: not the workspace, not the extension host's folder.
    for (const uv of [false, true]) {
      const root = tmp('root');
      const { run, cwds } = scripted({ uv, pythons: { python3: pythonAnswer('/usr/bin/python3.12', [3, 12, 1]) } });
      const result = await installBundledServer({ run, ...quiet }, { root, wheel: fakeWheel(tmp('ext')), foundPython: ['python3'], platform: 'linux' });
      assert.equal(result.kind, 'installed');
      assert.ok(cwds.length >= 4, String(cwds.length));
      assert.deepEqual([...new Set(cwds)], [root]);
    }
  });

  it('uv on PATH: uv venv with the found Python, then uv pip install', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run, calls } = scripted({ uv: true, pythons: { python3: pythonAnswer('/usr/bin/python3.12', [3, 12, 1]) } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'installed');
    const envDir = path.join(root, envDirName(wheel));
    const uvCalls = calls.filter((c) => c.command === 'uv' && c.args[0] !== '--version');
    assert.deepEqual(uvCalls, [
      { command: 'uv', args: ['venv', '--python', '/usr/bin/python3.12', envDir] },
      { command: 'uv', args: ['pip', 'install', '--python', path.join(envDir, 'bin', 'python'), wheel.path] },
    ]);
  });

  it('uv on PATH and no Python 3.10+: uv is asked for one', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run, calls } = scripted({ uv: true, pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 8, 10]) } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'installed');
    assert.deepEqual(calls.find((c) => c.command === 'uv' && c.args[0] === 'venv')?.args.slice(0, 3), ['venv', '--python', '>=3.10']);
  });

  it('upgrade: the environment of the older version goes, a newer extension’s stays', async () => {
    const root = tmp('root');
    const older = finishedEnv(root, { version: '0.1.0', sha256: '1'.repeat(64) });
    const sameOlderBuild = finishedEnv(root, { version: '0.2.0', sha256: '2'.repeat(64) });
    const newer = finishedEnv(root, { version: '0.3.0', sha256: '3'.repeat(64) });
    fs.mkdirSync(path.join(root, 'env-0.0.9-unfinished')); // no marker: not an environment of ours to judge
    const wheel = fakeWheel(tmp('ext'));
    assert.deepEqual(otherEnvs(root, wheel).map((e) => e.version).sort(), ['0.1.0', '0.2.0', '0.3.0']);
    const { run } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'installed');
    assert.deepEqual((result as { removed: string[] }).removed.sort(), ['0.1.0', '0.2.0']);
    assert.ok(!fs.existsSync(older) && !fs.existsSync(sameOlderBuild));
    assert.ok(fs.existsSync(newer));
  });

  it('no Python 3.10+ and no uv: says what is missing and the command that installs one; nothing left behind', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 8, 10]) } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: undefined, platform: 'linux' });
    assert.equal(result.kind, 'failed');
    const failed = result as Extract<InstallResult, { kind: 'failed' }>;
    assert.equal(failed.problem, 'python');
    assert.equal(failed.command, 'sudo apt install python3 python3-venv');
    assert.match(failed.message, /needs Python 3\.10 or newer and none was found \(python3 is 3\.8\.10; python3\.14 not found/);
    assert.doesNotMatch(failed.message, /\n/);
    assert.deepEqual(fs.readdirSync(root), []);
    const mac = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: undefined, platform: 'darwin' });
    assert.equal((mac as { command?: string }).command, 'brew install python@3.12');
  });

  it("Debian's Python without python3-venv: names the package to install", async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const debian =
      'The virtual environment was not created successfully because ensurepip is not\navailable.  On Debian/Ubuntu systems, you need to install the python3-venv\npackage using the following command.\n\n    apt install python3.11-venv\n\nYou may need to use sudo with that command.';
    const { run } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 11, 2]) }, venv: { exitCode: 1, stdout: debian, stderr: '' } });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'failed');
    assert.equal((result as { problem: string }).problem, 'venv');
    assert.equal((result as { command?: string }).command, 'sudo apt install python3.11-venv');
    assert.ok(!fs.existsSync(path.join(root, envDirName(wheel))), 'the half-made environment is removed');
  });

  it("an unreachable index: pip's reason, the settings to check and the exact command with the wheel's path", async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const pipOut =
      "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/pygls/\n" +
      'ERROR: Could not find a version that satisfies the requirement pygls<3,>=2.1 (from context-companion) (from versions: none)\n' +
      'ERROR: No matching distribution found for pygls<3,>=2.1\n';
    const { run } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) }, pip: fail(pipOut) });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'failed');
    const failed = result as Extract<InstallResult, { kind: 'failed' }>;
    assert.equal(failed.problem, 'index');
    assert.equal(failed.command, `/usr/bin/python3 -m pip install ${wheel.path}`);
    assert.match(failed.message, /could not be installed from your package index \(Could not find a version that satisfies the requirement pygls/);
    assert.match(failed.message, /pip's index settings \(pip\.conf, PIP_INDEX_URL\)/);
    assert.doesNotMatch(failed.message, /install context-companion/);
    assert.ok(!fs.existsSync(path.join(root, envDirName(wheel))));
  });

  it('a system Python under PEP 668: the hand command installs for the user', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run } = scripted({
      pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 11, 2], { externallyManaged: true }) },
      pip: fail('ERROR: No matching distribution found for pygls<3,>=2.1'),
    });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal((result as { command?: string }).command, `/usr/bin/python3 -m pip install --user --break-system-packages ${wheel.path}`);
  });

  it('uv and an unreachable index: points at uv’s settings', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run } = scripted({
      uv: true,
      pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) },
      pip: fail('error: Failed to fetch: `https://pypi.org/simple/pygls/`\n  Caused by: Request failed after 3 retries\n  Caused by: dns error'),
    });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    const failed = result as Extract<InstallResult, { kind: 'failed' }>;
    assert.equal(failed.problem, 'index');
    assert.match(failed.message, /uv's index settings \(uv\.toml, UV_INDEX_URL\)/);
    assert.match(failed.message, /\(Failed to fetch: `https:\/\/pypi\.org\/simple\/pygls\/`\)/);
    assert.equal(failed.command, `uv pip install --python /usr/bin/python3 ${wheel.path}`);
  });

  it('another failure: says pip failed and why', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run } = scripted({
      pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) },
      pip: fail("ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
    });
    const result = await installBundledServer({ run, ...quiet }, { root, wheel, foundPython: ['python3'], platform: 'linux' });
    const failed = result as Extract<InstallResult, { kind: 'failed' }>;
    assert.equal(failed.problem, 'install');
    assert.match(failed.message, /^Installing the server failed \(pip: Could not install packages due to an OSError: \[Errno 28\] No space left on device\)/);
  });
});

describe('a storage folder that cannot be written', () => {
  it('fails in one line instead of throwing', async () => {
    const file = path.join(tmp('root'), 'not-a-folder');
    fs.writeFileSync(file, '');
    const wheel = fakeWheel(tmp('ext'));
    const { run } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) } });
    const result = await installBundledServer({ run, ...quiet }, { root: path.join(file, 'server'), wheel, foundPython: ['python3'], platform: 'linux' });
    assert.equal(result.kind, 'failed');
    assert.match((result as { message: string }).message, /^Installing the server failed: ENOTDIR/);
    assert.doesNotMatch((result as { message: string }).message, /\n/);
  });
});

describe('two windows at once', () => {
  it('install once: the second waits for the first and uses its environment', async () => {
    const root = tmp('root');
    const wheel = fakeWheel(tmp('ext'));
    const { run, calls } = scripted({ pythons: { python3: pythonAnswer('/usr/bin/python3', [3, 12, 0]) }, delayMs: 40 });
    const reports: string[] = [];
    const options = { root, wheel, foundPython: ['python3'], platform: 'linux' };
    const [a, b] = await Promise.all([
      installBundledServer({ run, log: () => undefined, report: (m) => reports.push(m) }, options),
      installBundledServer({ run, log: () => undefined, report: (m) => reports.push(m) }, options),
    ]);
    assert.equal(a.kind, 'installed');
    assert.equal(b.kind, 'installed');
    assert.equal((a as { python: string }).python, (b as { python: string }).python);
    assert.deepEqual([(a as { installer: string }).installer, (b as { installer: string }).installer].sort(), ['other window', 'pip']);
    assert.equal(calls.filter((c) => c.args[1] === 'venv').length, 1, 'one venv made');
    assert.ok(reports.includes('waiting for another window that installs it'));
  });

  it("takes over the lock of a window that died, and waits for a live one until its time is up", async () => {
    const root = tmp('root');
    const lockDir = path.join(root, 'install.lock');
    fs.mkdirSync(lockDir);
    // a pid that is not running (pid_max on Linux is at most 2^22)
    fs.writeFileSync(path.join(lockDir, 'owner.json'), JSON.stringify({ pid: 4_194_999, host: os.hostname(), at: Date.now() }));
    const lock = await acquireLock(lockDir, { timeoutMs: 1_000, pollMs: 20 });
    assert.equal(JSON.parse(fs.readFileSync(path.join(lockDir, 'owner.json'), 'utf8')).pid, process.pid);
    await assert.rejects(acquireLock(lockDir, { timeoutMs: 100, pollMs: 20 }), /Another VS Code window has been installing the server/);
    lock.release();
    assert.ok(!fs.existsSync(lockDir));
  });
});

describe('the plan that runs the installed server', () => {
  it('runs -m context_companion serve from the environment, and the other commands from the same Python', () => {
    const plan = bundledPlan('/s/env-0.2.0-abc/bin/python');
    assert.deepEqual(plan, {
      command: '/s/env-0.2.0-abc/bin/python',
      args: ['-m', 'context_companion', 'serve'],
      source: 'bundled',
      python: ['/s/env-0.2.0-abc/bin/python'],
    });
    assert.deepEqual(cliCommandLine(plan, ['setup', '--agent', 'codex']), {
      command: '/s/env-0.2.0-abc/bin/python',
      args: ['-m', 'context_companion', 'setup', '--agent', 'codex'],
    });
  });
});

// ------------------------------------------------------------------------------------ real Python, real pip

const PYTHON = process.env.COMPANION_TEST_PYTHON || 'python3';

/** A small wheel named like ours (context_companion-<version>), with the given requirements. */
function buildTestWheel(dir: string, version: string, requires: string[]): BundledWheel {
  const script = `
import base64, hashlib, os, sys, zipfile
out, version = sys.argv[1], sys.argv[2]
requires = sys.argv[3:]
dist = f"context_companion-{version}.dist-info"
files = {
    "context_companion/__init__.py": f"__version__ = {version!r}\\n",
    "context_companion/__main__.py": "print('test server')\\n",
    f"{dist}/METADATA": "Metadata-Version: 2.1\\nName: context-companion\\nVersion: " + version + "\\n"
        + "".join(f"Requires-Dist: {r}\\n" for r in requires),
    f"{dist}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
for name, text in files.items():
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(data)}")
record.append(f"{dist}/RECORD,,")
files[f"{dist}/RECORD"] = "\\n".join(record) + "\\n"
path = os.path.join(out, f"context_companion-{version}-py3-none-any.whl")
with zipfile.ZipFile(path, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
print(path)
`;
  fs.mkdirSync(path.join(dir, 'server'), { recursive: true });
  execFileSync(PYTHON, ['-c', script, path.join(dir, 'server'), version, ...requires], { encoding: 'utf8' });
  const wheel = findBundledWheel(dir, version);
  assert.ok(wheel);
  return wheel;
}

describe('installBundledServer against a real Python and pip', () => {
  it('makes a working environment, and a second call finds it ready', async () => {
    const root = tmp('real-root');
    const wheel = buildTestWheel(tmp('real-ext'), '9.9.1', []);
    const lines: string[] = [];
    const result = await installBundledServer(
      { run: withoutUv(runProcess), log: (l) => lines.push(l), report: () => undefined },
      { root, wheel, foundPython: [PYTHON], platform: process.platform },
    );
    assert.equal(result.kind, 'installed', lines.join('\n'));
    const python = (result as { python: string }).python;
    assert.equal(readyEnv(root, wheel, process.platform), python);
    assert.equal(execFileSync(python, ['-m', 'context_companion'], { encoding: 'utf8' }).trim(), 'test server');
  });

  it('an unreachable index is told as such, with the command that installs the wheel', async () => {
    const root = tmp('real-root');
    const wheel = buildTestWheel(tmp('real-ext'), '9.9.2', ['cc-test-dependency-that-needs-an-index>=1']);
    // pip's own settings pointed at a closed port, as a user's configured index that is down
    const saved = { ...process.env };
    Object.assign(process.env, {
      PIP_CONFIG_FILE: os.devNull,
      PIP_INDEX_URL: 'http://127.0.0.1:9/simple',
      PIP_FIND_LINKS: '',
      PIP_RETRIES: '0',
      PIP_TIMEOUT: '5',
    });
    delete process.env.PIP_EXTRA_INDEX_URL;
    let result: InstallResult;
    try {
      result = await installBundledServer(
        { run: withoutUv(runProcess), log: () => undefined, report: () => undefined },
        { root, wheel, foundPython: [PYTHON], platform: process.platform },
      );
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
    assert.equal(result.kind, 'failed');
    const failed = result as Extract<InstallResult, { kind: 'failed' }>;
    assert.equal(failed.problem, 'index', failed.message);
    assert.match(failed.command ?? '', new RegExp(`-m pip install (--user --break-system-packages )?${wheel.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    assert.equal(readyEnv(root, wheel, process.platform), undefined);
    assert.deepEqual(fs.readdirSync(root), [], 'nothing left in the storage');
  });
});

/** The real runner, as on a machine without uv (this test is about pip). */
function withoutUv(run: Runner): Runner {
  return (command, args, options) => (command === 'uv' ? Promise.resolve(missing) : run(command, args, options));
}
