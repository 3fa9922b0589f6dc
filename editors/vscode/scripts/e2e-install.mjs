// A machine without the server, end to end: code-server 4.100.3 with only the packaged .vsix, a bare
// `python3` first on PATH (a fresh venv without context_companion), no settings of ours. The extension finds
// no server, offers its own; one click on Install puts the wheel the .vsix carries into a venv in its global
// storage (dependencies from the machine's package index settings) and starts it: the status bar shows the
// token count. A second start of VS Code starts that server without asking. Prints the seconds from opening
// VS Code to the token count, both times. Run from scripts/e2e.mjs (runInstallSuite).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  extensionLog,
  freePort,
  launchCodeServer,
  QUIET_WORKBENCH,
  sleep,
  statusText,
  stopCodeServer as stopCodeServerProcess,
  waitFor,
  trackFailures,
} from './e2e-lib.mjs';

const run = promisify(execFile);
const TOKENS = /^~?[\d,]+ tokens$/;
const EXTENSION_ID = 'context-companion.context-companion';

/** `ctx`: {check, figure, log, browser, childEnv, scratch, artifacts, pidFile, env, setScreenshotPage}. */
export async function runInstallSuite(ctx) {
  const { figure, log, env } = ctx;
  const { check, failed } = trackFailures(ctx);
  const base = path.join(ctx.scratch, 'install');
  const dirs = {
    home: path.join(base, 'home'),
    userData: path.join(base, 'user-data'),
    extensions: path.join(base, 'extensions'),
    workspace: path.join(base, 'workspace'),
    bare: path.join(base, 'bare-python'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const storage = path.join(dirs.userData, 'User', 'globalStorage', EXTENSION_ID, 'server');
  const childEnv = { ...ctx.childEnv };
  delete childEnv.VIRTUAL_ENV;
  delete childEnv.PYTHONPATH;
  Object.assign(childEnv, {
    HOME: dirs.home,
    XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
    XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(dirs.home, '.cache'), // pip's cache: empty, as on a new machine
    PATH: `${path.join(dirs.bare, 'bin')}${path.delimiter}${ctx.childEnv.PATH ?? ''}`,
  });
  let codeServer;
  let context;
  let page;

  async function startCodeServer(port, install) {
    codeServer = await launchCodeServer({
      argv: [env.CODE_SERVER_BIN],
      config: path.join(base, 'code-server.yaml'),
      port,
      userData: dirs.userData,
      extensions: dirs.extensions,
      env: childEnv,
      logFile: path.join(ctx.artifacts, 'install-code-server.log'),
      logFlags: install ? 'w' : 'a',
      pidFile: ctx.pidFile,
      before: install ? [['--install-extension', env.E2E_VSIX]] : [],
      log,
      everyMs: 250,
    });
  }

  async function stopCodeServer() {
    await context?.close().catch(() => undefined);
    context = undefined;
    await stopCodeServerProcess(codeServer);
    codeServer = undefined;
  }

  /** Open the workbench on the workspace; the time of the call (the "opening VS Code" instant). */
  async function openWorkbench(port) {
    context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    ctx.setScreenshotPage(page);
    const opened = Date.now();
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    return opened;
  }

  /** Visible notification toasts: [{text, buttons}]. */
  const toasts = () =>
    page.evaluate(() =>
      [...document.querySelectorAll('.notifications-toasts .notification-list-item')].map((n) => ({
        text: (n.querySelector('.notification-list-item-message')?.textContent ?? '').replace(/\s+/g, ' ').trim(),
        buttons: [...n.querySelectorAll('.monaco-button')].map((b) => (b.textContent ?? '').trim()),
      })),
    );

  const tokenCount = (timeoutMs) =>
    waitFor(
      'a token count in the status bar',
      async () => {
        const t = await statusText(page);
        if (TOKENS.test(t)) return t;
        const failed = (await toasts()).find((n) => /Context Companion: (The server|Installing|The server's)/.test(n.text));
        if (failed) throw new Error(`the extension says: ${failed.text}`);
        return '';
      },
      timeoutMs,
      200,
    );

  const serverProcesses = () =>
    fs
      .readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .flatMap((pid) => {
        try {
          const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
          return cmd.includes('context_companion') && cmd.includes('serve') && cmd.join(' ').includes(base) ? [cmd] : [];
        } catch {
          return [];
        }
      });

  const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const dumpLog = () => {
    const text = extensionLog(dirs.userData);
    if (text) console.error(text.slice(-5000));
  };

  await check(
    'a machine without the server: code-server with only the .vsix, a bare python3 first on PATH, no settings of ours',
    async () => {
      fs.mkdirSync(path.join(dirs.workspace, '.git'), { recursive: true });
      fs.writeFileSync(path.join(dirs.workspace, 'AGENTS.md'), '# Notes\n\n- Installed from the .vsix alone.\n');
      fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
      fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(QUIET_WORKBENCH, null, 2));
      await run(env.E2E_PYTHON_EXE, ['-m', 'venv', dirs.bare], { env: childEnv, timeout: 120_000 });
      // VS Code's server takes the extension host's environment from a login shell (as a desktop VS Code
      // does): the user's profile puts the bare venv first, as a user's would for their Python.
      fs.writeFileSync(path.join(dirs.home, '.profile'), `export PATH=${path.join(dirs.bare, 'bin')}:"$PATH"\n`);
      const probe = await run('python3', ['-c', 'import sys\ntry:\n import context_companion\nexcept ImportError:\n print(sys.executable)'], {
        env: childEnv,
      });
      if (probe.stdout.trim() !== path.join(dirs.bare, 'bin', 'python3')) {
        throw new Error(`python3 on the test's PATH is not the bare venv, or it imports context_companion: ${probe.stdout.trim() || '(imports it)'}`);
      }
      const version = (await run('python3', ['--version'], { env: childEnv })).stdout.trim();
      figure('bare python3', `${version} (${dirs.bare}), no context_companion`);
    },
    { required: true },
  );

  await check(
    'no Python 3.10+ on PATH (python3 is 3.8, no uv): no Install offer, one message naming what is missing and how to get it; the status bar says "Python needed", no error',
    async () => {
      // A machine whose newest Python is 3.8: every program of /usr/bin but the Pythons and uv, and a python3
      // that answers as Python 3.8 does (a stand-in: this machine has no 3.8 to install).
      const bin = path.join(base, 'no-python', 'bin');
      fs.mkdirSync(bin, { recursive: true });
      for (const dir of ['/usr/local/bin', '/usr/bin']) {
        for (const name of fs.readdirSync(dir)) {
          if (/^(python|pip|uv$|uvx$|pydoc|idle)/.test(name) || fs.existsSync(path.join(bin, name))) continue;
          fs.symlinkSync(path.join(dir, name), path.join(bin, name));
        }
      }
      const answer = JSON.stringify({ executable: path.join(bin, 'python3'), version: [3, 8, 10], venv: false, externallyManaged: false });
      fs.writeFileSync(
        path.join(bin, 'python3'),
        [
          '#!/bin/sh',
          'case "$*" in',
          '  --version) echo "Python 3.8.10" ;;',
          `  *sysconfig*) echo '${answer}' ;;`,
          '  *) echo "ModuleNotFoundError: No module named \'context_companion\'" >&2; exit 1 ;;',
          'esac',
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      const profile = path.join(dirs.home, '.profile');
      const kept = { profile: fs.readFileSync(profile, 'utf8'), PATH: childEnv.PATH };
      fs.writeFileSync(profile, `export PATH=${bin}\n`);
      childEnv.PATH = bin;
      try {
        const port = await freePort();
        await startCodeServer(port, true);
        await openWorkbench(port);
        const message = await waitFor(
          'the message that a Python 3.10+ is needed',
          async () => (await toasts()).find((n) => n.text.includes('needs Python 3.10 or newer')),
          120_000,
          200,
        );
        log(`message: ${message.text} [${message.buttons.join('] [')}]`);
        if (!message.text.includes('python3 is 3.8.10')) throw new Error(`the message does not name the Python found: ${message.text}`);
        if (!message.buttons.includes('Copy Command')) throw new Error(`no Copy Command button: ${message.buttons.join(', ')}`);
        const status = await waitFor('the status bar', async () => statusText(page), 30_000);
        figure('status bar with no Python 3.10+', status);
        if (status !== 'Context Companion: Python needed') throw new Error(`the status bar says ${status}`);
        const offers = (await toasts()).filter((n) => n.buttons.includes('Install') || /error/i.test(n.text));
        if (offers.length) throw new Error(`offered or failed: ${offers.map((n) => n.text).join(' | ')}`);
        await page.screenshot({ path: path.join(ctx.artifacts, 'install-no-python.png') });
      } finally {
        await stopCodeServer();
        fs.writeFileSync(profile, kept.profile);
        childEnv.PATH = kept.PATH;
      }
    },
  );

  await check(
    'first start: one click on Install, a progress notification, then the token count in the status bar',
    async () => {
      const port = await freePort();
      await startCodeServer(port, true);
      const opened = await openWorkbench(port);
      const offer = await waitFor(
        'the offer to install the server',
        async () => (await toasts()).find((n) => n.text.includes('no server found') && n.buttons.includes('Install')),
        120_000,
        200,
      );
      const offered = Date.now();
      log(`offer: ${offer.text} [${offer.buttons.join('] [')}]`);
      if (/install context-companion|pip install/.test(offer.text)) throw new Error(`the offer names a package to install: ${offer.text}`);
      const waiting = await statusText(page);
      figure('status bar while the Install offer waits', waiting);
      if (waiting !== 'Context Companion: install needed') throw new Error(`the status bar says ${waiting} while the offer waits`);
      await page.screenshot({ path: path.join(ctx.artifacts, 'install-offer.png') });
      await page
        .locator('.notifications-toasts .notification-list-item', { hasText: 'no server found' })
        .locator('.monaco-button', { hasText: /^Install$/ })
        .click();
      const clicked = Date.now();
      const progress = await waitFor(
        'the progress notification',
        async () => (await toasts()).find((n) => n.text.includes('installing the server')),
        60_000,
        100,
      ).catch(() => undefined);
      if (progress) log(`progress: ${progress.text}`);
      const text = await tokenCount(15 * 60_000);
      const done = Date.now();
      if (!progress) throw new Error('no progress notification was seen while installing');
      log(`status bar: ${text}`);
      await page.screenshot({ path: path.join(ctx.artifacts, 'install-done.png') });
      const envs = fs.existsSync(storage) ? fs.readdirSync(storage).filter((d) => d.startsWith('env-')) : [];
      if (envs.length !== 1) throw new Error(`environments in ${storage}: ${envs.join(', ') || '(none)'}`);
      const servers = serverProcesses();
      const python = path.join(storage, envs[0], 'bin', 'python');
      if (!servers.some((cmd) => cmd[0] === python)) {
        throw new Error(`no server runs from ${python}: ${servers.map((c) => c.join(' ')).join(' | ') || '(none)'}`);
      }
      const marker = JSON.parse(fs.readFileSync(path.join(storage, envs[0], 'context-companion-install.json'), 'utf8'));
      if (marker.basePython !== path.join(dirs.bare, 'bin', 'python3')) throw new Error(`made from ${marker.basePython}, not the bare python3`);
      figure('first start (install), opening VS Code → token count', seconds(done - opened));
      figure('  of which: opening → Install offered', seconds(offered - opened));
      figure('  of which: click → token count (venv, pip install of the wheel and its dependencies, server start)', seconds(done - clicked));
    },
    { required: true },
  );

  await check('second start: the installed server starts without asking, the token count shows', async () => {
    await stopCodeServer();
    const port = await freePort();
    await startCodeServer(port, false);
    const opened = await openWorkbench(port);
    const text = await tokenCount(180_000);
    const done = Date.now();
    log(`status bar: ${text}`);
    const offers = (await toasts()).filter((n) => /no server found|installing the server/.test(n.text));
    if (offers.length) throw new Error(`asked or installed again: ${offers.map((n) => n.text).join(' | ')}`);
    figure('second start, opening VS Code → token count', seconds(done - opened));
  });

  await stopCodeServer();
  if (failed()) dumpLog();
}
