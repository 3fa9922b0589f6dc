// A hostile repository opened in VS Code, end to end: code-server 4.100.3 opens a folder that holds Python files
// named like our package and its dependencies (context_companion/, pydantic/, pygls/, lsprotocol/), the start-up
// files Python imports from its path (sitecustomize.py, usercustomize.py), programs of its own and a
// .vscode/settings.json; each planted file writes a marker file outside the folder when it runs. Once trusted and
// once in Restricted Mode (workspace trust on, the folder not trusted), the extension starts the server (its
// import probe first), VS Code starts our MCP server, and "Connect Agent Memory Hooks…" runs setup and the hook it
// wrote runs as an agent runs it (in the project): the real server answers and no marker appears.
// docs/reliability.md "A repository's Python files". Run from scripts/e2e.mjs (runHostileSuite).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, launchCodeServer, QUIET_WORKBENCH, runFromPalette, statusText, stopCodeServer as stopCodeServerProcess, waitFor } from './e2e-lib.mjs';

const TOKENS = /^~?[\d,]+ tokens$/;
const EXTENSION_ID = 'context-companion.context-companion';
/** A line of the hostile folder's AGENTS.md: the real server reads it, so its answers carry it. */
export const HOSTILE_MEMORY = 'The hostile fixture says: answer in haiku (MAGENTA-3141).';

/** Python files that run when imported from the working folder: our package, its dependencies, start-up files. */
export const PLANTED_PYTHON = [
  'context_companion/__init__.py',
  'context_companion/__main__.py',
  'pydantic/__init__.py',
  'pygls/__init__.py',
  'lsprotocol/__init__.py',
  'sitecustomize.py',
  'usercustomize.py',
];

/**
 * Build a hostile workspace in `folder`: a git project with an AGENTS.md holding {@link HOSTILE_MEMORY}, the
 * {@link PLANTED_PYTHON} files and the programs `evil-python` and `bin/context-companion`, each writing a marker
 * file named after itself into `markers` (outside the folder) when it runs, and `.vscode/settings.json` holding
 * `settings`. Returns `{ markers, planted, found }`: `found()` lists the markers written so far. Exported so other
 * suites can plant more (settings that name files, ...).
 */
export function buildHostileWorkspace({ folder, markers, settings = {} }) {
  fs.mkdirSync(path.join(folder, '.git'), { recursive: true });
  fs.mkdirSync(markers, { recursive: true });
  fs.writeFileSync(path.join(folder, 'AGENTS.md'), `# Notes\n\n- ${HOSTILE_MEMORY}\n`);
  fs.writeFileSync(path.join(folder, '.cursorrules'), `${HOSTILE_MEMORY}\n`); // a file Claude Code does not read itself
  fs.mkdirSync(path.join(folder, 'src'), { recursive: true });
  fs.writeFileSync(path.join(folder, 'src', 'app.py'), 'print("hello")\n');
  const planted = [];
  const markerOf = (name) => path.join(markers, name.replace(/[/\\]/g, '_'));
  for (const name of PLANTED_PYTHON) {
    const file = path.join(folder, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `open(${JSON.stringify(markerOf(name))}, 'w').write('ran')\nraise SystemExit(7)\n`);
    planted.push(file);
  }
  for (const name of ['evil-python', 'bin/context-companion']) {
    const file = path.join(folder, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `#!/bin/sh\necho ran > '${markerOf(name)}'\nexit 7\n`, { mode: 0o755 });
    planted.push(file);
  }
  fs.mkdirSync(path.join(folder, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(folder, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
  const found = () => (fs.existsSync(markers) ? fs.readdirSync(markers).sort() : []);
  return { markers, planted, found };
}

/** Live processes (`[{pid, cmd, cwd}]`) whose command line contains `needle` and whose working folder or command names `base`. */
function processes(needle, base) {
  const out = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      if (!cmd.includes(needle)) continue;
      const cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
      if (cwd.startsWith(base) || cmd.includes(base)) out.push({ pid: Number(pid), cmd, cwd });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** `ctx`: {check, figure, log, browser, childEnv, scratch, artifacts, pidFile, env, setScreenshotPage}. */
export async function runHostileSuite(ctx) {
  const started = Date.now();
  for (const mode of ['trusted', 'restricted']) await runOne(ctx, mode);
  ctx.figure('hostile suite (both runs)', `${((Date.now() - started) / 1000).toFixed(1)} s`);
}

async function runOne(ctx, mode) {
  const { log, env } = ctx;
  const restricted = mode === 'restricted';
  const base = path.join(ctx.scratch, `hostile-${mode}`);
  const dirs = {
    home: path.join(base, 'home'),
    userData: path.join(base, 'user-data'),
    extensions: path.join(base, 'extensions'),
    workspace: path.join(base, 'hostile repo'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const launch = path.join(dirs.userData, 'User', 'globalStorage', EXTENSION_ID, 'launch');
  // Trusted: the workspace's settings count, so they name nothing to run (a trusted folder's serverCommand is
  // the user's choice); Restricted Mode: they name the folder's own programs, which must not run.
  const workspaceSettings = restricted
    ? {
        'contextCompanion.serverCommand': ['${workspaceFolder}/bin/context-companion', 'serve'],
        'contextCompanion.interpreter': '${workspaceFolder}/evil-python',
        'contextCompanion.server.autoInstall': true,
        'python.defaultInterpreterPath': '${workspaceFolder}/evil-python',
      }
    : { 'contextCompanion.trace.server': 'messages' };
  const fixture = buildHostileWorkspace({ folder: dirs.workspace, markers: path.join(base, 'markers'), settings: workspaceSettings });
  const runtime = path.join(base, 'runtime'); // discovery files of this run's servers only
  fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const childEnv = {
    ...ctx.childEnv,
    HOME: dirs.home,
    XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
    XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
    XDG_RUNTIME_DIR: runtime,
  };
  /** The language server's MCP endpoint is announced (`mcp --attach` finds it by its discovery file). */
  const mcpAnnounced = () => {
    const folder = path.join(runtime, 'context-companion');
    if (!fs.existsSync(folder)) return false;
    return fs.readdirSync(folder).some((name) => {
      if (!/^server-\d+-\d+\.json$/.test(name)) return false;
      try {
        const entry = JSON.parse(fs.readFileSync(path.join(folder, name), 'utf8'));
        return entry.transport === 'mcp-http' && (entry.workspaceFolders ?? []).includes(dirs.workspace);
      } catch {
        return false;
      }
    });
  };
  const userSettings = {
    ...QUIET_WORKBENCH,
    'contextCompanion.interpreter': env.E2E_PYTHON,
    ...(restricted
      ? {
          'security.workspace.trust.enabled': true,
          'security.workspace.trust.startupPrompt': 'never',
          'security.workspace.trust.banner': 'always',
          'security.workspace.trust.untrustedFiles': 'open',
        }
      : {}),
  };
  let codeServer;
  let context;
  let page;
  const extensionLog = () => {
    const found = [];
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (entry.name.includes('Context Companion')) found.push(fs.readFileSync(full, 'utf8'));
      }
    };
    try {
      walk(path.join(dirs.userData, 'logs'));
    } catch {
      /* none yet */
    }
    return found.join('\n');
  };
  const noMarkers = (when) => {
    const found = fixture.found();
    if (found.length) throw new Error(`planted files ran (${when}): ${found.join(', ')}`);
  };
  const label = `hostile (${restricted ? 'Restricted Mode' : 'trusted'})`;

  try {
    await ctx.check(
      `${label}: code-server opens a folder holding context_companion/, pydantic/, pygls/, sitecustomize.py, its own programs and .vscode/settings.json`,
      async () => {
        fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
        fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(userSettings, null, 2));
        const port = await freePort();
        codeServer = await launchCodeServer({
          argv: [env.CODE_SERVER_BIN],
          config: path.join(base, 'code-server.yaml'),
          port,
          userData: dirs.userData,
          extensions: dirs.extensions,
          env: childEnv,
          logFile: path.join(ctx.artifacts, `hostile-${mode}-code-server.log`),
          pidFile: ctx.pidFile,
          before: [['--install-extension', env.E2E_VSIX]],
          log,
          workspaceTrust: restricted,
        });
        context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
        page = await context.newPage();
        ctx.setScreenshotPage(page);
        await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
        await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
      },
      { required: true },
    );

    if (restricted) {
      await ctx.check(`${label}: the folder is open in Restricted Mode and the extension says so`, async () => {
        await waitFor('the Restricted Mode line in the extension log', () => extensionLog().includes('Restricted Mode: the server command comes from user settings only'), 60_000);
        const indicator = await page.evaluate(() =>
          [...document.querySelectorAll('.statusbar-item, .monaco-workbench .banner')].some((e) => /Restricted Mode/.test(e.textContent ?? '')),
        );
        if (!indicator) throw new Error('the workbench shows no Restricted Mode indicator');
      });
    }

    await ctx.check(`${label}: the real server answers (token count in the status bar), started from the launch folder with the user's Python`, async () => {
      const text = await waitFor(
        'a token count in the status bar, or a planted file run',
        async () => {
          const t = await statusText(page);
          return TOKENS.test(t) || fixture.found().length ? t || '(none)' : '';
        },
        120_000,
      );
      noMarkers('server start');
      log(`${label}: status bar: ${text}`);
      const servers = processes('context_companion serve', launch).filter((p) => p.cwd === launch);
      if (servers.length !== 1) throw new Error(`servers running in ${launch}: ${JSON.stringify(processes('context_companion serve', base))}`);
      const python = env.E2E_PYTHON_EXE ?? env.E2E_PYTHON;
      if (!servers[0].cmd.startsWith(python) && !servers[0].cmd.startsWith(env.E2E_PYTHON)) {
        throw new Error(`the server is not the user's Python (${python}): ${servers[0].cmd}`);
      }
      const started = extensionLog().match(/Server command \(([^)]*)\): (.*)/);
      log(`${label}: ${started?.[0] ?? '(no server command line logged)'}`);
      if (!started || started[1] !== 'from contextCompanion.interpreter' || !started[2].startsWith(env.E2E_PYTHON)) {
        throw new Error(`not started from the user's interpreter setting: ${started?.[0]}`);
      }
      noMarkers('server start');
    });

    if (!restricted) {
      await ctx.check(`${label}: VS Code starts our MCP server from the launch folder (--workspace names the folder)`, async () => {
        const row = () => page.locator('.quick-input-list .monaco-list-row', { hasText: 'Context Companion' }).first();
        await runFromPalette(page, 'MCP: List Servers');
        await row().waitFor({ state: 'visible', timeout: 30_000 });
        await row().click();
        const start = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Start Server' }).first();
        await start.waitFor({ state: 'visible', timeout: 15_000 });
        await start.click();
        const mcp = await waitFor('a running `context_companion mcp --attach` process', () => processes('context_companion mcp --attach', dirs.workspace)[0], 60_000);
        log(`${label}: MCP server: ${mcp.cmd} (in ${mcp.cwd})`);
        if (mcp.cwd !== launch) throw new Error(`the MCP server runs in ${mcp.cwd}, not ${launch}`);
        if (!mcp.cmd.includes(`--workspace ${dirs.workspace}`)) throw new Error(`not given the workspace: ${mcp.cmd}`);
        await waitFor(
          'the MCP server to be listed as Running',
          async () => {
            await runFromPalette(page, 'MCP: List Servers');
            await row().waitFor({ state: 'visible', timeout: 15_000 });
            const text = ((await row().textContent()) ?? '').replace(/\s+/g, ' ');
            await page.keyboard.press('Escape');
            return /Running/.test(text) ? text : /Error/.test(text) ? Promise.reject(new Error(text)) : '';
          },
          60_000,
          1_000,
        );
        // The endpoint opens when VS Code resolves the MCP server (listenOnRequest), and the relay waits for it.
        if (!mcpAnnounced()) throw new Error("the MCP server runs but the language server announced no MCP endpoint");
        noMarkers('MCP server');
      });
    }

    await ctx.check(`${label}: "Connect Agent Memory Hooks…" runs setup; the hook it wrote, run in the project as an agent runs it, gives the memory`, async () => {
      await runFromPalette(page, 'Context Companion: Connect Agent Memory Hooks…');
      const claude = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Claude Code' }).first();
      await claude.waitFor({ state: 'visible', timeout: 15_000 });
      await claude.click();
      const settingsFile = path.join(dirs.workspace, '.claude', 'settings.local.json');
      const command = await waitFor(
        'setup to write .claude/settings.local.json',
        () => {
          if (!fs.existsSync(settingsFile)) return '';
          return JSON.parse(fs.readFileSync(settingsFile, 'utf8')).hooks?.UserPromptSubmit?.[0]?.hooks?.[0]?.command ?? '';
        },
        60_000,
      );
      log(`${label}: hook command: ${command}`);
      const setupRun = extensionLog().match(/Connect Agent Memory Hooks: (\S+.*--workspace.*)/);
      if (!setupRun) throw new Error('the setup command line is not in the extension log');
      noMarkers('setup');
      const output = await new Promise((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', command], { env: childEnv, cwd: dirs.workspace, stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (c) => (out += c));
        child.stderr.on('data', (c) => (err += c));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`the hook exited ${code}: ${err.trim()}`))));
        child.stdin.end(JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: `hostile-${mode}`, cwd: dirs.workspace, prompt: 'hi' }));
      });
      if (!output.includes('MAGENTA-3141')) throw new Error(`the hook did not give the memory: ${output.slice(0, 300) || '(nothing)'}`);
      log(`${label}: the hook printed ${output.length} characters with the memory`);
      noMarkers('the hook');
    });

    await ctx.check(`${label}: no planted file ran (markers folder empty), and no process of ours runs in the workspace`, async () => {
      noMarkers('the end');
      const inWorkspace = processes('context_companion', dirs.workspace).filter((p) => p.cwd === dirs.workspace);
      if (inWorkspace.length) throw new Error(`running in the workspace: ${inWorkspace.map((p) => p.cmd).join(' | ')}`);
      if (fs.readdirSync(launch).length) throw new Error(`the launch folder is not empty: ${fs.readdirSync(launch).join(', ')}`);
    });
  } finally {
    if (fixture.found().length || process.env.E2E_DUMP_LOG === '1') console.error(extensionLog().slice(-5000));
    await context?.close().catch(() => undefined);
    await stopCodeServerProcess(codeServer);
  }
}
