import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import {
  classifyProbe,
  launchFolder,
  LaunchSettingError,
  pipInstallCommand,
  probeArgs,
  resolveLaunch,
  runProbe,
  serverSpawn,
  shellQuote,
  type LaunchInputs,
} from '../src/launch';

const base: LaunchInputs = {
  serverCommand: [],
  interpreter: '',
  platform: 'linux',
  home: '/home/ada',
  workspaceFolder: '/work/proj',
};

describe('resolveLaunch: the order of sources', () => {
  it('uses serverCommand first, as given', () => {
    const plan = resolveLaunch({
      ...base,
      serverCommand: ['context-companion', 'serve', '-v'],
      interpreter: '/usr/bin/python3.12',
      pythonExtension: ['/venv/bin/python'],
    });
    assert.deepEqual(plan, { command: 'context-companion', args: ['serve', '-v'], source: 'serverCommand' });
  });

  it('uses the interpreter setting when serverCommand is empty', () => {
    const plan = resolveLaunch({ ...base, interpreter: '/opt/py/bin/python', pythonExtension: ['/venv/bin/python'] });
    assert.equal(plan.source, 'interpreter');
    assert.equal(plan.command, '/opt/py/bin/python');
    assert.deepEqual(plan.args, ['-m', 'context_companion', 'serve']);
    assert.deepEqual(plan.python, ['/opt/py/bin/python']);
  });

  it("uses the Python extension's interpreter (a whole command line) next", () => {
    const plan = resolveLaunch({ ...base, pythonExtension: ['conda', 'run', '-n', 'work', 'python'] });
    assert.equal(plan.source, 'pythonExtension');
    assert.equal(plan.command, 'conda');
    assert.deepEqual(plan.args, ['run', '-n', 'work', 'python', '-m', 'context_companion', 'serve']);
  });

  it('falls back to python3 on PATH, python on Windows', () => {
    assert.deepEqual(resolveLaunch({ ...base, pythonExtension: [] }), {
      command: 'python3',
      args: ['-m', 'context_companion', 'serve'],
      source: 'path',
      python: ['python3'],
    });
    assert.equal(resolveLaunch({ ...base, platform: 'win32' }).command, 'python');
  });

  it('treats null, an empty list and a blank interpreter as unset', () => {
    assert.equal(resolveLaunch({ ...base, serverCommand: null, interpreter: '   ' }).source, 'path');
    assert.equal(resolveLaunch({ ...base, serverCommand: undefined, interpreter: undefined }).source, 'path');
  });

  it('expands ~, ${userHome} and ${workspaceFolder}', () => {
    assert.equal(resolveLaunch({ ...base, interpreter: '~/.venvs/cc/bin/python' }).command, '/home/ada/.venvs/cc/bin/python');
    assert.equal(resolveLaunch({ ...base, interpreter: '${workspaceFolder}/.venv/bin/python' }).command, '/work/proj/.venv/bin/python');
    const plan = resolveLaunch({ ...base, serverCommand: ['${userHome}/bin/cc', 'serve', '--log-file', '${workspaceFolder}/cc.log'] });
    assert.equal(plan.command, '/home/ada/bin/cc');
    assert.deepEqual(plan.args, ['serve', '--log-file', '/work/proj/cc.log']);
  });
});

describe('resolveLaunch: bad settings give an error naming the setting', () => {
  const cases: [string, Partial<LaunchInputs>, string, RegExp][] = [
    ['serverCommand as a string', { serverCommand: 'context-companion serve' }, 'contextCompanion.serverCommand', /must be a list of strings.*not a string/],
    ['serverCommand with a number', { serverCommand: ['cc', 3] }, 'contextCompanion.serverCommand', /item 2 must be a string, not a number/],
    ['serverCommand with an empty program', { serverCommand: [' ', 'serve'] }, 'contextCompanion.serverCommand', /first item .* is empty/],
    ['interpreter as a list', { interpreter: ['python3'] }, 'contextCompanion.interpreter', /path of a Python interpreter, not a list/],
    ['${workspaceFolder} without a folder', { interpreter: '${workspaceFolder}/py', workspaceFolder: undefined }, 'contextCompanion.interpreter', /no folder is open/],
  ];
  for (const [name, over, setting, message] of cases) {
    it(name, () => {
      assert.throws(
        () => resolveLaunch({ ...base, ...over }),
        (err: unknown) => err instanceof LaunchSettingError && err.setting === setting && message.test(err.message),
      );
    });
  }
});

describe('pip install hint', () => {
  const wheel = '/ext/server/context_companion-0.1.0-py3-none-any.whl';

  it('installs the wheel the extension carries, never a bare package name', () => {
    assert.equal(pipInstallCommand(['/usr/bin/python3'], 'linux', wheel), `/usr/bin/python3 -m pip install ${wheel}`);
    assert.doesNotMatch(pipInstallCommand(['/usr/bin/python3'], 'linux', wheel), /install context-companion/);
  });

  it('quotes only what the shell needs quoted', () => {
    assert.equal(
      pipInstallCommand(['/Users/ada/My Envs/py/bin/python'], 'darwin', '/Users/ada/Library/Application Support/x/cc.whl'),
      "'/Users/ada/My Envs/py/bin/python' -m pip install '/Users/ada/Library/Application Support/x/cc.whl'",
    );
    assert.equal(
      pipInstallCommand(['C:\\Program Files\\Python312\\python.exe'], 'win32', 'C:\\ext\\cc.whl'),
      '"C:\\Program Files\\Python312\\python.exe" -m pip install C:\\ext\\cc.whl',
    );
    assert.equal(shellQuote("it's", 'linux'), `'it'\\''s'`);
  });

  it('keeps a multi-word interpreter command line', () => {
    assert.equal(
      pipInstallCommand(['conda', 'run', '-n', 'work', 'python'], 'linux', wheel),
      `conda run -n work python -m pip install ${wheel}`,
    );
  });

  it('points a development build without a wheel at a clone', () => {
    assert.equal(pipInstallCommand(['python3'], 'linux', undefined), 'python3 -m pip install -e <clone of context-companion>');
  });
});

describe('classifyProbe', () => {
  const plan = resolveLaunch({ ...base, interpreter: '/venv/bin/python' });

  it('accepts a clean import', () => {
    assert.deepEqual(classifyProbe({ exitCode: 0, stderr: '' }, plan, 'linux'), { kind: 'ok' });
  });

  it('offers the exact pip command (the bundled wheel) when the package is missing', () => {
    const outcome = classifyProbe(
      {
        exitCode: 1,
        stderr: "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nModuleNotFoundError: No module named 'context_companion'\n",
      },
      plan,
      'linux',
      '/ext/server/context_companion-0.1.0-py3-none-any.whl',
    );
    assert.equal(outcome.kind, 'missingPackage');
    assert.ok(outcome.kind === 'missingPackage');
    assert.equal(outcome.installCommand, '/venv/bin/python -m pip install /ext/server/context_companion-0.1.0-py3-none-any.whl');
    assert.match(outcome.message, /not installed for \/venv\/bin\/python \(from contextCompanion\.interpreter\)/);
    assert.match(outcome.message, /Install it with: \/venv\/bin\/python -m pip install \/ext\/server\/context_companion-0\.1\.0-py3-none-any\.whl$/);
  });

  it('does not mistake a broken dependency for a missing package', () => {
    const outcome = classifyProbe(
      { exitCode: 1, stderr: "Traceback...\nModuleNotFoundError: No module named 'pygls'\n" },
      plan,
      'linux',
    );
    assert.equal(outcome.kind, 'broken');
    assert.match((outcome as { message: string }).message, /cannot import context_companion: ModuleNotFoundError: No module named 'pygls'/);
  });

  it('says when the interpreter does not exist, and which setting chose it', () => {
    const outcome = classifyProbe({ spawnError: 'ENOENT', exitCode: null, stderr: '' }, plan, 'linux');
    assert.equal(outcome.kind, 'noInterpreter');
    assert.match((outcome as { message: string }).message, /\/venv\/bin\/python \(from contextCompanion\.interpreter\) was not found/);
  });

  it('reports a hung probe', () => {
    const outcome = classifyProbe({ exitCode: null, timedOut: true, stderr: '' }, plan, 'linux');
    assert.equal(outcome.kind, 'broken');
  });

  it('builds the probe from the interpreter command line', () => {
    assert.deepEqual(probeArgs(['conda', 'run', 'python']), {
      command: 'conda',
      args: ['run', 'python', '-c', 'import context_companion'],
    });
  });
});

describe('runProbe against a real interpreter', () => {
  const python = process.env.COMPANION_TEST_PYTHON || 'python3';
  // `-S` skips site-packages, where the package is installed: a genuine "missing package" run.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-probe-'));

  it('accepts the interpreter that has the package installed (pip install -e . at the repo root)', async () => {
    const plan = resolveLaunch({ ...base, interpreter: python });
    const result = await runProbe(plan.python!, empty);
    assert.deepEqual(classifyProbe(result, plan, 'linux'), { kind: 'ok' }, result.stderr);
  });

  it('classifies a real missing package', async () => {
    const plan = resolveLaunch({ ...base, pythonExtension: [python, '-S'] });
    const result = await runProbe(plan.python!, empty);
    const outcome = classifyProbe(result, plan, 'linux', '/ext/cc.whl');
    assert.equal(outcome.kind, 'missingPackage', JSON.stringify(result));
    assert.ok(outcome.kind === 'missingPackage');
    assert.equal(outcome.installCommand, `${python} -S -m pip install /ext/cc.whl`);
  });

  it('classifies a real interpreter that does not exist', async () => {
    const plan = resolveLaunch({ ...base, interpreter: path.join(empty, 'no-such-python') });
    const outcome = classifyProbe(await runProbe(plan.python!, empty), plan, 'linux');
    assert.equal(outcome.kind, 'noInterpreter');
  });
});

/** A repository whose Python files write a marker when imported: our package's name, a dependency's, start-up files. */
function hostileFolder(): { folder: string; markers: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-hostile-'));
  const folder = path.join(root, 'repo');
  const markers = path.join(root, 'markers');
  fs.mkdirSync(markers);
  for (const name of ['context_companion/__init__.py', 'pydantic/__init__.py', 'sitecustomize.py', 'usercustomize.py']) {
    fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
    const mark = path.join(markers, name.replace('/', '_'));
    fs.writeFileSync(path.join(folder, name), `open(${JSON.stringify(mark)}, 'w').write('ran')\nraise SystemExit(7)\n`);
  }
  return { folder, markers };
}

describe('processes start in the launch folder, never the workspace', () => {
  const python = process.env.COMPANION_TEST_PYTHON || 'python3';

  it("is <global storage>/launch, made owner-only and empty", () => {
    const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-storage-'));
    const folder = launchFolder(path.join(storage, 'context-companion.context-companion'));
    assert.equal(folder, path.join(storage, 'context-companion.context-companion', 'launch'));
    assert.equal(fs.statSync(folder).mode & 0o777, 0o700);
    assert.deepEqual(fs.readdirSync(folder), []);
    assert.equal(launchFolder(path.join(storage, 'context-companion.context-companion')), folder, 'a second call finds it');
  });

  it('the server command line: --stdio appended, the launch folder as working folder (the workspace goes in initialize)', () => {
    const plan = resolveLaunch({ ...base, interpreter: '/venv/bin/python' });
    assert.deepEqual(serverSpawn(plan, '/storage/launch'), {
      command: '/venv/bin/python',
      args: ['-m', 'context_companion', 'serve', '--stdio'],
      cwd: '/storage/launch',
    });
  });

  it("the probe run from the workspace imports the workspace's own package; from the launch folder the real one", async () => {
    const { folder, markers } = hostileFolder();
    const plan = resolveLaunch({ ...base, interpreter: python });
    const there = await runProbe(plan.python!, folder);
    assert.equal(there.exitCode, 7, 'the planted package ran: the fixture is hostile');
    fs.rmSync(markers, { recursive: true });
    fs.mkdirSync(markers);
    const storage = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-storage-'));
    const saved = process.cwd();
    process.chdir(folder); // the extension host's own working folder may be the project (`code .`)
    try {
      const result = await runProbe(plan.python!, launchFolder(storage));
      assert.deepEqual(classifyProbe(result, plan, 'linux'), { kind: 'ok' }, result.stderr);
      const line = serverSpawn(plan, launchFolder(storage));
      const { spawnSync } = await import('node:child_process');
      // the real server, started as the extension starts it, answers `--help` of serve and exits
      const served = spawnSync(line.command, [...line.args.slice(0, -1), '--help'], { cwd: line.cwd, encoding: 'utf8' });
      assert.equal(served.status, 0, served.stderr);
      assert.match(served.stdout, /--stdio/);
    } finally {
      process.chdir(saved);
    }
    assert.deepEqual(fs.readdirSync(markers), []);
  });
});

describe('Restricted Mode: nothing names a program of the workspace', () => {
  const restricted: LaunchInputs = { ...base, restricted: true };

  it('refuses ${workspaceFolder} and a relative program path, saying why', () => {
    for (const inputs of [
      { ...restricted, interpreter: '${workspaceFolder}/.venv/bin/python' },
      { ...restricted, serverCommand: ['${workspaceFolder}/bin/cc', 'serve'] },
      { ...restricted, interpreter: '.venv/bin/python' },
      { ...restricted, serverCommand: ['./cc', 'serve'] },
    ]) {
      assert.throws(
        () => resolveLaunch(inputs),
        (e: unknown) => e instanceof LaunchSettingError && /Restricted Mode/.test(e.message),
        JSON.stringify(inputs),
      );
    }
  });

  it("does not take the Python extension's interpreter (it may be the workspace's .venv); python3 on PATH instead", () => {
    const plan = resolveLaunch({ ...restricted, pythonExtension: ['/work/proj/.venv/bin/python'] });
    assert.equal(plan.source, 'path');
    assert.equal(plan.command, 'python3');
  });

  it('keeps absolute programs and names on PATH from user settings', () => {
    assert.equal(resolveLaunch({ ...restricted, interpreter: '~/py/bin/python' }).command, '/home/ada/py/bin/python');
    assert.equal(resolveLaunch({ ...restricted, serverCommand: ['context-companion', 'serve'] }).command, 'context-companion');
  });

  it('trusted: a relative program path is the workspace folder\'s, made absolute (the process starts elsewhere)', () => {
    assert.equal(resolveLaunch({ ...base, interpreter: '.venv/bin/python' }).command, '/work/proj/.venv/bin/python');
    assert.equal(resolveLaunch({ ...base, serverCommand: ['./bin/cc', 'serve'] }).command, '/work/proj/bin/cc');
  });
});
