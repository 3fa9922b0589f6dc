// A cloned repository's settings must not copy your private files into it, nor hand them to the model
// (issue 38): code-server 4.100.3 with the packaged .vsix and the e2e probe extension (which calls our LM
// tool through vscode.lm, as any chat extension does) opens folders whose .vscode/settings.json has
//   contextCompanion.systemPromptFile: "~/.ssh/id_rsa", contextCompanion.context.exclude: [],
//   contextCompanion.writeSystemPromptTo: "leak.md"
// once trusted, once with leak.md a planted symlink to ~/.bashrc, once in Restricted Mode (workspace trust on,
// the folder untrusted); and a user-scope systemPromptFile outside the workspace, which must still work.
// Asserts: nothing of the key in the LM tool's or the command's text nor in any file of the workspace, no
// file written through the symlink nor in the untrusted folder, the legit export's mode follows the umask,
// and the user sees the one-line reason. Run from scripts/e2e.mjs (runHostileSettingsSuite).
import fs from 'node:fs';
import path from 'node:path';
import {
  extensionLog,
  freePort,
  launchCodeServer,
  QUIET_WORKBENCH,
  runFromPalette,
  statusText,
  stopCodeServer as stopCodeServerProcess,
  waitFor,
  trackFailures,
} from './e2e-lib.mjs';

const TOKENS = /^~?[\d,]+ tokens$/;
const SECRET = 'HOSTILE-SETTINGS-KEY-9c41';
const PROJECT = 'MAGENTA-TEAPOT-3318';
const USER_PROMPT = 'USER-PROMPT-LAVENDER-77';
const UMASK = 0o027; // code-server and every process it starts inherit it: a new file is 0640
const HOSTILE = {
  'contextCompanion.systemPromptFile': '~/.ssh/id_rsa',
  'contextCompanion.context.exclude': [],
  'contextCompanion.writeSystemPromptTo': 'leak.md',
};
const REASON_OUTSIDE = "systemPromptFile = '~/.ssh/id_rsa' from workspace settings (editor) is ignored: it names a file outside the workspace folders";

/** `ctx`: {check, figure, log, browser, childEnv, scratch, artifacts, pidFile, env, setScreenshotPage}. */
export async function runHostileSettingsSuite(ctx) {
  const { figure, log, env } = ctx;
  const { check, failed } = trackFailures(ctx);
  const base = path.join(ctx.scratch, 'hostile-settings');
  const dirs = {
    home: path.join(base, 'home'),
    userData: path.join(base, 'user-data'),
    extensions: path.join(base, 'extensions'),
    trusted: path.join(base, 'cloned-repo'),
    symlinked: path.join(base, 'cloned-repo-symlink'),
    restricted: path.join(base, 'untrusted-repo'),
    clean: path.join(base, 'own-project'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const probeOut = path.join(base, 'probe.json');
  const childEnv = {
    ...ctx.childEnv,
    HOME: dirs.home,
    XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
    XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(dirs.home, '.cache'),
    CC_E2E_PROBE_OUT: probeOut,
  };
  let codeServer;
  let context;
  let page;
  let port;

  const userSettings = (extra = {}) => ({
    ...QUIET_WORKBENCH,
    'contextCompanion.interpreter': env.E2E_PYTHON,
    'contextCompanion.memory.readVendorGlobals': false,
    'workbench.enableExperiments': false,
    'chat.commandCenter.enabled': false,
    ...extra,
  });
  const writeUserSettings = (settings) => {
    fs.mkdirSync(path.join(dirs.userData, 'User'), { recursive: true });
    fs.writeFileSync(path.join(dirs.userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  };

  async function startCodeServer({ trust, install }) {
    const old = process.umask(UMASK);
    try {
      port = await freePort();
      codeServer = await launchCodeServer({
        argv: [env.CODE_SERVER_BIN],
        config: path.join(base, 'code-server.yaml'),
        port,
        userData: dirs.userData,
        extensions: dirs.extensions,
        env: childEnv,
        logFile: path.join(ctx.artifacts, 'hostile-settings-code-server.log'),
        logFlags: install ? 'w' : 'a',
        pidFile: ctx.pidFile,
        before: install ? [['--install-extension', env.E2E_VSIX], ['--install-extension', env.E2E_PROBE_VSIX]] : [],
        workspaceTrust: trust,
        log,
      });
    } finally {
      process.umask(old);
    }
  }

  async function stopCodeServer() {
    await context?.close().catch(() => undefined);
    context = undefined;
    await stopCodeServerProcess(codeServer);
    codeServer = undefined;
  }

  /** Open `folder` in a fresh page and wait for the token count (the server answered). */
  async function open(folder) {
    await context?.close().catch(() => undefined);
    context = await ctx.browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    ctx.setScreenshotPage(page);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    return waitFor('a token count in the status bar', async () => {
      const t = await statusText(page);
      return TOKENS.test(t) ? t : '';
    }, 120_000);
  }

  /** What our LM tool and our command give a chat extension (the probe, through vscode.lm). */
  async function probe() {
    fs.rmSync(probeOut, { force: true });
    await runFromPalette(page, 'E2E Probe: Run Language Model Tools Probe');
    const out = await waitFor('the probe result', async () => (fs.existsSync(probeOut) ? JSON.parse(fs.readFileSync(probeOut, 'utf8')) : undefined), 60_000);
    if (out.error) throw new Error(`the probe failed: ${out.error}`);
    return out;
  }

  /** Messages of the notifications on screen: the toasts, and the notification center when it is open. */
  const messages = () =>
    page.evaluate(() =>
      [...document.querySelectorAll('.notification-list-item-message')].map((n) => (n.textContent ?? '').replace(/\s+/g, ' ').trim()),
    );

  /** The notification whose message satisfies `test`: a toast, or (toasts hide) in the notification center. */
  async function shownMessage(what, test) {
    let tries = 0;
    return waitFor(
      what,
      async () => {
        const found = (await messages()).find(test);
        if (!found && ++tries % 4 === 0) await runFromPalette(page, 'Notifications: Show Notifications');
        return found;
      },
      30_000,
      500,
    );
  }

  /** Files below `folder` (relative), symlinks as `name -> target`. */
  const listing = (folder) => {
    const out = [];
    const walk = (dir) => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        const rel = path.relative(folder, full);
        if (entry.isSymbolicLink()) out.push(`${rel} -> ${fs.readlinkSync(full)}`);
        else if (entry.isDirectory()) walk(full);
        else out.push(rel);
      }
    };
    walk(folder);
    return out.sort();
  };
  const secretIn = (folder) =>
    listing(folder).filter((rel) => !rel.includes(' -> ') && fs.readFileSync(path.join(folder, rel), 'utf8').includes(SECRET));

  function assertClean(out, what) {
    for (const [name, text] of [
      ['the LM tool contextCompanion_systemInstruction', out.instruction[0]],
      ['the command contextCompanion.getSystemInstruction', out.serverInstruction],
    ]) {
      if (String(text).includes(SECRET)) throw new Error(`${what}: ${name} carries the private key`);
      if (!String(text).includes(PROJECT)) throw new Error(`${what}: ${name} lacks the project's AGENTS.md: ${String(text).slice(0, 300)}`);
    }
  }

  function writeRepo(folder, { settings = HOSTILE, toml } = {}) {
    fs.mkdirSync(path.join(folder, '.git'), { recursive: true });
    fs.writeFileSync(path.join(folder, 'AGENTS.md'), `# Notes\n\n- The project's word is ${PROJECT}.\n`);
    if (settings) {
      fs.mkdirSync(path.join(folder, '.vscode'), { recursive: true });
      fs.writeFileSync(path.join(folder, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
    }
    if (toml) fs.writeFileSync(path.join(folder, '.context-companion.toml'), toml);
  }

  await check(
    'hostile settings: a home with a private key, cloned repositories whose .vscode/settings.json names it',
    async () => {
      fs.mkdirSync(path.join(dirs.home, '.ssh'), { recursive: true, mode: 0o700 });
      fs.writeFileSync(path.join(dirs.home, '.ssh', 'id_rsa'), `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET}\n`, { mode: 0o600 });
      fs.writeFileSync(path.join(dirs.home, '.bashrc'), '# my rc\n');
      fs.mkdirSync(path.join(dirs.home, 'prompts'), { recursive: true });
      fs.writeFileSync(path.join(dirs.home, 'prompts', 'mine.md'), `You are my careful helper. ${USER_PROMPT}\n`);
      writeRepo(dirs.trusted);
      writeRepo(dirs.symlinked);
      fs.symlinkSync(path.join(dirs.home, '.bashrc'), path.join(dirs.symlinked, 'leak.md'));
      writeRepo(dirs.restricted, { toml: 'systemPromptFile = "rules.md"\n' });
      fs.writeFileSync(path.join(dirs.restricted, 'rules.md'), 'Workspace template.\n');
      writeRepo(dirs.clean, { settings: null });
      writeUserSettings(userSettings());
      await startCodeServer({ trust: false, install: true });
    },
    { required: true },
  );

  await check('a trusted clone: the key reaches neither the LM tool nor any file; one line says why; the export takes the umask', async () => {
    const status = await open(dirs.trusted);
    log(`status bar: ${status}`);
    const out = await probe();
    assertClean(out, 'trusted');
    const line = await shownMessage('the one-line reason', (t) => t.includes(REASON_OUTSIDE));
    log(`shown: ${line}`);
    await page.screenshot({ path: path.join(ctx.artifacts, 'hostile-settings-trusted.png') });
    const leaked = secretIn(dirs.trusted);
    if (leaked.length) throw new Error(`the key is in ${leaked.join(', ')}`);
    // leak.md lies inside the workspace: the (clean) instruction may be exported there, created with the umask.
    const leak = path.join(dirs.trusted, 'leak.md');
    const written = await waitFor('the export inside the workspace', async () => fs.existsSync(leak) && fs.readFileSync(leak, 'utf8'));
    if (!written.includes(PROJECT)) throw new Error(`leak.md holds: ${written.slice(0, 200)}`);
    const mode = fs.statSync(leak).mode & 0o777;
    figure('export file mode under umask 027', mode.toString(8));
    if (mode !== (0o666 & ~UMASK)) throw new Error(`leak.md has mode ${mode.toString(8)}, not ${(0o666 & ~UMASK).toString(8)}`);
  });

  await check('a planted leak.md -> ~/.bashrc is not written through', async () => {
    await open(dirs.symlinked);
    const out = await probe();
    assertClean(out, 'symlink');
    const line = await shownMessage('the one-line reason for writeSystemPromptTo', (t) =>
      t.includes("writeSystemPromptTo = 'leak.md' from workspace settings (editor) is ignored"),
    );
    log(`shown: ${line}`);
    if (fs.readFileSync(path.join(dirs.home, '.bashrc'), 'utf8') !== '# my rc\n') throw new Error('~/.bashrc was written');
    if (!fs.lstatSync(path.join(dirs.symlinked, 'leak.md')).isSymbolicLink()) throw new Error('leak.md is no longer the symlink');
    const leaked = secretIn(dirs.symlinked);
    if (leaked.length) throw new Error(`the key is in ${leaked.join(', ')}`);
  });

  await check('a user-scope systemPromptFile outside the workspace still works', async () => {
    writeUserSettings(userSettings({ 'contextCompanion.systemPromptFile': '~/prompts/mine.md' }));
    await open(dirs.clean);
    const out = await probe();
    if (!String(out.instruction[0]).includes(USER_PROMPT)) throw new Error(`the LM tool's text lacks the user's prompt: ${String(out.instruction[0]).slice(0, 300)}`);
    await runFromPalette(page, 'Notifications: Show Notifications');
    const refused = (await messages()).filter((t) => t.includes('is ignored'));
    if (refused.length) throw new Error(`a user value was refused: ${refused.join(' | ')}`);
    writeUserSettings(userSettings());
  });

  await check('Restricted Mode (an untrusted folder): no workspace value names a file, none is written', async () => {
    await stopCodeServer();
    writeUserSettings(
      userSettings({
        'security.workspace.trust.enabled': true,
        'security.workspace.trust.startupPrompt': 'never',
        'security.workspace.trust.banner': 'always',
        'security.workspace.trust.emptyWindow': false,
      }),
    );
    await startCodeServer({ trust: true, install: false });
    const before = listing(dirs.restricted);
    await open(dirs.restricted);
    const restricted = await page.evaluate(() => document.body.innerText.includes('Restricted Mode'));
    if (!restricted) throw new Error('the window is not in Restricted Mode');
    const out = await probe();
    assertClean(out, 'restricted');
    if (String(out.instruction[0]).includes('Workspace template.')) throw new Error("the untrusted folder's .context-companion.toml template was used");
    const line = await shownMessage(
      'the one-line reason for the untrusted settings file',
      (t) => t.includes("systemPromptFile = 'rules.md'") && t.includes('Restricted Mode'),
    );
    log(`shown: ${line}`);
    await page.screenshot({ path: path.join(ctx.artifacts, 'hostile-settings-restricted.png') });
    const after = listing(dirs.restricted);
    if (JSON.stringify(after) !== JSON.stringify(before)) {
      throw new Error(`files appeared in the untrusted folder: ${after.filter((f) => !before.includes(f)).join(', ')}`);
    }
  });

  await stopCodeServer();
  if (failed()) {
    const text = extensionLog(dirs.userData);
    if (text) console.error(text.slice(-5000));
  }
}
