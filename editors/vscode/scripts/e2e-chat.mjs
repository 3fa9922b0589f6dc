// VS Code's own agent mode, end to end: code-server 4.139.1 (VS Code 1.139.1, GitHub Copilot Chat 0.67.0
// built in) with the packaged extension, its Chat view in agent mode on a local Ollama model (the recording
// model stub of tests/agents with stub_ollama), no sign-in. Each chat turn's request is recorded; the checks
// read them: every memory file once, edits live, nothing twice, the system message byte-identical while
// nothing changed, and our tools run by VS Code. Run from scripts/e2e.mjs (runChatSuite), which scripts/e2e.sh
// starts with CHAT_CODE_SERVER_NODE (Node 24) and CHAT_CODE_SERVER_ENTRY set.
import { execFile } from 'node:child_process';
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
  identicalShare,
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

const TOOL_NAMES = ['contextCompanion_memoryFiles', 'contextCompanion_systemInstruction', 'contextCompanion_turnContext'];
// One marker per memory file: VS Code reads the first three itself, we deliver the rest.
const VSCODE_READS = { 'AGENTS.md': 'ROOT-AGENTS-3141', 'CLAUDE.md': 'ROOT-CLAUDE-2718', '.github/copilot-instructions.md': 'COPILOT-REPO-1618' };
const WE_DELIVER = {
  'GEMINI.md': 'GEMINI-MEMORY-5772',
  'pkg/AGENTS.md': 'SUBFOLDER-AGENTS-1414',
  '.cursor/rules/python.mdc': 'CURSOR-GLOB-1732',
  '.github/instructions/python.instructions.md': 'COPILOT-GLOB-2236',
};
const EDITED = 'SUBFOLDER-EDITED-6931';
const TURN_PREFIX = 'E2E chat turn';
const STUB_MODEL = 'stub-model'; // tests/agents/stub_ollama.py's MODEL, "stub-model:latest"

/** The suite; `ctx`: {check, figure, log, browser, childEnv, scratch, artifacts, pidFile, env, docsImage}. */
export async function runChatSuite(ctx) {
  const { figure, log, env } = ctx;
  const { check, failed } = trackFailures(ctx);
  const dirs = {
    userData: path.join(ctx.scratch, 'chat-user-data'),
    extensions: path.join(ctx.scratch, 'chat-extensions'),
    workspace: path.join(ctx.scratch, 'chat workspace'), // a space, as real folders have
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true });
  const node = env.CHAT_CODE_SERVER_NODE;
  const entry = env.CHAT_CODE_SERVER_ENTRY;
  let codeServer;
  let stub;
  let context;
  let page;
  const turns = []; // {name, request (the body of the turn's first chat request)}

  const chatRequests = () => pageChatRequests(stub);
  const slotAttachment = (system) => system.match(/<attachment filePath="[^"]*\/chat\/slot-\d+\.instructions\.md">[\s\S]*?<\/attachment>/)?.[0] ?? '';
  const slotFiles = () => {
    const root = fs.readdirSync(dirs.extensions).find((d) => d.startsWith('context-companion.context-companion-'));
    if (!root) return [];
    const chat = path.join(dirs.extensions, root, 'chat');
    return fs.readdirSync(chat).filter((f) => f.endsWith('.instructions.md')).map((f) => path.join(chat, f));
  };
  /** What this window's slot holds now (the slot a live lock names; read through its link). */
  const slotText = () => {
    for (const file of slotFiles()) {
      const lock = file.replace(/\.instructions\.md$/, '.lock');
      if (fs.existsSync(lock)) return fs.readFileSync(file, 'utf8');
    }
    return '';
  };

  function writeWorkspace() {
    const files = {
      '.git/HEAD': 'ref: refs/heads/main\n',
      'AGENTS.md': `# Project notes\n\n- The root riddle answer is ${VSCODE_READS['AGENTS.md']}.\n`,
      'CLAUDE.md': `# Claude notes\n\n- Claude's code word is ${VSCODE_READS['CLAUDE.md']}.\n`,
      '.github/copilot-instructions.md': `- Copilot's repository word is ${VSCODE_READS['.github/copilot-instructions.md']}.\n`,
      'GEMINI.md': `# Gemini notes\n\n- Gemini's code word is ${WE_DELIVER['GEMINI.md']}.\n`,
      'pkg/AGENTS.md': `# pkg\n\n- Code in pkg/ uses the word ${WE_DELIVER['pkg/AGENTS.md']}.\n`,
      '.cursor/rules/python.mdc': `---\ndescription: Python style\nglobs: "**/*.py"\nalwaysApply: false\n---\n- Python files follow ${WE_DELIVER['.cursor/rules/python.mdc']}.\n`,
      '.github/instructions/python.instructions.md': `---\napplyTo: "**/*.py"\n---\n- Python files also follow ${WE_DELIVER['.github/instructions/python.instructions.md']}.\n`,
      'pkg/mod.py': 'def main():\n    return 42\n',
    };
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(dirs.workspace, rel)), { recursive: true });
      fs.writeFileSync(path.join(dirs.workspace, rel), text);
    }
  }

  function writeUserData(stubUrl) {
    const user = path.join(dirs.userData, 'User');
    fs.mkdirSync(user, { recursive: true });
    // VS Code's chat takes an Ollama model from this file when there is no GitHub session (offline).
    fs.writeFileSync(path.join(user, 'chatLanguageModels.json'), JSON.stringify([{ vendor: 'ollama', name: 'Stub', url: stubUrl }]));
    fs.writeFileSync(
      path.join(user, 'settings.json'),
      JSON.stringify(
        {
          ...QUIET_WORKBENCH,
          'contextCompanion.interpreter': env.E2E_PYTHON,
          'contextCompanion.memory.readVendorGlobals': false,
          'contextCompanion.environment.placement': 'off',
        },
        null,
        2,
      ),
    );
  }

  async function startCodeServer(port) {
    codeServer = await launchCodeServer({
      argv: [node, entry],
      config: path.join(ctx.scratch, 'chat-code-server.yaml'),
      port,
      userData: dirs.userData,
      extensions: dirs.extensions,
      env: ctx.childEnv,
      logFile: path.join(ctx.artifacts, 'chat-code-server.log'),
      pidFile: ctx.pidFile,
      before: [['--install-extension', env.E2E_VSIX]],
      log,
    });
  }

  const stopCodeServer = () => stopCodeServerProcess(codeServer);

  const copilotInExtensionHost = () => copilotInHost(dirs.userData);
  const modelPickerText = () => pageModelPickerText(page);

  /** Send one chat message; resolves to the requests it caused (the first one, then tool rounds). */
  async function sendTurn(text, { rounds = 1 } = {}) {
    const got = await sendChatTurn(page, stub, text, { rounds });
    turns.push({ name: text, request: got[0].body });
    return got;
  }

  async function openFile(name) {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const box = page.locator('.quick-input-widget .quick-input-box input');
    await box.waitFor({ state: 'visible', timeout: 10_000 });
    await box.fill(name);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().waitFor({ timeout: 15_000 });
    await box.press('Enter');
    await waitFor(`${name} to open`, async () =>
      ((await page.locator('.editor-group-container.active .tab.active').first().getAttribute('aria-label')) ?? '').includes(name),
    );
  }

  /** Every marker of `files` exactly `times` times in the whole request (all messages). */
  function assertMarkers(body, files, times, what) {
    const all = JSON.stringify(body.messages);
    for (const [file, marker] of Object.entries(files)) {
      const n = count(all, marker);
      if (n !== times) throw new Error(`${file} (${marker}) is ${n} times in the ${what} request, not ${times}`);
    }
  }

  // ---------------------------------------------------------------------------------------- the checks

  await check(
    'chat: code-server 4.139.1 starts on Node 24 with the .vsix; its Chat view uses the stub model in agent mode',
    async () => {
      writeWorkspace();
      stub = await startStub({ python: env.E2E_PYTHON, agentsDir: env.E2E_AGENTS_DIR, modules: ['stub_ollama'], env: ctx.childEnv, pidFile: ctx.pidFile });
      writeUserData(stub.url);
      const port = await freePort();
      await startCodeServer(port);
      const vscodeDir = path.join(path.dirname(entry), '..', '..', 'lib', 'vscode');
      const version = JSON.parse(fs.readFileSync(path.join(vscodeDir, 'package.json'), 'utf8')).version;
      const copilot = JSON.parse(fs.readFileSync(path.join(vscodeDir, 'extensions', 'copilot', 'package.json'), 'utf8')).version;
      figure('chat: VS Code', `${version} (code-server 4.139.1), GitHub Copilot Chat ${copilot}, Node ${(await run(node, ['--version'])).stdout.trim()}`);
      context = await ctx.browser.newContext({ viewport: { width: 1400, height: 900 } });
      page = await context.newPage();
      ctx.setScreenshotPage(page); // a failed check's screenshot shows this window
      await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
      await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
      await page.locator('.explorer-folders-view, .explorer-viewlet').first().waitFor({ timeout: 60_000 });
      await waitFor('the chat input', () => page.locator('.interactive-input-part .monaco-editor').first().isVisible(), 60_000);
      await waitFor('a token count in the status bar', async () => /tokens$/.test(await statusText(page)), 120_000);
      // A fresh profile has the built-in chat extension switched off ("chat set up is not completed") and
      // "Extensions: Enable All Extensions" turns it on. The palette offers that command as soon as the window
      // is up, but it enables only the extensions the workbench has listed by then: run before the extension
      // host was there, it enabled nothing, Copilot Chat never started, no model was asked for and the chat's
      // picker stayed on "Auto" (CI under load). So: after our extension is running (the token count above),
      // run it until the extension host has Copilot Chat (its log says so), then wait for the stub model.
      const copilotAt = Date.now();
      for (let attempt = 1; !copilotInExtensionHost(); attempt++) {
        if (Date.now() - copilotAt > 120_000) throw new Error(`Copilot Chat never reached the extension host (Enable All Extensions run ${attempt - 1} times)`);
        await runFromPalette(page, 'Extensions: Enable All Extensions', 10_000).catch((err) => log(`Enable All Extensions: ${err.message}`));
        await waitFor('Copilot Chat in the extension host', copilotInExtensionHost, 15_000).catch(() => log(`Copilot Chat not in the extension host after Enable All Extensions (attempt ${attempt})`));
      }
      await waitFor('the stub model in the chat (its /api/show answered)', () => stub.requests.some((r) => r.path === '/api/show'), 60_000).catch((err) => {
        throw new Error(`${err.message}; the stub saw ${JSON.stringify(stub.requests.map((r) => `${r.method} ${r.path}`))}`);
      });
      await waitFor('the chat\'s model picker on the stub model', async () => (await modelPickerText()).includes(STUB_MODEL), 30_000).catch(async (err) => {
        throw new Error(`${err.message} (it shows ${JSON.stringify(await modelPickerText())})`);
      });
    },
    { required: true },
  );

  await check('chat: the extension delivers through its chat instructions slot (the window claimed one)', async () => {
    const line = await waitFor('the slot line in the extension log', () =>
      extensionLog(dirs.userData).split('\n').find((l) => /Chat instructions: slot \d+|Chat instructions not delivered/.test(l)),
    60_000);
    if (/not delivered/.test(line)) throw new Error(line);
    figure('chat: instructions channel', line.replace(/^.*Chat instructions: /, ''));
  }, { required: true });

  await check('chat: turn 1 carries every memory file once: VS Code\'s own three, and ours in its system message', async () => {
    await openFile('mod.py');
    await waitFor('pkg/AGENTS.md and the Python rules in the slot', () => slotText().includes(WE_DELIVER['pkg/AGENTS.md']), 30_000);
    const [request] = await sendTurn(`${TURN_PREFIX} 1: hello`);
    const system = systemMessage(request.body);
    const ours = slotAttachment(system);
    if (!ours) throw new Error('no attachment of our chat instructions slot in the system message');
    assertMarkers(request.body, { ...VSCODE_READS, ...WE_DELIVER }, 1, 'turn 1');
    for (const [file, marker] of Object.entries(VSCODE_READS)) {
      if (ours.includes(marker)) throw new Error(`our attachment repeats ${file}, which VS Code reads itself`);
    }
    for (const [file, marker] of Object.entries(WE_DELIVER)) {
      if (!ours.includes(marker)) throw new Error(`${file} is in the request, but not in our attachment`);
    }
    const own = [...system.matchAll(/<attachment filePath="([^"]+)">/g)].map((m) => path.relative(dirs.workspace, m[1]));
    figure('chat: attachments in the system message', own.map((p) => (p.includes('/chat/slot-') ? 'our slot' : p)).join(', '));
    figure('chat: system message', `${Buffer.byteLength(system)} bytes, our attachment ${Buffer.byteLength(ours)} bytes`);
    const tools = request.body.tools.map((t) => t.function?.name);
    const missing = TOOL_NAMES.filter((n) => !tools.includes(n));
    if (missing.length) throw new Error(`tools list lacks ${missing.join(', ')}`);
    figure('chat: tools in the request', `${tools.length}, ours: ${TOOL_NAMES.join(', ')}; MCP: ${tools.filter((n) => n.startsWith('mcp_')).length}`);
  });

  await check('chat: turn 2, nothing changed: the system message is byte-identical, nothing is added', async () => {
    const [request] = await sendTurn(`${TURN_PREFIX} 2: nothing changed`);
    const [before, after] = [systemMessage(turns.at(-2).request), systemMessage(request.body)];
    const share = identicalShare(before, after);
    figure('chat: identical system message, turn 1 → 2 (nothing changed)', share.text);
    if (before !== after) throw new Error(`the system message changed: ${share.text}`);
    assertMarkers(request.body, { ...VSCODE_READS, ...WE_DELIVER }, 1, 'turn 2');
  });

  await check('chat: an edit of pkg/AGENTS.md reaches turn 3 without a reload; the change starts in our attachment', async () => {
    fs.writeFileSync(path.join(dirs.workspace, 'pkg', 'AGENTS.md'), `# pkg\n\n- Code in pkg/ now uses the word ${EDITED}.\n`);
    await waitFor('the edit in our slot', () => slotText().includes(EDITED), 30_000);
    const [request] = await sendTurn(`${TURN_PREFIX} 3: after the edit`);
    const { 'pkg/AGENTS.md': _old, ...unchanged } = WE_DELIVER;
    assertMarkers(request.body, { ...VSCODE_READS, ...unchanged, 'pkg/AGENTS.md (edited)': EDITED }, 1, 'turn 3');
    assertMarkers(request.body, { 'pkg/AGENTS.md (before the edit)': WE_DELIVER['pkg/AGENTS.md'] }, 0, 'turn 3');
    const [before, after] = [systemMessage(turns.at(-2).request), systemMessage(request.body)];
    const share = identicalShare(before, after);
    const slotAt = Buffer.byteLength(after.slice(0, after.indexOf(slotAttachment(after))));
    figure('chat: identical system message, turn 2 → 3 (pkg/AGENTS.md edited)', `${share.text}; our attachment starts at byte ${slotAt}`);
    if (share.same < slotAt) throw new Error(`the first differing byte ${share.same} lies before our attachment (${slotAt})`);
  });

  await check('chat: GEMINI.md deleted: turn 4 no longer has it', async () => {
    fs.rmSync(path.join(dirs.workspace, 'GEMINI.md'));
    await waitFor('GEMINI.md gone from our slot', () => slotText() !== '' && !slotText().includes(WE_DELIVER['GEMINI.md']), 30_000);
    const [request] = await sendTurn(`${TURN_PREFIX} 4: after the deletion`);
    assertMarkers(request.body, { 'GEMINI.md': WE_DELIVER['GEMINI.md'] }, 0, 'turn 4');
    assertMarkers(request.body, { ...VSCODE_READS, 'pkg/AGENTS.md': EDITED }, 1, 'turn 4');
  });

  await check('chat: with a selection VS Code attaches the matching rule itself and we drop ours; a stub answer calling contextCompanion_turnContext makes VS Code run it; the next request has the active file and selection', async () => {
    await openFile('mod.py');
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click({ position: { x: 5, y: 5 } });
    for (let attempt = 1; ; attempt++) {
      await page.keyboard.press('Control+Home');
      await page.keyboard.press('Control+ArrowRight');
      await page.keyboard.press('ArrowRight');
      await page.keyboard.press('Control+Shift+ArrowRight');
      try {
        await waitFor('"main" selected (4 selected)', async () => /\(4 selected\)/.test((await page.locator('#status\\.editor\\.selection').textContent()) ?? ''), 5_000);
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
    // With a selection VS Code attaches the file, and the .github/instructions rule that matches it: ours goes.
    const rule = WE_DELIVER['.github/instructions/python.instructions.md'];
    await waitFor('the rule VS Code now attaches itself gone from our slot', () => slotText() !== '' && !slotText().includes(rule), 30_000);
    const [ask, answer] = await sendTurn(`${TURN_PREFIX} 5: please call contextCompanion_turnContext`, { rounds: 2 });
    const { 'GEMINI.md': _gone, 'pkg/AGENTS.md': _edited, ...still } = WE_DELIVER;
    for (const [body, what] of [[ask.body, 'turn 5'], [answer.body, 'turn 5 tool round']]) {
      assertMarkers(body, { ...VSCODE_READS, ...still, 'pkg/AGENTS.md': EDITED }, 1, what);
    }
    if (slotAttachment(systemMessage(ask.body)).includes(rule)) throw new Error('our attachment repeats the rule VS Code attached');
    const call = answer.body.messages.findLast((m) => m.role === 'assistant')?.tool_calls?.[0];
    if (call?.function?.name !== 'contextCompanion_turnContext') throw new Error(`the assistant's tool call: ${JSON.stringify(call)}`);
    const result = answer.body.messages.at(-1);
    if (result.role !== 'tool') throw new Error(`the request after the tool call ends with a ${result.role} message`);
    const text = textOf(result.content);
    const file = path.join(dirs.workspace, 'pkg', 'mod.py');
    if (!text.includes(JSON.stringify(file).slice(1, -1))) throw new Error(`no active file ${file} in the tool result: ${text.slice(0, 400)}`);
    if (!/"selectedText":\s*"main"/.test(text)) throw new Error(`no selected text "main" in the tool result: ${text.slice(0, 400)}`);
    if (text.includes(EDITED)) throw new Error('the tool result repeats pkg/AGENTS.md, which the system message carries');
    figure('chat: tool result (contextCompanion_turnContext)', text.replace(/\s+/g, ' ').slice(0, 160));
    const share = identicalShare(systemMessage(turns.at(-2).request), systemMessage(ask.body));
    figure('chat: identical system message, turn 4 → 5 (a selection: VS Code attaches the matching rule itself)', share.text);
    const round = identicalShare(systemMessage(ask.body), systemMessage(answer.body));
    figure('chat: identical system message, turn 5 → its tool round', round.text);
    if (round.same !== round.total) throw new Error(`the system message changed in the tool round: ${round.text}`);
    await sleep(500);
    await page.screenshot({ path: path.join(ctx.artifacts, 'vscode-chat.png') });
    ctx.docsImage('vscode-chat.png');
  });

  /** The text of the tool result that ends a tool round's request, after a call of `tool`. */
  function toolResult(body, tool) {
    const call = body.messages.findLast((m) => m.role === 'assistant')?.tool_calls?.[0];
    if (call?.function?.name !== tool) throw new Error(`the assistant's tool call: ${JSON.stringify(call)}`);
    const result = body.messages.at(-1);
    if (result.role !== 'tool') throw new Error(`the request after the tool call ends with a ${result.role} message`);
    return textOf(result.content);
  }

  /** A tool result that holds our instruction: its sections, and not one memory file the system message carries. */
  function assertInstructionWithoutMemory(text, what) {
    const { 'GEMINI.md': _gone, 'pkg/AGENTS.md': _edited, ...still } = WE_DELIVER;
    const carried = { ...VSCODE_READS, ...still, 'pkg/AGENTS.md': EDITED };
    for (const [file, marker] of Object.entries(carried)) {
      if (text.includes(marker)) throw new Error(`${what} repeats ${file}, which the system message carries: ${text.slice(0, 300)}`);
    }
    if (!text.includes('are not repeated here')) throw new Error(`${what} does not say the memory files are elsewhere: ${text.slice(0, 300)}`);
    if (text.length < 500) throw new Error(`${what} is not our instruction: ${text}`);
  }

  await check('chat: a stub answer calling contextCompanion_systemInstruction gets our instruction without the memory files the system message already carries', async () => {
    const [ask, answer] = await sendTurn(`${TURN_PREFIX} 6: please call contextCompanion_systemInstruction`, { rounds: 2 });
    const { 'GEMINI.md': _gone, 'pkg/AGENTS.md': _edited, ...still } = WE_DELIVER;
    for (const [body, what] of [[ask.body, 'turn 6'], [answer.body, 'turn 6 tool round']]) {
      assertMarkers(body, { ...VSCODE_READS, ...still, 'pkg/AGENTS.md': EDITED }, 1, what);
    }
    const text = toolResult(answer.body, 'contextCompanion_systemInstruction');
    assertInstructionWithoutMemory(text, 'the contextCompanion_systemInstruction result');
    figure('chat: tool result (contextCompanion_systemInstruction)', `${Buffer.byteLength(text)} bytes, no memory file; ends "${text.slice(-90).replace(/\s+/g, ' ')}"`);
  });

  await check('chat: a stub answer calling the MCP server\'s get_system_instruction gets it without the memory files too (--memory-elsewhere)', async () => {
    const mcpTool = turns[0].request.tools.map((t) => t.function?.name).find((n) => /^mcp_.*_get_system_instruction$/.test(n ?? ''));
    if (!mcpTool) throw new Error('no MCP get_system_instruction tool in the request');
    const [ask, answer] = await sendTurn(`${TURN_PREFIX} 7: please call ${mcpTool}`, { rounds: 2 });
    const { 'GEMINI.md': _gone, 'pkg/AGENTS.md': _edited, ...still } = WE_DELIVER;
    for (const [body, what] of [[ask.body, 'turn 7'], [answer.body, 'turn 7 tool round']]) {
      assertMarkers(body, { ...VSCODE_READS, ...still, 'pkg/AGENTS.md': EDITED }, 1, what);
    }
    const text = toolResult(answer.body, mcpTool);
    assertInstructionWithoutMemory(text, `the ${mcpTool} result`);
    figure('chat: tool result (MCP get_system_instruction)', `${Buffer.byteLength(text)} bytes, no memory file`);
  });

  if (stub) {
    // Every recorded chat request, for a look at what VS Code sent (editors/vscode/.e2e/artifacts/).
    fs.writeFileSync(path.join(ctx.artifacts, 'chat-requests.json'), JSON.stringify(chatRequests(), null, 1));
  }
  if (failed()) {
    console.error(extensionLog(dirs.userData).slice(-6000));
    console.error(`[e2e] chat code-server log: ${path.join(ctx.artifacts, 'chat-code-server.log')}`);
  }
  await context?.close().catch(() => undefined);
  await stopCodeServer();
  stub?.process.kill();
}
