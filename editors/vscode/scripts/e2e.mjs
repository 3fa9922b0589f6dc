// End-to-end test of the extension in code-server, driven by playwright-core + Debian's Chromium.
// Run it through scripts/e2e.sh, which builds the .vsix, installs code-server and sets:
//   CODE_SERVER_BIN, E2E_SCRATCH, E2E_VSIX, E2E_PROBE_VSIX, E2E_PYTHON, E2E_ARTIFACTS, E2E_DOCS_IMAGES,
//   and optionally E2E_UPDATE_DOCS=1 (copy the screenshots into the docs).
// Prints one line per check and "N passed, N failed" last; exit status 1 when any check failed.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { runChatSuite } from './e2e-chat.mjs';
import { runHooksSuite } from './e2e-hooks.mjs';
import { runHostileSuite } from './e2e-hostile.mjs';
import { runHostileSettingsSuite } from './e2e-hostile-settings.mjs';
import { runInstallSuite } from './e2e-install.mjs';
import {
  commonPrefixBytes,
  extensionLog as extensionLogIn,
  freePort,
  QUIET_WORKBENCH,
  runFromPalette as paletteOn,
  sleep,
  startStub as startModelStub,
  statusText as statusTextOn,
  waitFor,
} from './e2e-lib.mjs';

const run = promisify(execFile);
const env = process.env;
for (const name of ['CODE_SERVER_BIN', 'E2E_SCRATCH', 'E2E_VSIX', 'E2E_PROBE_VSIX', 'E2E_PYTHON', 'E2E_ARTIFACTS']) {
  if (!env[name]) {
    console.error(`[e2e] ${name} is not set: run scripts/e2e.sh`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
}

const scratch = env.E2E_SCRATCH;
const artifacts = env.E2E_ARTIFACTS;
const dirs = {
  home: path.join(scratch, 'home'),
  userData: path.join(scratch, 'user-data'),
  extensions: path.join(scratch, 'extensions'),
  workspace: path.join(scratch, 'workspace'),
  tmp: path.join(scratch, 'tmp'),
};
for (const dir of [...Object.values(dirs), artifacts]) fs.mkdirSync(dir, { recursive: true });
for (const old of fs.readdirSync(artifacts)) if (old.startsWith('failure-')) fs.rmSync(path.join(artifacts, old));

const MARKER = 'PERIWINKLE-4711';
const EDIT_MARKER = 'TANGERINE-2024';
const ADDED_FACT = 'Prefer small commits with a one-line why';
const agentsMd = path.join(dirs.workspace, 'AGENTS.md');

// ------------------------------------------------------------------------------------ helpers

const log = (line) => console.error(`[e2e] ${line}`);
const childEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('VSCODE_') && !k.startsWith('E2E_')));
Object.assign(childEnv, {
  HOME: dirs.home,
  XDG_CONFIG_HOME: path.join(dirs.home, '.config'),
  XDG_DATA_HOME: path.join(dirs.home, '.local', 'share'),
  XDG_CACHE_HOME: path.join(dirs.home, '.cache'),
  XDG_RUNTIME_DIR: path.join(dirs.tmp, 'runtime'),
  TMPDIR: dirs.tmp,
  CC_E2E_PROBE_OUT: path.join(scratch, 'probe.json'), // where the probe extension writes what it got
});
fs.mkdirSync(childEnv.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });

const results = [];
let prerequisiteFailed = false;

/** Run one check; a failed `required` check makes the later ones fail as "not run". */
async function check(name, fn, { required = false } = {}) {
  if (prerequisiteFailed) {
    results.push({ name, ok: false });
    console.error(`not ok - ${name}: not run, an earlier required check failed`);
    return;
  }
  try {
    await fn();
    results.push({ name, ok: true });
    console.error(`ok - ${name}`);
  } catch (err) {
    results.push({ name, ok: false });
    console.error(`not ok - ${name}: ${err?.message ?? err}`);
    if (page) {
      const file = path.join(artifacts, `failure-${results.length}.png`);
      await page.screenshot({ path: file }).catch(() => undefined);
      console.error(`       screenshot: ${file}`);
    }
    if (required) prerequisiteFailed = true;
  }
}

// ------------------------------------------------------------------------------------ workbench helpers

let page;

/** The Context Companion status bar entry's text (icons dropped), or '' when it is not shown. */
const statusText = () => statusTextOn(page);

const quickInput = () => page.locator('.quick-input-widget');
const quickInputBox = () => page.locator('.quick-input-widget .quick-input-box input');

async function openQuickInput(prefix) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  await quickInputBox().waitFor({ state: 'visible', timeout: 10_000 });
  await quickInputBox().fill(prefix);
}

/** Run a command from the palette by its full label ("Category: Title"). */
const runFromPalette = (label) => paletteOn(page, label);

/** Text of the active editor's visible lines (Monaco renders spaces as U+00A0). */
async function activeEditorText() {
  return page.evaluate(() => {
    const lines = document.querySelector('.editor-group-container.active .monaco-editor .view-lines');
    return (lines?.textContent ?? '').replace(/\u00a0/g, ' ');
  });
}

async function activeTabTitle() {
  return page.evaluate(() => {
    const tab = document.querySelector('.editor-group-container.active .tab.active');
    return tab?.getAttribute('aria-label') ?? tab?.textContent ?? '';
  });
}

async function focusActiveEditor() {
  await page.locator('.editor-group-container.active .monaco-editor .overflow-guard').first().click({ position: { x: 200, y: 60 } });
}

/** Visible notification toasts: message and button labels. */
async function notifications() {
  return page.evaluate(() =>
    [...document.querySelectorAll('.notifications-toasts .notification-list-item')].map((n) => {
      const message = n.querySelector('.notification-list-item-message')?.textContent ?? '';
      const buttons = [...n.querySelectorAll('.monaco-button')].map((b) => b.textContent ?? '');
      return [message, ...buttons].join(' ').replace(/\s+/g, ' ').trim();
    }),
  );
}

async function clearNotifications() {
  await page.keyboard.press('Escape');
  await page
    .evaluate(() => {
      for (const b of document.querySelectorAll('.notifications-toasts .codicon-notifications-clear, .notification-toast .codicon-close')) b.click();
    })
    .catch(() => undefined);
}

/** Change user settings the way a user does: edit settings.json in VS Code and save. */
async function editUserSettings(extra) {
  await runFromPalette('Preferences: Open User Settings (JSON)');
  await waitFor('settings.json to open', async () => (await activeTabTitle()).includes('settings.json'));
  await focusActiveEditor();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(JSON.stringify({ ...userSettings(), ...extra }, null, 2));
  await page.keyboard.press('Control+S');
}

/** Error messages the server or the extension showed. */
async function errorNotifications() {
  return (await notifications()).filter((n) => /unknown setting|Context Companion: (the|The) server|cannot import|not installed/i.test(n));
}

// ------------------------------------------------------------------------------------ language model tools

const TOOL_NAMES = ['contextCompanion_memoryFiles', 'contextCompanion_systemInstruction', 'contextCompanion_turnContext'];
const AGENTS_BLOCK = '--- Context from: AGENTS.md ---';

/**
 * Run the probe extension's palette command: it lists `vscode.lm.tools` and calls `vscode.lm.invokeTool`
 * from its own extension host code, as a chat extension does, and writes what it got to a JSON file.
 */
async function runProbe() {
  const file = childEnv.CC_E2E_PROBE_OUT;
  fs.rmSync(file, { force: true });
  await runFromPalette('E2E Probe: Run Language Model Tools Probe');
  const out = await waitFor('the probe result', async () => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined), 60_000);
  if (out.error) throw new Error(`the probe failed: ${out.error}`);
  return out;
}

/** Live processes whose command line (joined by spaces) contains `needle`: [{pid, cmd}]. */
function processes(needle) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let cmd;
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    } catch {
      continue;
    }
    if (cmd.includes(needle)) found.push({ pid: Number(pid), cmd });
  }
  return found;
}

/** The language server of the workspace's window: the `context_companion serve` process VS Code started. */
function serverProcess() {
  // This run's (other checkouts may run servers of their own): the scratch HOME is in its environment.
  const ours = (pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOME=${dirs.home}`);
    } catch {
      return false;
    }
  };
  const found = processes('context_companion serve').filter((p) => !p.cmd.includes('--tcp') && ours(p.pid));
  if (found.length !== 1) throw new Error(`expected one language server, found ${found.length}: ${found.map((p) => p.cmd).join(' | ')}`);
  return found[0];
}

/** The TCP ports process `pid` listens on (its sockets in the LISTEN state in /proc/net/tcp and tcp6). */
function listeningPorts(pid) {
  const inodes = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      /* closed meanwhile */
    }
  }
  const ports = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && cols[3] === '0A' && inodes.has(cols[9])) ports.push(parseInt(cols[1].split(':').pop(), 16));
    }
  }
  return ports.sort((a, b) => a - b);
}

/** The server's discovery files (in $XDG_RUNTIME_DIR) as {transport, port, pid}. */
function announcements() {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.json')) {
        try {
          const data = JSON.parse(fs.readFileSync(file, 'utf8'));
          out.push({ transport: data.transport, port: data.port, pid: data.pid });
        } catch {
          /* being written */
        }
      }
    }
  };
  walk(childEnv.XDG_RUNTIME_DIR);
  return out;
}

/** The ports the server listens on, less the agent hooks' channel (issue 38.4 moves it to a Unix socket). */
function serverPorts() {
  const server = serverProcess();
  const hooks = new Set(announcements().filter((a) => a.transport === 'agent-hook' && a.pid === server.pid).map((a) => a.port));
  return { all: listeningPorts(server.pid), ports: listeningPorts(server.pid).filter((p) => !hooks.has(p)) };
}

/** The command line of a live `context_companion mcp --attach` process (VS Code starts it from our definition). */
function mcpAttachProcess() {
  return processes('context_companion mcp --attach').find((p) => p.cmd.includes(dirs.workspace))?.cmd ?? '';
}

const figures = [];
function figure(name, value) {
  figures.push(`${name}: ${value}`);
  log(`figure: ${name}: ${value}`);
}

let instructionBeforeEdit = '';

// ------------------------------------------------------------------------------------ setup

function writeWorkspace() {
  fs.mkdirSync(path.join(dirs.workspace, '.git'), { recursive: true }); // the memory search stops here
  fs.mkdirSync(path.join(dirs.workspace, 'src'), { recursive: true });
  fs.writeFileSync(
    agentsMd,
    `# Project notes for agents\n\n- The answer to the end-to-end riddle is ${MARKER}.\n- Tests run with \`make test\`.\n`,
  );
  fs.writeFileSync(
    path.join(dirs.workspace, 'src', 'app.py'),
    'def greet(name: str) -> str:\n    """Say hello."""\n    return f"Hello, {name}!"\n\n\nprint(greet("world"))\n',
  );
}

function userSettings() {
  return {
    ...QUIET_WORKBENCH,
    'contextCompanion.interpreter': env.E2E_PYTHON,
    'contextCompanion.trace.server': 'messages',
    'contextCompanion.memory.readVendorGlobals': false, // a server setting, sent as initializationOptions
    'workbench.enableExperiments': false,
    'editor.scrollBeyondLastLine': false, // Ctrl+End then shows a full page ending with the memory
    'chat.commandCenter.enabled': false,
  };
}

function writeUserSettings() {
  const settingsDir = path.join(dirs.userData, 'User');
  fs.mkdirSync(settingsDir, { recursive: true });
  fs.writeFileSync(path.join(settingsDir, 'settings.json'), JSON.stringify(userSettings(), null, 2));
}

let codeServer;
const pidFile = path.join(scratch, 'pids');

async function startCodeServer(port) {
  const config = path.join(scratch, 'code-server.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const common = ['--config', config, '--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];

  for (const vsix of [env.E2E_VSIX, env.E2E_PROBE_VSIX]) {
    const installed = await run(env.CODE_SERVER_BIN, [...common, '--install-extension', vsix], {
      env: childEnv,
      timeout: 180_000,
    });
    log(installed.stdout.trim().split('\n').pop());
  }
  const listed = await run(env.CODE_SERVER_BIN, [...common, '--list-extensions'], { env: childEnv, timeout: 120_000 });
  for (const id of ['context-companion.context-companion', 'context-companion-e2e.e2e-lm-probe']) {
    if (!listed.stdout.split('\n').includes(id)) {
      throw new Error(`${id} not listed after install: ${listed.stdout.trim() || '(none)'}`);
    }
  }

  const logFd = fs.openSync(path.join(artifacts, 'code-server.log'), 'w');
  codeServer = spawn(
    env.CODE_SERVER_BIN,
    [...common, '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust'],
    { env: childEnv, detached: true, stdio: ['ignore', logFd, logFd] },
  );
  fs.appendFileSync(pidFile, `${codeServer.pid}\n`);
  await waitFor(
    'code-server to answer /healthz',
    async () => {
      if (codeServer.exitCode !== null) throw new Error(`code-server exited with ${codeServer.exitCode}`);
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return res.ok;
    },
    120_000,
    500,
  );
}

async function stopCodeServer() {
  if (!codeServer) return;
  const group = -codeServer.pid;
  if (codeServer.exitCode === null && codeServer.signalCode === null) {
    const exited = new Promise((resolve) => codeServer.once('exit', resolve));
    try {
      process.kill(group, 'SIGTERM');
      await Promise.race([exited, sleep(5_000)]);
    } catch {
      /* already gone */
    }
  }
  // The group outlives its leader (the extension host and the language server): end it for good.
  try {
    process.kill(group, 'SIGKILL');
  } catch {
    /* no member left */
  }
}

/** The extension's output channel, as VS Code logged it (for failure reports). */
const extensionLog = () => extensionLogIn(dirs.userData);

function saveScreenshotForDocs(name) {
  if (env.E2E_UPDATE_DOCS !== '1' || !env.E2E_DOCS_IMAGES) return;
  fs.mkdirSync(env.E2E_DOCS_IMAGES, { recursive: true });
  fs.copyFileSync(path.join(artifacts, name), path.join(env.E2E_DOCS_IMAGES, name));
  log(`updated docs image ${name}`);
}

// ------------------------------------------------------------------------------------ Gemini CLI in a terminal

let stubProcess;
let stubRequests = [];

async function startStub() {
  const stub = await startModelStub({
    python: env.E2E_PYTHON,
    agentsDir: env.E2E_AGENTS_DIR,
    modules: ['stub_gemini'],
    env: childEnv,
    pidFile,
  });
  stubProcess = stub.process;
  stubRequests = stub.requests;
  return stub.url;
}

/** The text of the terminal panel's rows (DOM renderer: terminal.integrated.gpuAcceleration off). */
async function terminalText() {
  return page.evaluate(() =>
    [...document.querySelectorAll('.terminal-wrapper.active .xterm-rows > div')]
      .map((row) => (row.textContent ?? '').replace(/\u00a0/g, ' '))
      .join('\n'),
  );
}

const GEMINI_SECRET = 'sk-stub-do-not-leak-4242';
const GEMINI_SETTINGS = {
  security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
  ide: { enabled: true, hasSeenNudge: true },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
};

/** The JSON of the Gemini CLI's editor-context message in a recorded request body. */
function geminiEditorContext(body) {
  for (const content of JSON.parse(body).contents ?? []) {
    for (const part of content.parts ?? []) {
      const text = part.text ?? '';
      if (text.startsWith("Here is the user's editor context as a JSON object.")) {
        if (content.role !== 'user') throw new Error(`editor context in a ${content.role} turn`);
        return JSON.parse(text.match(/```json\n([\s\S]*)\n```/)[1]);
      }
    }
  }
  return undefined;
}

// ------------------------------------------------------------------------------------ the test

let browserServer;
let browser;
let context;
let tokensBeforeEdit = '';
const TOKENS = /^~?[\d,]+ tokens$/;

/** Headless Debian Chromium, driven over Playwright's protocol (its process leads its own group). */
async function launchBrowser() {
  browserServer = await chromium.launchServer({
    executablePath: env.E2E_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    env: childEnv, // Chromium writes ~/.config/chromium and ~/.cache/dconf: keep them in the scratch HOME
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  fs.appendFileSync(pidFile, `${browserServer.process().pid}\n`); // for e2e.sh's cleanup if this process dies
  browser = await chromium.connect(browserServer.wsEndpoint());
}

const SUITES = (env.E2E_SUITES || 'main,install,chat,hooks,hostile,hostile-settings').split(',').map((s) => s.trim());

async function main() {
  if (SUITES.includes('main')) await mainSuite();
  for (const [name, suite] of [
    ['install', install],
    ['chat', chat],
    ['hooks', hooks],
    ['hostile', hostile],
    ['hostile-settings', hostileSettings],
  ]) {
    if (!SUITES.includes(name)) continue;
    prerequisiteFailed = false;
    if (!browser) await launchBrowser();
    await suite();
  }
}

/** What every suite module is handed: the runner's checks and figures, the shared browser, the scratch folders,
 *  and a way to make its page the one a failure screenshot is taken of. */
function suiteContext() {
  return {
    check,
    figure,
    log,
    browser,
    childEnv,
    scratch,
    artifacts,
    pidFile,
    env,
    setScreenshotPage: (p) => {
      page = p;
    },
  };
}

async function install() {
  await runInstallSuite(suiteContext());
}

async function hostile() {
  await runHostileSuite(suiteContext());
}

async function mainSuite() {
  writeWorkspace();
  writeUserSettings();
  const port = await freePort();

  await check('code-server starts with the packaged .vsix installed', () => startCodeServer(port), { required: true });

  await check(
    'the workbench opens the workspace in Chromium',
    async () => {
      await launchBrowser();
      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await context.newPage();
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
      await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
      await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60_000 });
    },
    { required: true },
  );

  await check(
    'the server starts and the status bar shows the token count',
    async () => {
      const text = await waitFor('a token count in the status bar', async () => {
        const t = await statusText();
        return TOKENS.test(t) ? t : '';
      }, 120_000);
      log(`status bar: ${text}`);
      tokensBeforeEdit = text;
      const errors = await errorNotifications();
      if (errors.length) throw new Error(`error notifications: ${errors.join(' | ')}`);
    },
    { required: true },
  );

  await check('no terminal, no Gemini CLI: the status bar says nothing of Gemini CLI, and the server listens on no port', async () => {
    await sleep(2_000); // the bridges start right after the boot (and the Gemini item polls every 5 s)
    const { all, ports } = serverPorts();
    figure('listening ports of the server, no terminal open', `${ports.length} (${ports.join(', ') || 'none'}; with the hook channel: ${all.length})`);
    if (ports.length !== 0) throw new Error(`the server listens on ${ports.join(', ')} with no terminal open`);
    await sleep(4_000);
    const items = await page.evaluate(() => [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent ?? ''));
    const gemini = items.filter((t) => t.includes('Gemini'));
    if (gemini.length) throw new Error(`the status bar shows ${gemini.join(' | ')}`);
  });

  await check('vscode.lm.tools lists our three tools, and vscode.lm.invokeTool returns the instruction the server has', async () => {
    const out = await runProbe();
    figure('VS Code', out.vscodeVersion);
    const names = out.tools.map((t) => t.name).sort();
    if (JSON.stringify(names) !== JSON.stringify(TOOL_NAMES)) throw new Error(`our tools in vscode.lm.tools: ${names.join(', ') || '(none)'}`);
    for (const t of out.tools) {
      if (!t.description || !Array.isArray(t.tags) || !t.tags.includes('context-companion')) {
        throw new Error(`${t.name}: no description or tags: ${JSON.stringify(t)}`);
      }
    }
    const [first, second] = out.instruction;
    if (!first.includes(MARKER)) throw new Error(`the instruction tool's text has no "${MARKER}" from AGENTS.md`);
    if (first !== out.serverInstruction) throw new Error('the tool text differs from contextCompanion.getSystemInstruction');
    if (second !== first) throw new Error('two invocations with no change returned different text');
    const same = commonPrefixBytes(first, second);
    figure('identical prefix of two invocations with no memory change', `${((same / Buffer.byteLength(first)) * 100).toFixed(1)}% (${same} of ${Buffer.byteLength(first)} bytes)`);
    // the workspace AGENTS.md row ("- AGENTS.md [workspace, N tokens]: included: <reason>") says it is in the instruction
    if (!/^- AGENTS\.md(?: \[(?![^\]\n]*comes with the turn)[^\]\n]*\])?: included(?::|$)/m.test(out.memoryFiles)) {
      throw new Error(`memory list: ${out.memoryFiles}`);
    }
    if (!/sessionId: must be a string/.test(out.badInput)) throw new Error(`bad input answered: ${out.badInput}`);
    instructionBeforeEdit = first;
  });

  await check('the palette lists the Context Companion commands (screenshot)', async () => {
    await openQuickInput('>Context Companion: ');
    const titles = [
      'Refresh System Instruction',
      'Show System Instruction',
      'Show Turn Context',
      'Show Memory Files',
      'Add Memory',
      'Restart Server',
    ];
    for (const title of titles) {
      await page
        .locator('.quick-input-list .monaco-list-row', { hasText: `Context Companion: ${title}` })
        .first()
        .waitFor({ state: 'visible', timeout: 15_000 });
    }
    await sleep(300); // let the list settle for the picture
    await page.screenshot({ path: path.join(artifacts, 'vscode-palette.png') });
    saveScreenshotForDocs('vscode-palette.png');
    await page.keyboard.press('Escape');
  });

  await check(
    '"Show System Instruction" opens a read-only markdown view that shows the memory (screenshot)',
    async () => {
      await runFromPalette('Context Companion: Show System Instruction');
      await waitFor('the System Instruction tab', async () => (await activeTabTitle()).includes('System Instruction.md'));
      await focusActiveEditor();
      await waitFor(`"${MARKER}" from AGENTS.md in the view`, async () => {
        await page.keyboard.press('Control+End');
        return (await activeEditorText()).includes(MARKER);
      });
      const language = await page.locator('.statusbar-item[id*="editor.status.mode"], #status\\.editor\\.mode').first().textContent();
      if (!/markdown/i.test(language ?? '')) throw new Error(`language mode is ${language}, not Markdown`);
      await sleep(300);
      await page.screenshot({ path: path.join(artifacts, 'vscode-instruction.png') });
      saveScreenshotForDocs('vscode-instruction.png');
      // Read-only: typing must not change the text.
      await page.keyboard.type('XYZZY');
      if ((await activeEditorText()).includes('XYZZY')) throw new Error('the view accepted typing');
    },
    { required: true },
  );

  await check('editing AGENTS.md on disk changes the status bar and the open view', async () => {
    fs.appendFileSync(agentsMd, `- Deploys go through the blue pipeline, code ${EDIT_MARKER}; never deploy on Fridays.\n`);
    const after = await waitFor('the status bar to change', async () => {
      const t = await statusText();
      return TOKENS.test(t) && t !== tokensBeforeEdit ? t : '';
    }, 60_000);
    log(`status bar: ${tokensBeforeEdit} -> ${after}`);
    await focusActiveEditor();
    await waitFor(`"${EDIT_MARKER}" in the open view`, async () => {
      await page.keyboard.press('Control+End');
      return (await activeEditorText()).includes(EDIT_MARKER);
    });
  });

  await check('after the AGENTS.md edit the next vscode.lm.invokeTool returns the new text; the change starts in its block', async () => {
    if (!instructionBeforeEdit) throw new Error('no instruction from before the edit (the tools check failed)');
    const out = await runProbe(); // the status bar changed above: the push has arrived
    const after = out.instruction[0];
    if (!after.includes(EDIT_MARKER)) throw new Error(`the instruction tool's text has no "${EDIT_MARKER}" after the edit`);
    if (after !== out.serverInstruction) throw new Error('the tool text differs from contextCompanion.getSystemInstruction');
    const firstDiff = commonPrefixBytes(instructionBeforeEdit, after);
    const block = after.indexOf(AGENTS_BLOCK);
    if (block < 0) throw new Error(`no "${AGENTS_BLOCK}" in the instruction`);
    const blockAt = Buffer.byteLength(after.slice(0, block));
    figure(
      'after an AGENTS.md edit',
      `first differing byte ${firstDiff} of ${Buffer.byteLength(after)}; AGENTS.md block starts at byte ${blockAt}; ` +
        `identical prefix ${((firstDiff / Buffer.byteLength(instructionBeforeEdit)) * 100).toFixed(1)}% of the previous instruction`,
    );
    if (firstDiff < blockAt) throw new Error(`the first differing byte ${firstDiff} lies before the AGENTS.md block at ${blockAt}`);
  });

  await check('the MCP server definition provider: registered where VS Code has the API, else the missing API is named', async () => {
    const out = await runProbe();
    const text = await waitFor('the MCP provider line in the extension log', () =>
      /MCP server definition provider (registered|not registered)/.test(extensionLog()) ? extensionLog() : '',
    );
    if (out.mcpApi === 'function' && /MCP server definition provider registered/.test(text)) {
      figure('MCP provider', 'registered');
      return;
    }
    const line = text.split('\n').find((l) => l.includes('MCP server definition provider not registered'));
    if (!line) throw new Error('the extension logged nothing about its MCP server definition provider');
    figure('MCP provider', line.replace(/^.*not registered: /, 'not registered: '));
  });

  await check('VS Code 1.100 has no chat instructions for extensions: the extension says so in one line and goes on', async () => {
    const line = await waitFor('the chat instructions line in the extension log', () =>
      extensionLog().split('\n').find((l) => /Chat instructions/.test(l)),
    );
    if (!/Chat instructions not delivered: this VS Code \(1\.100\.\d+\) does not read chat instructions from extensions/.test(line)) {
      throw new Error(`the extension logged: ${line}`);
    }
    const slots = path.join(dirs.extensions, fs.readdirSync(dirs.extensions).find((d) => d.startsWith('context-companion.context-companion-')), 'chat');
    const locks = fs.readdirSync(slots).filter((f) => f.endsWith('.lock'));
    if (locks.length) throw new Error(`slots claimed anyway: ${locks.join(', ')}`);
    figure('chat instructions on VS Code 1.100', line.replace(/^.*Chat instructions not delivered: /, 'not delivered: '));
  });

  await check('"MCP: List Servers" lists Context Companion; started, its mcp --attach process serves our tools', async () => {
    const row = () => page.locator('.quick-input-list .monaco-list-row', { hasText: 'Context Companion' }).first();
    await runFromPalette('MCP: List Servers');
    await row().waitFor({ state: 'visible', timeout: 30_000 });
    log(`MCP: List Servers row: ${((await row().textContent()) ?? '').replace(/\s+/g, ' ')}`);
    await row().click();
    const start = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Start Server' }).first();
    await start.waitFor({ state: 'visible', timeout: 15_000 });
    await start.click();
    const cmdline = await waitFor('a running `context_companion mcp --attach` process', () => mcpAttachProcess(), 60_000);
    log(`MCP server process: ${cmdline}`);
    if (!cmdline.includes(`--workspace ${dirs.workspace}`)) throw new Error(`not started for this workspace: ${cmdline}`);
    const python = env.E2E_PYTHON_EXE ?? env.E2E_PYTHON;
    if (!cmdline.startsWith(python)) throw new Error(`not started with the server's Python (${python}): ${cmdline}`);
    const servers = processes('context_companion serve --mcp-endpoint --stdio').filter((p) => {
      try {
        // this run's server, not another test's: it runs in the extension's launch folder, never the workspace
        return fs.readlinkSync(`/proc/${p.pid}/cwd`) === path.join(dirs.userData, 'User', 'globalStorage', 'context-companion.context-companion', 'launch');
      } catch {
        return false;
      }
    });
    if (servers.length !== 1) throw new Error(`expected one language server with --mcp-endpoint, found: ${JSON.stringify(servers)}`);
    if (!cmdline.includes(`--server-pid ${servers[0].pid}`)) {
      throw new Error(`not pinned to this window's server (pid ${servers[0].pid}): ${cmdline}`);
    }
    const state = await waitFor('the server to be listed as Running', async () => {
      await runFromPalette('MCP: List Servers');
      await row().waitFor({ state: 'visible', timeout: 15_000 });
      const text = ((await row().textContent()) ?? '').replace(/\s+/g, ' ');
      await page.keyboard.press('Escape');
      return /Running/.test(text) ? text : /Error/.test(text) ? Promise.reject(new Error(text)) : '';
    }, 60_000, 1_000);
    log(`MCP: List Servers row: ${state}`);
    const mcpPorts = serverPorts().ports;
    figure('listening ports of the server, MCP server started, no terminal', `${mcpPorts.length} (${mcpPorts.join(', ')})`);
    if (mcpPorts.length !== 1) throw new Error(`expected the MCP endpoint's port alone, the server listens on ${mcpPorts.join(', ') || 'none'}`);
    const out = await waitFor('VS Code to offer the MCP server\'s tools', async () => {
      const o = await runProbe();
      return o.mcpTool ? o : undefined;
    }, 60_000, 1_000);
    const prefix = out.mcpTool.slice(0, -'get_system_instruction'.length); // VS Code names them <short id>_<tool>
    figure('MCP tools VS Code took from our server', out.allTools.filter((n) => n.startsWith(prefix)).join(', '));
    if (!String(out.mcpInstruction).includes(EDIT_MARKER)) {
      throw new Error(`${out.mcpTool} answered: ${String(out.mcpInstruction).slice(0, 300)}`);
    }
    figure('MCP get_system_instruction equals the LM tool text', String(out.mcpInstruction === out.serverInstruction));
    if (out.mcpInstruction !== out.serverInstruction) {
      throw new Error(`${out.mcpTool} answered other text than contextCompanion.getSystemInstruction: ${String(out.mcpInstruction).slice(0, 300)}`);
    }
  });

  await check('"Show Memory Files" lists AGENTS.md as included', async () => {
    await runFromPalette('Context Companion: Show Memory Files');
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: 'AGENTS.md' }).first();
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    const text = (await row.textContent()) ?? '';
    if (!/included/.test(text) || /not included/.test(text)) throw new Error(`row says: ${text}`);
    await page.keyboard.press('Escape');
  });

  await check('"Refresh System Instruction" reports "N memory files · T tokens"', async () => {
    await clearNotifications();
    await runFromPalette('Context Companion: Refresh System Instruction');
    await waitFor('the refresh summary', async () =>
      (await notifications()).some((n) => /Context Companion: \d+ memory files? · ~?[\d,]+ tokens/.test(n)),
    );
    await clearNotifications();
  });

  await check('the cursor reaches the server: "Show Turn Context" names the file and line', async () => {
    await openQuickInput('app.py');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'app.py' }).first().waitFor();
    await quickInputBox().press('Enter');
    await waitFor('app.py to open', async () => (await activeTabTitle()).includes('app.py'));
    await openQuickInput(':3');
    await quickInputBox().press('Enter');
    await sleep(200); // the extension reports the cursor 50 ms after it settles
    await runFromPalette('Context Companion: Show Turn Context');
    await waitFor('the Turn Context tab', async () => (await activeTabTitle()).includes('Turn Context.md'));
    const text = await waitFor('turn context text', async () => {
      const t = await activeEditorText();
      return t.includes('app.py') ? t : '';
    });
    if (!/"line":\s*3\b/.test(text)) throw new Error(`no cursor on line 3 in: ${text.slice(0, 400)}`);
  });

  await check('"Explain Memory for Agent…" lists the server\'s agents by their names; picking one shows what it loads', async () => {
    await runFromPalette('Context Companion: Explain Memory for Agent…');
    // The list is the server's (contextCompanion.listAgents): VS Code's own chat is in it, named by the server.
    await page.locator('.quick-input-widget .quick-input-title', { hasText: 'which agent?' }).waitFor({ state: 'visible', timeout: 15_000 });
    await quickInputBox().fill('vscode');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'VS Code chat' }).first().waitFor({ state: 'visible', timeout: 15_000 });
    await quickInputBox().fill('codex');
    const codex = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Codex' }).first();
    await codex.waitFor({ state: 'visible', timeout: 15_000 });
    await codex.click();
    await waitFor('the Memory per Agent tab', async () => (await activeTabTitle()).includes('Memory per Agent.md'));
    await waitFor('what Codex would load', async () => (await activeEditorText()).includes('What Codex would load'));
  });

  await check('"Add Memory" saves the fact to the workspace AGENTS.md', async () => {
    const before = await statusText();
    await runFromPalette('Context Companion: Add Memory');
    await quickInputBox().waitFor({ state: 'visible' });
    await quickInputBox().fill(ADDED_FACT);
    await quickInputBox().press('Enter');
    const workspaceRow = page.locator('.quick-input-list .monaco-list-row', { hasText: 'Workspace' }).first();
    await workspaceRow.waitFor({ state: 'visible', timeout: 10_000 });
    await workspaceRow.click();
    await waitFor('the fact in AGENTS.md', async () => fs.readFileSync(agentsMd, 'utf8').includes(ADDED_FACT));
    if (!fs.readFileSync(agentsMd, 'utf8').includes(MARKER)) throw new Error('AGENTS.md lost its earlier content');
    await waitFor('the status bar to change after Add Memory', async () => {
      const t = await statusText();
      return TOKENS.test(t) && t !== before;
    });
    await clearNotifications();
  });

  await check('a server setting changed in VS Code reaches the server (git section off)', async () => {
    await clearNotifications();
    const before = await statusText();
    await editUserSettings({ 'contextCompanion.prompt.sections': { git: false } });
    const after = await waitFor('the status bar to change', async () => {
      const t = await statusText();
      return TOKENS.test(t) && t !== before ? t : '';
    });
    const count = (t) => Number(t.replace(/[^\d]/g, ''));
    if (!(count(after) < count(before))) throw new Error(`expected fewer tokens: ${before} -> ${after}`);
    log(`status bar: ${before} -> ${after}`);
    const errors = await errorNotifications();
    if (errors.length) throw new Error(`error notifications: ${errors.join(' | ')}`);
  });

  await check('Gemini CLI in a VS Code terminal: connected, its request carries the file, cursor and selection, never the open .env', async () => {
    if (!env.E2E_GEMINI || !fs.existsSync(env.E2E_GEMINI)) throw new Error('the Gemini CLI is not installed: run scripts/e2e.sh');
    const stubUrl = await startStub();
    fs.mkdirSync(path.join(dirs.home, '.gemini'), { recursive: true });
    fs.writeFileSync(path.join(dirs.home, '.gemini', 'settings.json'), JSON.stringify(GEMINI_SETTINGS));
    // In VS Code's terminal the CLI first offers to set up Shift+Enter keybindings: answered before.
    fs.writeFileSync(path.join(dirs.home, '.gemini', 'state.json'), JSON.stringify({ terminalSetupPromptShown: true }));
    // Rows in the DOM (readable), small enough that the CLI's answers fit the panel beside the editor.
    await editUserSettings({ 'terminal.integrated.gpuAcceleration': 'off', 'terminal.integrated.fontSize': 6 });
    // An open .env (excluded by default) must never reach the model. .geminiignore keeps it out of the
    // CLI's own folder listing, so only the editor context could carry it.
    const envFile = path.join(dirs.workspace, '.env');
    fs.writeFileSync(envFile, `API_KEY=${GEMINI_SECRET}\n`);
    fs.writeFileSync(path.join(dirs.workspace, '.geminiignore'), '.env\n');
    for (const name of ['.env', 'app.py']) {
      await openQuickInput(name);
      await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor();
      await quickInputBox().press('Enter');
      await waitFor(`${name} to open`, async () => (await activeTabTitle()).includes(name));
    }
    await openQuickInput(':1');
    await quickInputBox().press('Enter');
    await quickInput().waitFor({ state: 'hidden' });
    // "def greet(...": select the word greet. Keys pressed while the closing quick input still
    // holds focus can be lost (one run selected "def"): try the keys again, up to three times.
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('Home');
      await page.keyboard.press('Control+ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('Control+Shift+ArrowRight');
      try {
        await waitFor(
          '"greet" selected (status bar: 5 selected)',
          async () =>
            /Ln 1, Col 10 \(5 selected\)/.test((await page.locator('#status\\.editor\\.selection').textContent()) ?? ''),
          attempt < 3 ? 5_000 : 30_000,
        );
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
    await sleep(300); // the extension reports the selection 50 ms after it settles
    // The palette without openQuickInput's Escape, which would drop the selection in the editor.
    await page.keyboard.press('F1');
    await quickInputBox().waitFor({ state: 'visible', timeout: 10_000 });
    await quickInputBox().fill('>Terminal: Create New Terminal');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Terminal: Create New Terminal' }).first().waitFor();
    await quickInputBox().press('Enter');
    await waitFor('a shell prompt', async () => /[$#] *$/m.test(await terminalText()), 60_000);
    // The CLI's documented base URL and a dummy key, typed as a user would. SSH_CONNECTION: this
    // machine has /.dockerenv, which otherwise makes the CLI dial host.docker.internal. Without CI
    // (e2e.sh sets it), or the CLI takes itself for a batch run and exits.
    await page.keyboard.type(
      `env -u CI GEMINI_API_KEY=stub-key-not-a-secret GOOGLE_GEMINI_BASE_URL=${stubUrl} SSH_CONNECTION='127.0.0.1 0 127.0.0.1 0' ${env.E2E_GEMINI}`,
    );
    await page.keyboard.press('Enter');
    await waitFor('the Gemini CLI prompt', async () => (await terminalText()).includes('Type your message'), 120_000);
    await page.keyboard.type('/ide status');
    await waitFor('the /ide status completion', async () => (await terminalText()).includes('Check status of IDE integration'));
    const connected = await waitFor(
      '"Connected to" in /ide status',
      async () => {
        const text = await terminalText();
        const line = text.split('\n').find((l) => l.includes('Connected to'));
        if (!line) await page.keyboard.press('Enter'); // the first Enter may only complete the command
        return line?.trim();
      },
      60_000,
      5_000,
    );
    log(`gemini /ide status: ${connected}`);
    const agent = serverPorts();
    figure('listening ports of the server, Gemini CLI running in a terminal', `${agent.ports.length} (${agent.ports.join(', ')}; with the hook channel: ${agent.all.length})`);
    // The item follows the companion's status, asked every 5 s while a terminal is open.
    const status = await waitFor(
      'the "Gemini CLI connected" status bar item',
      async () =>
        (await page.evaluate(() => [...document.querySelectorAll('.statusbar-item')].map((e) => (e.textContent ?? '').trim()))).find((t) =>
          t.includes('Gemini CLI connected'),
        ),
      20_000,
      500,
    );
    figure('Gemini CLI status bar item with a CLI connected', status);
    const before = stubRequests.length;
    await page.keyboard.type('Explain the selected function');
    await sleep(500);
    await page.keyboard.press('Enter');
    const request = await waitFor(
      'the prompt request at the model stub',
      async () => stubRequests.slice(before).find((r) => r.path.endsWith(':streamGenerateContent')),
      90_000,
    );
    const ide = geminiEditorContext(request.body);
    if (!ide) throw new Error('no editor context in the request');
    log(`gemini editor context: ${JSON.stringify(ide)}`);
    const active = ide.activeFile ?? {};
    if (active.path !== path.join(dirs.workspace, 'src', 'app.py')) throw new Error(`active file ${active.path}`);
    if (active.selectedText !== 'greet') throw new Error(`selected text ${JSON.stringify(active.selectedText)}`);
    if (active.cursor?.line !== 1 || active.cursor?.character !== 10) throw new Error(`cursor ${JSON.stringify(active.cursor)}`);
    for (const r of stubRequests) {
      if (r.body.includes(GEMINI_SECRET) || r.body.includes(envFile)) throw new Error(`the .env reached the model: ${r.path}`);
    }
    // Leave the workbench as the next check expects it: no terminal, no panel, no toasts.
    await page.locator('.part.panel .action-label[aria-label*="Kill"]').first().click();
    await page.locator('.part.panel .action-label[aria-label*="Close Panel"]').first().click().catch(() => undefined);
    await clearNotifications();
  });

  await check('an interpreter the user set without the package gets the exact command with the bundled wheel, and is not installed into', async () => {
    const venv = path.join(scratch, 'venv-without-server');
    await run(env.E2E_PYTHON, ['-m', 'venv', '--without-pip', venv], { env: childEnv });
    const python = path.join(venv, 'bin', 'python');
    await editUserSettings({ 'contextCompanion.interpreter': python });
    await waitFor('VS Code to offer a restart for the new interpreter', async () =>
      (await notifications()).some((n) => n.includes('server command changed')),
    );
    await clearNotifications();
    await runFromPalette('Context Companion: Restart Server');
    const message = await waitFor('the missing-package message', async () =>
      (await notifications()).find((n) => n.includes('-m pip install')),
    );
    // the wheel the .vsix carries, never a package name the index does not have
    const wanted = `${python} -m pip install `;
    const rest = message.slice(message.indexOf(wanted) + wanted.length).split(' ')[0];
    if (!message.includes(wanted) || !/\/server\/context_companion-[^/]+-py3-none-any\.whl$/.test(rest)) throw new Error(`message: ${message}`);
    if (!message.includes('Copy Command')) throw new Error(`no Copy Command button: ${message}`);
    const offered = (await notifications()).filter((n) => n.includes('no server found'));
    if (offered.length) throw new Error(`the extension offered to install into an interpreter the user set: ${offered.join(' | ')}`);
    await waitFor('the status bar to show the problem', async () => (await statusText()) === 'Context Companion');
  });

  // The other suites run their own code-servers, after this one is gone.
  await context?.close().catch(() => undefined);
  await stopCodeServer();
  stubProcess?.kill();
}

async function chat() {
  await runChatSuite({ ...suiteContext(), docsImage: saveScreenshotForDocs });
}

async function hooks() {
  await runHooksSuite(suiteContext());
}

async function hostileSettings() {
  await runHostileSettingsSuite(suiteContext());
}

let exitCode = 1;
try {
  await main();
} catch (err) {
  results.push({ name: 'test harness', ok: false });
  console.error(`not ok - test harness: ${err?.stack ?? err}`);
} finally {
  const failed = results.filter((r) => !r.ok).length;
  if (failed > 0) {
    console.error(extensionLog().slice(-6000));
    console.error(`[e2e] code-server log: ${path.join(artifacts, 'code-server.log')}`);
  }
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await browserServer?.close().catch(() => undefined);
  await stopCodeServer();
  stubProcess?.kill();
  const passed = results.length - failed;
  if (figures.length) console.error(['[e2e] figures:', ...figures.map((f) => `  ${f}`)].join('\n'));
  exitCode = failed === 0 && passed > 0 ? 0 : 1;
  console.log(`${passed} passed, ${failed} failed`);
}
process.exit(exitCode);
