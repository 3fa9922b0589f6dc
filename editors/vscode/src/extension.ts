/**
 * Context Companion for VS Code: starts the language server, reports the cursor, shows the system
 * instruction, and lets other extensions call the server's commands
 * (`vscode.commands.executeCommand('contextCompanion.getSystemInstruction', {...})`).
 */
import * as vscode from 'vscode';
import { CHAT_SETTINGS, ChatInstructions, MEMORY_CHANGED_NOTIFICATION } from './chatInstructions';
import { CursorTracker } from './cursorTracker';
import {
  CLOSE_DIFF,
  COMPANION_STARTED,
  COMPANION_STATUS,
  GeminiCompanionUi,
  geminiAskedFor,
  SHOW_DIFF,
  type GeminiStatus,
  type ShowDiffParams,
} from './gemini';
import { InstructionModel } from './instruction';
import { registerAgentHooks, runProcess } from './agentHooks';
import { AgentList } from './agentList';
import { registerLanguageModelTools } from './lmTools';
import { OPEN_LISTENERS, TerminalListeners } from './listeners';
import { registerMcpProvider } from './mcpProvider';
import { registerPalette } from './palette';
import { PaletteCommand, ServerCommand, type InstructionChangedParams, type SystemInstructionResult } from './protocol';
import { ServerConnection } from './serverConnection';
import { SECTION, setWorkspaceTrust } from './settingsPayload';
import { countIncluded, formatStatus, type StatusState } from './statusText';
import { VIEW_SCHEME, ViewProvider } from './views';

/** What `vscode.extensions.getExtension('context-companion.context-companion').activate()` returns. */
export interface ContextCompanionApi {
  /** Resolves once the server runs (its commands are registered); rejects with the reason when it cannot start. */
  ready(): Promise<void>;
  /** Fires on every `contextCompanion/systemInstructionChanged` from the server. */
  readonly onDidChangeSystemInstruction: vscode.Event<InstructionChangedParams>;
}

let server: ServerConnection | undefined;

export function activate(context: vscode.ExtensionContext): ContextCompanionApi {
  const output = vscode.window.createOutputChannel('Context Companion');
  server = new ServerConnection(context, output);
  const instruction = new InstructionModel(server);
  const views = new ViewProvider(instruction);
  const cursor = new CursorTracker(server);

  const status = vscode.window.createStatusBarItem('contextCompanion.status', vscode.StatusBarAlignment.Right, 100);
  status.name = 'Context Companion';
  const showStatus = (state: StatusState): void => {
    const view = formatStatus(state);
    status.text = view.text;
    status.tooltip = view.tooltip;
    status.accessibilityInformation = { label: view.label, role: 'button' };
    status.command = view.command;
    status.backgroundColor = view.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    status.show();
  };
  const readyStatus = (result: SystemInstructionResult): void => {
    if (result.tokens) {
      showStatus({ kind: 'ready', tokens: result.tokens, memoryFiles: countIncluded(result.memoryFiles) });
    }
  };
  showStatus({ kind: 'starting' });

  const srv = server;
  // The payload tells the server whether the workspace is trusted; when trust is granted, the server
  // asks for the settings again (a workspace's file-naming values take effect only then).
  setWorkspaceTrust(() => vscode.workspace.isTrusted);
  context.subscriptions.push(
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      srv.notify('workspace/didChangeConfiguration', { settings: { [SECTION]: srv.serverSettings() } });
    }),
  );
  const chat = registerChatInstructions(context, srv);
  const gemini = new GeminiCompanionUi(
    vscode,
    context,
    async () => {
      if (!srv.running) return undefined;
      return (await srv.execute<{ geminiCli?: GeminiStatus }>(COMPANION_STATUS)).geminiCli;
    },
    () => {
      const section = vscode.workspace.getConfiguration('contextCompanion.companion.geminiCli');
      return geminiAskedFor((key) => section.inspect(key) as Record<string, unknown> | undefined);
    },
  );
  const terminals = new TerminalListeners(vscode, {
    get running() {
      return srv.running;
    },
    execute: (command, args) => srv.execute(command, args as object),
    log: (line) => srv.log(line),
  });
  // The agents the pickers list: the server's, asked once per server start (after a start under way settles).
  const agents = new AgentList(async () => {
    await srv.whenSettled();
    return srv.execute(ServerCommand.listAgents);
  });
  srv.onClient((client) => {
    client.onNotification(COMPANION_STARTED, (params: unknown) => gemini.onStarted(params));
    client.onRequest(SHOW_DIFF, (params: ShowDiffParams) => gemini.showDiff(params));
    client.onRequest(CLOSE_DIFF, (params: { uri: string }) => gemini.closeDiff(params));
  });
  context.subscriptions.push(
    output,
    status,
    srv,
    gemini,
    terminals,
    instruction,
    views,
    cursor,
    vscode.workspace.registerTextDocumentContentProvider(VIEW_SCHEME, views),
    instruction.onDidChange(readyStatus),
    srv.onDidChangeState((state) => {
      agents.forget(); // another server (or none): its list is asked again
      if (state.kind === 'running') {
        void terminals.serverStarted();
        instruction.refresh().then(readyStatus, (err: unknown) => {
          const why = err instanceof Error ? err.message : String(err);
          srv.log(`Could not get the system instruction: ${why}`);
          showStatus({ kind: 'error', message: `could not get the system instruction: ${why}` });
        });
        return;
      }
      showStatus(state.kind === 'error' || state.kind === 'notInstalled' ? state : { kind: state.kind });
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (
        e.affectsConfiguration('contextCompanion.serverCommand') ||
        e.affectsConfiguration('contextCompanion.interpreter')
      ) {
        const restart = 'Restart Server';
        const choice = await vscode.window.showInformationMessage(
          'Context Companion: the server command changed. Restart the server to use it?',
          restart,
        );
        if (choice === restart) await vscode.commands.executeCommand(PaletteCommand.restartServer);
      }
    }),
    ...registerPalette(srv, instruction, views, cursor, agents),
    ...registerLanguageModelTools(vscode, srv, (line) => srv.log(line), () => chat.state.kind === 'on'),
    registerAgentHooks(vscode, {
      agents: () => agents.get(),
      plan: () => srv.launchPlan(),
      launchFolder: () => srv.launchFolder,
      run: runProcess,
      log: (line) => srv.log(line),
    }),
    // Trust granted: the workspace's serverCommand/interpreter (and the Python extension's interpreter) count
    // now; start again from what they say.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void srv.restart()),
  );
  registerAgentMcpServer(context, srv, chat);

  void srv.start();

  return {
    async ready(): Promise<void> {
      const state = await srv.whenSettled();
      if (state.kind !== 'running') {
        throw new Error(
          state.kind === 'error' || state.kind === 'notInstalled'
            ? `Context Companion: ${state.message}`
            : 'Context Companion: the server is not running.',
        );
      }
    },
    onDidChangeSystemInstruction: srv.onDidChangeInstruction,
  };
}

/**
 * Offer `context-companion mcp --attach` to VS Code's chat as an MCP server of this window; when
 * VS Code takes it, the language server starts with `--mcp-endpoint` so there is something to attach to.
 */
function registerAgentMcpServer(context: vscode.ExtensionContext, srv: ServerConnection, chat: ChatInstructions): void {
  const changed = new vscode.EventEmitter<void>();
  const registration = registerMcpProvider(
    vscode,
    {
      workspace: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      launchFolder: () => srv.launchFolder,
      plan: () => srv.launchPlan(),
      serverPid: async () => {
        await srv.whenSettled();
        return srv.serverPid;
      },
      // The chat has the memory in its system message: the MCP tools leave it out (--memory-elsewhere).
      memoryElsewhere: () => chat.state.kind === 'on',
      openEndpoint: async () => {
        if ((await srv.whenSettled()).kind === 'running') await srv.execute(OPEN_LISTENERS, { for: 'mcp' });
      },
      onDidChange: changed.event,
      version: String(context.extension.packageJSON.version ?? ''),
    },
    (line) => srv.log(line),
  );
  context.subscriptions.push(changed);
  if (!registration.registered) return;
  srv.mcpEndpoint = true;
  context.subscriptions.push(
    registration.disposable,
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    srv.onDidChangeState((state) => {
      if (state.kind === 'running') changed.fire();
    }),
    chat.onDidChangeState(() => changed.fire()),
  );
}

/**
 * Put the memory VS Code's chat does not read itself into its chat instructions (see chatInstructions.ts),
 * kept in step with memory, the open files and VS Code's own reading settings.
 */
function registerChatInstructions(context: vscode.ExtensionContext, srv: ServerConnection): ChatInstructions {
  const storage = (context.storageUri ?? context.globalStorageUri).fsPath;
  const chat = new ChatInstructions(vscode, srv, { extensionPath: context.extensionPath, storagePath: storage, pid: process.pid }, (line) =>
    srv.log(line),
  );
  context.subscriptions.push(chat);
  srv.onClient((client) => client.onNotification(MEMORY_CHANGED_NOTIFICATION, () => chat.schedule()));
  let selected = false;
  void chat.start().then((on) => {
    if (!on) return;
    context.subscriptions.push(
      srv.onDidChangeState((state) => {
        if (state.kind === 'running') chat.schedule();
      }),
      srv.onDidChangeInstruction(() => chat.schedule()),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        selected = editor?.selections.some((sel) => !sel.isEmpty) ?? false;
        chat.schedule();
      }),
      // A selection makes VS Code attach the active file and the rules that match it: ask again when one
      // appears or goes (not on every cursor move).
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.textEditor !== vscode.window.activeTextEditor) return;
        const now = e.selections.some((sel) => !sel.isEmpty);
        if (now !== selected) {
          selected = now;
          chat.schedule();
        }
      }),
      vscode.workspace.onDidOpenTextDocument(() => chat.schedule()),
      vscode.workspace.onDidCloseTextDocument(() => chat.schedule()),
      vscode.workspace.onDidChangeWorkspaceFolders(() => chat.schedule()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (CHAT_SETTINGS.some((key) => e.affectsConfiguration(key))) chat.schedule();
      }),
    );
    if (srv.running) chat.schedule();
  });
  return chat;
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
