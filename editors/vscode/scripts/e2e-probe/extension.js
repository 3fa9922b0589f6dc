// Test-only extension installed next to Context Companion by scripts/e2e.mjs (never shipped).
// It stands for "any chat extension": it sees Context Companion's tools only through vscode.lm,
// invokes them with vscode.lm.invokeTool, and writes what it got to $CC_E2E_PROBE_OUT (JSON).
const fs = require('node:fs');
const vscode = require('vscode');

const OURS = 'contextCompanion_';
const INSTRUCTION = 'contextCompanion_systemInstruction';

function textOf(result) {
  return result.content
    .map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : `[${part?.constructor?.name ?? typeof part}]`))
    .join('');
}

async function invoke(name, input) {
  return textOf(await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined }));
}

async function probe() {
  const out = { vscodeVersion: vscode.version };
  const companion = vscode.extensions.getExtension('context-companion.context-companion');
  if (!companion) throw new Error('Context Companion is not installed');
  const api = await companion.activate();
  await api.ready();
  out.tools = vscode.lm.tools
    .filter((t) => t.name.startsWith(OURS))
    .map((t) => ({ name: t.name, tags: t.tags, description: t.description, inputSchema: t.inputSchema }));
  out.otherTools = vscode.lm.tools.filter((t) => !t.name.startsWith(OURS)).length;
  out.instruction = [await invoke(INSTRUCTION, {}), await invoke(INSTRUCTION, {})];
  const server = await vscode.commands.executeCommand('contextCompanion.getSystemInstruction', { sessionId: 'vscode-chat' });
  out.serverInstruction = server.text;
  out.memoryFiles = await invoke('contextCompanion_memoryFiles', {});
  out.turnContext = await invoke('contextCompanion_turnContext', { forceFull: true });
  try {
    await invoke(INSTRUCTION, { sessionId: 5 });
    out.badInput = 'accepted';
  } catch (err) {
    out.badInput = err instanceof Error ? err.message : String(err);
  }
  out.mcpApi = typeof vscode.lm.registerMcpServerDefinitionProvider;
  // Tools VS Code took from MCP servers (ours once "MCP: List Servers" started it): call get_system_instruction.
  out.allTools = vscode.lm.tools.map((t) => t.name);
  const viaMcp = vscode.lm.tools.find((t) => !t.name.startsWith(OURS) && t.name.endsWith('get_system_instruction'));
  if (viaMcp) {
    out.mcpTool = viaMcp.name;
    const timeout = new Promise((resolve) => setTimeout(() => resolve('(no answer in 30 s)'), 30_000));
    out.mcpInstruction = await Promise.race([invoke(viaMcp.name, {}).catch((err) => `(error: ${err?.message ?? err})`), timeout]);
  }
  return out;
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('ccE2eProbe.run', async () => {
      const file = process.env.CC_E2E_PROBE_OUT;
      let out;
      try {
        out = await probe();
      } catch (err) {
        out = { error: err instanceof Error ? err.stack ?? err.message : String(err) };
      }
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(out));
      fs.renameSync(`${file}.tmp`, file);
    }),
  );
}

module.exports = { activate };
