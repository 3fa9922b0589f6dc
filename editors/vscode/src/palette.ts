/** The "Context Companion: …" palette commands. */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CursorTracker } from './cursorTracker';
import type { InstructionModel } from './instruction';
import { toMemoryPickItems } from './memoryItems';
import {
  type AddMemoryResult,
  PaletteCommand,
  type RefreshMemoryResult,
  ServerCommand,
  type ShowMemoryResult,
  type TurnContextResult,
} from './protocol';
import { turnContextMarkdown } from './turnView';
import { ServerNotRunningError, type ServerConnection } from './serverConnection';
import { formatRefreshSummary, plural } from './statusText';
import type { AgentList } from './agentList';
import { type ExplainMemoryResult, explainItems, formatExplanation } from './explainView';
import { EXPLAIN_URI, INSTRUCTION_URI, openView, TURN_CONTEXT_URI, type ViewProvider } from './views';

const TITLE = 'Context Companion';

export function registerPalette(
  server: ServerConnection,
  instruction: InstructionModel,
  views: ViewProvider,
  cursor: CursorTracker,
  agents: AgentList,
): vscode.Disposable[] {
  const guarded =
    (fn: () => Promise<void>) =>
    async (): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        await reportError(server, err);
      }
    };

  return [
    vscode.commands.registerCommand(
      PaletteCommand.refresh,
      guarded(async () => {
        const result = await server.execute<RefreshMemoryResult>(ServerCommand.refreshMemory, {});
        await instruction.refresh();
        void vscode.window.showInformationMessage(`${TITLE}: ${formatRefreshSummary(result)}`);
      }),
    ),
    vscode.commands.registerCommand(
      PaletteCommand.showInstruction,
      guarded(async () => {
        await ensureRunning(server);
        await instruction.refresh();
        views.refreshInstruction();
        await openView(INSTRUCTION_URI);
      }),
    ),
    vscode.commands.registerCommand(
      PaletteCommand.showTurnContext,
      guarded(async () => {
        await ensureRunning(server);
        cursor.flush();
        views.setTurnContext(await previewTurnContext(server));
        await openView(TURN_CONTEXT_URI);
      }),
    ),
    vscode.commands.registerCommand(
      PaletteCommand.explainMemoryForAgent,
      guarded(async () => {
        await ensureRunning(server);
        const picked = await vscode.window.showQuickPick(explainItems(await agents.get()), {
          title: `${TITLE}: which agent?`,
          placeHolder: 'Show which memory and rule files it would load, and why',
        });
        if (!picked) return;
        cursor.flush();
        const active = vscode.window.activeTextEditor?.document.uri;
        const args: Record<string, string> = { agent: picked.id };
        if (active?.scheme === 'file') args.activeFile = active.toString();
        const result = await server.execute<ExplainMemoryResult>(ServerCommand.explainMemory, args);
        views.setExplanation(formatExplanation(result));
        await openView(EXPLAIN_URI);
      }),
    ),
    vscode.commands.registerCommand(
      PaletteCommand.showMemoryFiles,
      guarded(async () => {
        const result = await server.execute<ShowMemoryResult>(ServerCommand.showMemory, {});
        const items = toMemoryPickItems(Array.isArray(result.files) ? result.files : []);
        if (items.length === 0) {
          const add = 'Add Memory';
          const choice = await vscode.window.showInformationMessage(
            `${TITLE}: no memory files found. Create an AGENTS.md in your workspace, or add a fact.`,
            add,
          );
          if (choice === add) await vscode.commands.executeCommand(PaletteCommand.addMemoryFact);
          return;
        }
        const included = items.filter((i) => i.label.startsWith('$(check)')).length;
        const picked = await vscode.window.showQuickPick(items, {
          title: `${TITLE}: Memory Files`,
          placeHolder: `${plural(items.length, 'memory file', 'memory files')}, ${included} included. Pick one to open it.`,
          matchOnDescription: true,
          matchOnDetail: true,
        });
        if (picked) await openFile(picked.path);
      }),
    ),
    vscode.commands.registerCommand(
      PaletteCommand.addMemoryFact,
      guarded(async () => {
        await ensureRunning(server);
        const fact = await vscode.window.showInputBox({
          title: `${TITLE}: Add Memory`,
          prompt: 'A fact the agent should remember, saved as a bullet in AGENTS.md',
          placeHolder: 'e.g. Run the tests with `python -m pytest -q`',
          ignoreFocusOut: true,
          validateInput: (value) => (value.trim() === '' ? 'Type the fact to remember.' : undefined),
        });
        if (fact === undefined || fact.trim() === '') return;
        const scopes: (vscode.QuickPickItem & { scope: 'global' | 'workspace' })[] = [
          { label: 'Global', description: 'your AGENTS.md for every project', scope: 'global' },
        ];
        if (vscode.workspace.workspaceFolders?.length) {
          scopes.push({ label: 'Workspace', description: "this workspace's AGENTS.md", scope: 'workspace' });
        }
        const scope =
          scopes.length === 1
            ? scopes[0]
            : await vscode.window.showQuickPick(scopes, { title: `${TITLE}: Add Memory`, placeHolder: 'Where to save it' });
        if (!scope) return;
        const result = await server.execute<AddMemoryResult>(ServerCommand.addMemory, {
          fact: fact.trim(),
          scope: scope.scope,
        });
        const open = 'Open File';
        const choice = await vscode.window.showInformationMessage(`${TITLE}: saved to ${result.path}`, open);
        if (choice === open) await openFile(result.path);
      }),
    ),
    vscode.commands.registerCommand(PaletteCommand.restartServer, async () => {
      await server.restart();
      const state = server.state;
      if (state.kind === 'running') {
        void vscode.window.setStatusBarMessage(`${TITLE}: server restarted`, 3000);
      }
    }),
  ];
}

/** A full turn context from a throw-away session, so the agent's own baselines do not move. */
async function previewTurnContext(server: ServerConnection): Promise<string> {
  const sessionId = `vscode-preview-${Date.now().toString(36)}`;
  await server.execute(ServerCommand.startSession, { sessionId });
  try {
    const result = await server.execute<TurnContextResult>(ServerCommand.getTurnContext, { sessionId, forceFull: true });
    return turnContextMarkdown(result);
  } finally {
    await server.execute(ServerCommand.endSession, { sessionId }).catch(() => undefined);
  }
}

async function ensureRunning(server: ServerConnection): Promise<void> {
  const state = await server.whenSettled();
  if (state.kind !== 'running') {
    throw new ServerNotRunningError(state.kind === 'error' || state.kind === 'notInstalled' ? state.message : undefined);
  }
}

/** Open a path the server reported (absolute, `~/…`, or relative to the first workspace folder). */
async function openFile(reported: string): Promise<void> {
  let file = reported;
  if (file === '~' || file.startsWith('~/')) file = path.join(os.homedir(), file.slice(1));
  if (!path.isAbsolute(file)) {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    if (root) file = path.join(root, file);
  }
  try {
    await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: false });
  } catch (err) {
    void vscode.window.showErrorMessage(
      `${TITLE}: cannot open ${file}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

async function reportError(server: ServerConnection, err: unknown): Promise<void> {
  if (err instanceof ServerNotRunningError) {
    const restart = 'Restart Server';
    const output = 'Show Output';
    const choice = await vscode.window.showErrorMessage(`${TITLE}: ${err.message}`, restart, output);
    if (choice === restart) await vscode.commands.executeCommand(PaletteCommand.restartServer);
    else if (choice === output) server.output.show(true);
    return;
  }
  const text = err instanceof Error ? err.message : String(err);
  server.log(`Command failed: ${text}`);
  void vscode.window.showErrorMessage(`${TITLE}: ${text}`);
}
