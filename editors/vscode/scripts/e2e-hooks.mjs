// Our Claude Code hook inside VS Code's own agent, end to end: code-server 4.139.1 (VS Code 1.139.1, GitHub Copilot
// Chat 0.67.0 built in) with VS Code's setting that runs Claude Code's hooks on (`chat.useClaudeHooks`), the hooks
// written by `context-companion setup --agent claude-code` (the project's .claude/settings.local.json and, with
// --user, ~/.claude/settings.json), the same entry in a committed .claude/settings.json and in a .github/hooks file
// (VS Code runs all four before every request). The Chat view in agent mode talks to the recording model stub.
// Two starts: with the packaged extension (its chat instructions deliver what VS Code's chat lacks: the hook adds
// nothing), then without it (the hook delivers that memory from disk, once). The checks read the recorded
// requests and Copilot Chat's own hooks log. Run from scripts/e2e.mjs (runHooksSuite), started by scripts/e2e.sh
// with CHAT_CODE_SERVER_NODE (Node 24) and CHAT_CODE_SERVER_ENTRY set (E2E_SUITES=hooks).
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  chatRequests as pageChatRequests,
  copilotInExtensionHost as copilotInHost,
  count,
  modelPickerText as pageModelPickerText,
  sendChatTurn,
  systemMessage,
  textOf,
} from './e2e-chatpage.mjs';
import {
  extensionLog,
  freePort,
  launchCodeServer,
  QUIET_WORKBENCH,
  runFromPalette,
  sleep,
  startStub,
  statusText,
  stopCodeServer as stopCodeServerProcess,
  waitFor,
  trackFailures,
} from './e2e-lib.mjs';

const run = promisify(execFile);

// One marker per memory file: VS Code's chat reads the first three itself; the other two only we give it.
const VSCODE_READS = { 'AGENTS.md': 'HOOKS-ROOT-AGENTS-4471', 'CLAUDE.md': 'HOOKS-ROOT-CLAUDE-5213', '.github/copilot-instructions.md': 'HOOKS-COPILOT-6029' };
const VSCODE_LACKS = { 'GEMINI.md': 'HOOKS-GEMINI-7390', '.cursor/rules/tone.mdc': 'HOOKS-CURSOR-8152' };
const ALL = { ...VSCODE_READS, ...VSCODE_LACKS };
const HOOK_CONTEXT = 'Additional instructions from hooks:'; // how VS Code 1.139.1 opens hook text in the user message
const HOOK_FILES = ['.claude/settings.local.json', '.claude/settings.json', '~/.claude/settings.json', '.github/hooks/team.json'];
const TURN_PREFIX = 'E2E hooks turn';
const STUB_MODEL = 'stub-model';

/** The suite; `ctx`: {check, figure, log, browser, childEnv, scratch, artifacts, pidFile, env, setScreenshotPage}. */
export async function runHooksSuite(ctx) {
  const { figure, log, env } = ctx;
  const dirs = {
    userData: path.join(ctx.scratch, 'hooks-user-data'),
    extensions: path.join(ctx.scratch, 'hooks-extensions'),
    workspace: path.join(ctx.scratch, 'hooks workspace'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const home = ctx.childEnv.HOME;
  const node = env.CHAT_CODE_SERVER_NODE;
  const entry = env.CHAT_CODE_SERVER_ENTRY;
  const { check, failed } = trackFailures(ctx);
  let stub;
  let codeServer;
  let context;
  let page;
  let hookCommand = '';
  let logsBefore = new Set(); // the hooks logs of the first start, when the second one runs


  function writeWorkspace() {
    const files = {
      '.git/HEAD': 'ref: refs/heads/main\n',
      'AGENTS.md': `# Project notes\n\n- The root build word is ${VSCODE_READS['AGENTS.md']}.\n`,
      'CLAUDE.md': `# Claude notes\n\n- Claude's word is ${VSCODE_READS['CLAUDE.md']}.\n`,
      '.github/copilot-instructions.md': `- Copilot's word is ${VSCODE_READS['.github/copilot-instructions.md']}.\n`,
      'GEMINI.md': `# Gemini notes\n\n- Gemini's word is ${VSCODE_LACKS['GEMINI.md']}.\n`,
      '.cursor/rules/tone.mdc': `---\ndescription: tone\nalwaysApply: true\n---\n- Always write ${VSCODE_LACKS['.cursor/rules/tone.mdc']}.\n`,
      'src/app.py': 'def main():\n    return 42\n',
    };
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dirs.workspace, rel)), { recursive: true });
      fs.writeFileSync(path.join(dirs.workspace, rel), text);
    }
  }

  /** `context-companion setup --agent claude-code` as a user runs it, with a PATH without this installation's
   * script: setup then writes its absolute path (VS Code runs hooks with its own PATH, a login shell's). */
  async function setup(...args) {
    const bin = path.dirname(env.E2E_PYTHON_EXE);
    const PATH = (ctx.childEnv.PATH ?? '').split(':').filter((p) => p && path.resolve(p) !== bin).join(':');
    const agent = args[0] === '--agent' ? args.splice(0, 2)[1] : 'claude-code';
    const out = await run(env.E2E_PYTHON, ['-m', 'context_companion', 'setup', '--agent', agent, ...args], {
      env: { ...ctx.childEnv, PATH },
      cwd: dirs.workspace,
      timeout: 60_000,
    });
    log(`setup ${args.join(' ')}: ${out.stdout.trim()}`);
  }

  function userSettings(stubUrl) {
    const user = path.join(dirs.userData, 'User');
    fs.mkdirSync(user, { recursive: true });
    fs.writeFileSync(path.join(user, 'chatLanguageModels.json'), JSON.stringify([{ vendor: 'ollama', name: 'Stub', url: stubUrl }]));
    fs.writeFileSync(
      path.join(user, 'settings.json'),
      JSON.stringify(
        {
          ...QUIET_WORKBENCH,
          'chat.useClaudeHooks': true, // off by default in 1.139.1: then VS Code runs only the .github/hooks file
          'contextCompanion.interpreter': env.E2E_PYTHON,
          'contextCompanion.memory.readVendorGlobals': false,
          'contextCompanion.environment.placement': 'off',
        },
        null,
        2,
      ),
    );
  }

  /** Every file of Copilot Chat's hooks log ("GitHub Copilot Chat Hooks"), newest session last. */
  function hookLogs() {
    const found = [];
    const walk = (dir) => {
      for (const item of fs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, item.name);
        if (item.isDirectory()) walk(full);
        else if (item.name === 'GitHub Copilot Chat Hooks.log') found.push(full);
      }
    };
    try {
      walk(path.join(dirs.userData, 'logs'));
    } catch {
      return [];
    }
    return found.sort();
  }
  const hookLog = () => hookLogs().filter((f) => !logsBefore.has(f)).map((f) => fs.readFileSync(f, 'utf8')).join('\n');

  /** The runs of our hook for `event` in the hooks log: [{input, result line, output or ''}], oldest first. */
  function ourRuns(event) {
    const lines = hookLog().split('\n');
    const runs = [];
    for (let i = 0; i < lines.length; i++) {
      const m = lines[i].match(/\[#(\d+)\] \[(\w+)\] Running: (.*)$/);
      if (!m || m[2] !== event || !m[3].includes(JSON.stringify(hookCommand).slice(1, -1))) continue;
      const tag = `[#${m[1]}] [${event}]`;
      const rest = lines.slice(i + 1).filter((l) => l.includes(tag));
      const done = rest.find((l) => l.includes('Completed (') || l.includes('Error:')) ?? '';
      const output = done.endsWith('no output') ? '' : (rest.find((l) => l.includes('Output: '))?.replace(/^.*?Output: /, '') ?? '');
      runs.push({ request: Number(m[1]), done, output });
    }
    return runs;
  }

  async function startCodeServer({ withExtension }) {
    const port = await freePort();
    codeServer = await launchCodeServer({
      argv: [node, entry],
      config: path.join(ctx.scratch, 'hooks-code-server.yaml'),
      port,
      userData: dirs.userData,
      extensions: dirs.extensions,
      env: ctx.childEnv,
      logFile: path.join(ctx.artifacts, `hooks-code-server-${withExtension ? 'with' : 'without'}-extension.log`),
      pidFile: ctx.pidFile,
      before: [withExtension ? ['--install-extension', env.E2E_VSIX] : ['--uninstall-extension', 'context-companion.context-companion']],
      log,
    });
    return port;
  }

  async function stopCodeServer() {
    await context?.close().catch(() => undefined);
    context = undefined;
    await stopCodeServerProcess(codeServer);
    codeServer = undefined;
  }

  const chatRequests = () => pageChatRequests(stub);
  const copilotInExtensionHost = () => copilotInHost(dirs.userData, logsBefore);
  const modelPickerText = () => pageModelPickerText(page);

  /** Send one chat message; resolves to the body of the request it caused. */
  const sendTurn = async (text) => (await sendChatTurn(page, stub, text))[0].body;

  /** Open the workspace in a new browser page and wait until the chat uses the stub model in agent mode. */
  async function openWindow(port, { withExtension }) {
    context = await ctx.browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    ctx.setScreenshotPage(page);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    await waitFor('the chat input', () => page.locator('.interactive-input-part .monaco-editor').first().isVisible(), 60_000);
    if (withExtension) await waitFor('a token count in the status bar', async () => /tokens$/.test(await statusText(page)), 120_000);
    // A fresh profile has the built-in chat extension off until "Extensions: Enable All Extensions" (see e2e-chat.mjs).
    const at = Date.now();
    for (let attempt = 1; !copilotInExtensionHost(); attempt++) {
      if (Date.now() - at > 180_000) throw new Error(`Copilot Chat never reached the extension host (Enable All Extensions run ${attempt - 1} times)`);
      await runFromPalette(page, 'Extensions: Enable All Extensions', 10_000).catch((err) => log(`Enable All Extensions: ${err.message}`));
      await waitFor('Copilot Chat in the extension host', copilotInExtensionHost, 15_000).catch(() => undefined);
    }
    await waitFor("the chat's model picker on the stub model", async () => (await modelPickerText()).includes(STUB_MODEL), 60_000).catch(async (err) => {
      throw new Error(`${err.message} (it shows ${JSON.stringify(await modelPickerText())})`);
    });
  }

  /** Every marker `times` times in the whole request, and where the hook text is. */
  function assertOnce(body, what) {
    const all = JSON.stringify(body.messages);
    for (const [file, marker] of Object.entries(ALL)) {
      const n = count(all, marker);
      if (n !== 1) throw new Error(`${file} (${marker}) is ${n} times in the ${what} request, not once`);
    }
  }
  const userMessages = (body) => body.messages.filter((m) => m.role === 'user').map((m) => textOf(m.content));

  /** Our hook ran once per hook file before the request `n` (UserPromptSubmit), each successfully. */
  async function ourPromptRuns(n) {
    return waitFor(
      `${HOOK_FILES.length} runs of our hook for request ${n} in Copilot Chat's hooks log`,
      () => {
        const byRequest = new Map();
        for (const r of ourRuns('UserPromptSubmit')) byRequest.set(r.request, [...(byRequest.get(r.request) ?? []), r]);
        const requests = [...byRequest.keys()].sort((a, b) => a - b);
        const runs = byRequest.get(requests[n - 1]);
        return runs && runs.length === HOOK_FILES.length && runs.every((r) => r.done) ? runs : undefined;
      },
      30_000,
    ).catch((err) => {
      throw new Error(`${err.message}; the log has: ${hookLog().split('\n').filter((l) => l.includes('UserPromptSubmit')).slice(-12).join(' | ').slice(0, 3000)}`);
    });
  }

  const durations = (runs) => runs.map((r) => r.done.match(/in (\d+)ms/)?.[1] ?? '?').join(', ');

  // ---------------------------------------------------------------------------------------- the checks

  await check(
    'hooks: setup --agent claude-code (project, --user) and the same entry in .claude/settings.json and .github/hooks; code-server 4.139.1 with chat.useClaudeHooks and the .vsix uses the stub model',
    async () => {
      writeWorkspace();
      await setup();
      await setup('--user');
      const local = JSON.parse(fs.readFileSync(path.join(dirs.workspace, '.claude', 'settings.local.json'), 'utf8'));
      hookCommand = local.hooks.UserPromptSubmit[0].hooks[0].command;
      if (!/ hook --agent claude-code$/.test(hookCommand)) throw new Error(`setup wrote ${JSON.stringify(hookCommand)}`);
      const user = JSON.parse(fs.readFileSync(path.join(home, '.claude', 'settings.json'), 'utf8'));
      if (user.hooks.UserPromptSubmit[0].hooks[0].command !== hookCommand) throw new Error('setup --user wrote another command');
      fs.writeFileSync(path.join(dirs.workspace, '.claude', 'settings.json'), JSON.stringify(local, null, 2)); // a team's committed copy
      fs.mkdirSync(path.join(dirs.workspace, '.github', 'hooks'), { recursive: true });
      const github = { version: 1, hooks: { SessionStart: [{ type: 'command', command: hookCommand }], UserPromptSubmit: [{ type: 'command', command: hookCommand }] } };
      fs.writeFileSync(path.join(dirs.workspace, '.github', 'hooks', 'team.json'), JSON.stringify(github, null, 2));
      // GitHub Copilot CLI's own hook file, as setup writes it (its event userPromptSubmitted, a bash handler): whether
      // VS Code runs it too is recorded below; each text must still reach the model once.
      await setup('--agent', 'copilot-cli');
      if (!fs.existsSync(path.join(dirs.workspace, '.github', 'hooks', 'context-companion.json'))) throw new Error('setup --agent copilot-cli wrote nothing');
      figure('hooks: command setup wrote', hookCommand);
      // VS Code runs it with /bin/sh and its own environment (no PYTHONPATH, a login shell's PATH): it must run so.
      const probe = await new Promise((resolve) => {
        const child = spawn('/bin/sh', ['-c', hookCommand], { env: ctx.childEnv, cwd: dirs.workspace, stdio: ['pipe', 'pipe', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d) => (err += d));
        child.on('close', () => resolve(err));
        child.stdin.end('{}');
      });
      if (!probe.includes('hook_event_name: missing')) throw new Error(`the hook command does not run as VS Code runs it: ${probe.trim().slice(0, 400)}`);
      stub = await startStub({ python: env.E2E_PYTHON, agentsDir: env.E2E_AGENTS_DIR, modules: ['stub_ollama'], env: ctx.childEnv, pidFile: ctx.pidFile });
      userSettings(stub.url);
      const port = await startCodeServer({ withExtension: true });
      await openWindow(port, { withExtension: true });
      const line = await waitFor(
        'the chat instructions slot line in the extension log',
        () => extensionLog(dirs.userData).split('\n').find((l) => /Chat instructions: slot \d+|Chat instructions not delivered/.test(l)),
        60_000,
      );
      if (/not delivered/.test(line)) throw new Error(line);
    },
    { required: true },
  );

  await check('hooks: with the extension, VS Code runs our hook from all four files and it adds nothing: turn 1 has every memory file once (the chat instructions carry ours)', async () => {
    const body = await sendTurn(`${TURN_PREFIX} 1: hello`);
    const runs = await ourPromptRuns(1);
    const said = runs.filter((r) => r.output || !r.done.includes('Completed (Success)'));
    if (said.length) throw new Error(`our hook said something inside VS Code's agent: ${said.map((r) => `${r.done} ${r.output}`.slice(0, 300)).join(' | ')}`);
    const starts = ourRuns('SessionStart');
    if (starts.length !== HOOK_FILES.length || starts.some((r) => r.output)) throw new Error(`SessionStart runs: ${JSON.stringify(starts).slice(0, 600)}`);
    assertOnce(body, 'turn 1');
    if (userMessages(body).some((t) => t.includes(HOOK_CONTEXT))) throw new Error('the request carries hook text');
    for (const marker of Object.values(VSCODE_LACKS)) if (!systemMessage(body).includes(marker)) throw new Error(`${marker} is not in the system message`);
    figure('hooks: our hook in VS Code with the extension, turn 1', `${runs.length} runs (${durations(runs)} ms), no output; SessionStart ${starts.length} runs, no output`);
  });

  await check('hooks: with the extension, turn 2: four more runs, nothing added, every memory file still once', async () => {
    const body = await sendTurn(`${TURN_PREFIX} 2: nothing changed`);
    const runs = await ourPromptRuns(2);
    if (runs.some((r) => r.output)) throw new Error(`our hook said: ${runs.map((r) => r.output).join(' | ').slice(0, 600)}`);
    assertOnce(body, 'turn 2');
    figure('hooks: our hook in VS Code with the extension, turn 2', `${runs.length} runs (${durations(runs)} ms), no output`);
    const copilot = hookLog().split('\n').filter((l) => l.includes('Running:') && l.includes('hook --agent copilot-cli'));
    figure('hooks: Copilot CLI\'s hook file (setup --agent copilot-cli) run by VS Code', `${copilot.length} runs in two turns`);
  });

  await check(
    'hooks: without the extension (uninstalled, code-server started again), VS Code starts and uses the stub model',
    async () => {
      fs.writeFileSync(path.join(ctx.artifacts, 'hooks-requests-with-extension.json'), JSON.stringify(chatRequests(), null, 1));
      await stopCodeServer();
      logsBefore = new Set(hookLogs());
      for (const file of fs.readdirSync(path.join(dirs.userData, 'logs'), { recursive: true })) {
        if (String(file).endsWith('remoteexthost.log')) logsBefore.add(path.join(dirs.userData, 'logs', String(file)));
      }
      stub.requests.length = 0;
      const port = await startCodeServer({ withExtension: false });
      await openWindow(port, { withExtension: false });
    },
    { required: true },
  );

  await check("hooks: without the extension, turn 1 gets from the first hook what VS Code's chat lacks (GEMINI.md, the Cursor rule) in the user message, the other three add nothing; every memory file once", async () => {
    const body = await sendTurn(`${TURN_PREFIX} 3: hello again`);
    const runs = await ourPromptRuns(1);
    const spoke = runs.filter((r) => r.output);
    if (spoke.length !== 1) throw new Error(`${spoke.length} of our ${runs.length} runs gave text: ${runs.map((r) => r.output.slice(0, 200)).join(' | ')}`);
    if (!/"hookSpecificOutput":\{"hookEventName":"UserPromptSubmit","additionalContext":/.test(spoke[0].output)) throw new Error(`not VS Code's shape: ${spoke[0].output.slice(0, 300)}`);
    assertOnce(body, 'turn 1 without the extension');
    const withHooks = userMessages(body).find((t) => t.includes(HOOK_CONTEXT)) ?? '';
    for (const [file, marker] of Object.entries(VSCODE_LACKS)) if (!withHooks.includes(marker)) throw new Error(`${file} is not in the hook text: ${withHooks.slice(0, 600)}`);
    for (const [file, marker] of Object.entries(VSCODE_READS)) if (!systemMessage(body).includes(marker)) throw new Error(`${file}, which VS Code reads itself, is not in its system message`);
    figure('hooks: our hook in VS Code without the extension, turn 1', `${runs.length} runs (${durations(runs)} ms), one gave ${Buffer.byteLength(withHooks.slice(withHooks.indexOf(HOOK_CONTEXT)))} bytes: ${Object.keys(VSCODE_LACKS).join(', ')}`);
  });

  await check('hooks: without the extension, turn 2: nothing new, nothing added; every memory file still once', async () => {
    const body = await sendTurn(`${TURN_PREFIX} 4: nothing changed`);
    const runs = await ourPromptRuns(2);
    if (runs.some((r) => r.output)) throw new Error(`our hook said: ${runs.map((r) => r.output).join(' | ').slice(0, 600)}`);
    assertOnce(body, 'turn 2 without the extension');
    figure('hooks: our hook in VS Code without the extension, turn 2 (quiet)', `${runs.length} runs (${durations(runs)} ms), no output`);
  });

  if (stub) fs.writeFileSync(path.join(ctx.artifacts, 'hooks-requests-without-extension.json'), JSON.stringify(chatRequests(), null, 1));
  for (const [i, file] of hookLogs().entries()) fs.copyFileSync(file, path.join(ctx.artifacts, `hooks-copilot-chat-hooks-${i + 1}.log`));
  if (failed()) console.error(`[e2e] hooks: Copilot Chat's hooks logs are in ${ctx.artifacts} (hooks-copilot-chat-hooks-*.log)`);
  await stopCodeServer();
  stub?.process.kill();
}
