/**
 * Gemini CLI's IDE companion, VS Code side: the server runs the companion; this puts its
 * environment into integrated terminals (`environmentVariableCollection`), shows its diffs with
 * `vscode.diff` plus Accept/Reject, and says in the status bar whether a CLI is connected.
 * The pure parts (status text, env from the notification, the diff answer) are exported for tests.
 */
import type * as vscode from 'vscode';

export const COMPANION_STARTED = 'contextCompanion/companionStarted';
export const SHOW_DIFF = 'contextCompanion/showDiff';
export const CLOSE_DIFF = 'contextCompanion/closeDiff';
export const COMPANION_STATUS = 'contextCompanion.companionStatus';
export const DIFF_CONTEXT_KEY = 'contextCompanion.geminiDiffOpen';

export const GeminiCommand = {
  accept: 'contextCompanion.geminiDiffAccept',
  reject: 'contextCompanion.geminiDiffReject',
} as const;

export interface GeminiStatus {
  running: boolean;
  port: number | null;
  discoveryFile: string | null;
  connectedClients: number;
}

export interface ShowDiffParams {
  uri: string;
  newText: string;
  title: string;
}

export type DiffOutcome = 'accepted' | 'rejected' | 'closed';

export interface DiffAnswer {
  outcome: DiffOutcome;
  text?: string;
}

/** The integrations that announce terminal variables, and the only variable names each may set
 *  (a server cannot change PATH or anything else in terminals). */
export const TERMINAL_VARIABLES = {
  geminiCli: /^GEMINI_CLI_[A-Z_]+$/,
  claudeCode: /^(CLAUDE_CODE_SSE_PORT|ENABLE_IDE_INTEGRATION)$/,
} as const;

export type Integration = keyof typeof TERMINAL_VARIABLES;

/** Whether the user set a Gemini CLI companion setting themselves (in any scope): they asked for it.
 *  `inspect` is `WorkspaceConfiguration.inspect` of the `contextCompanion.companion.geminiCli` section's keys. */
export function geminiAskedFor(inspect: (key: string) => Record<string, unknown> | undefined): boolean {
  return ['enabled', 'port'].some((key) => {
    const i = inspect(key);
    return (
      i !== undefined &&
      ['globalValue', 'workspaceValue', 'workspaceFolderValue'].some((scope) => i[scope] !== undefined && i[scope] !== false && i[scope] !== 0)
    );
  });
}

/** Anthropic's own Claude Code extension: when it is installed, its terminals' variables are left to it. */
export const CLAUDE_CODE_EXTENSION = 'anthropic.claude-code';

/** The variables for terminals that `contextCompanion/companionStarted` announces for one
 *  integration (default: Gemini CLI); undefined when it stopped or the message does not say. */
export function terminalEnv(params: unknown, integration: Integration = 'geminiCli'): Record<string, string> | undefined {
  if (typeof params !== 'object' || params === null) return undefined;
  const started = (params as Record<string, unknown>)[integration];
  if (typeof started !== 'object' || started === null) return undefined;
  const env = (started as { env?: unknown }).env;
  if (typeof env !== 'object' || env === null) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (TERMINAL_VARIABLES[integration].test(key) && (typeof value === 'string' || typeof value === 'number')) {
      out[key] = String(value);
    }
  }
  return out;
}

/** Each integration sends its own notification with its own key: the terminal variables after one
 *  arrives are the previous ones with that key's replaced (`null` removes them); other keys stay. */
export function mergeTerminalEnvs(
  current: ReadonlyMap<Integration, Record<string, string>>,
  params: unknown,
): Map<Integration, Record<string, string>> {
  const next = new Map(current);
  if (typeof params !== 'object' || params === null) return next;
  for (const integration of Object.keys(TERMINAL_VARIABLES) as Integration[]) {
    if (!Object.prototype.hasOwnProperty.call(params, integration)) continue;
    const env = terminalEnv(params, integration);
    if (env) next.set(integration, env);
    else next.delete(integration);
  }
  return next;
}

/** Status bar text for the companion; undefined hides the item. It shows while a Gemini CLI is connected;
 *  "ready" (with how to connect) only when the user asked for the companion (`asked`: they set
 *  `contextCompanion.companion.geminiCli.enabled` or `.port` themselves): most users run no Gemini CLI,
 *  and an item that is always there says nothing to them. */
export function formatGeminiStatus(status: GeminiStatus | undefined, asked = false): { text: string; tooltip: string } | undefined {
  if (!status || !status.running) return undefined;
  if (status.connectedClients > 0) {
    const n = status.connectedClients;
    return {
      text: '$(terminal) Gemini CLI connected',
      tooltip: `Gemini CLI connected to Context Companion (port ${status.port}, ${n} client${n === 1 ? '' : 's'}).`,
    };
  }
  if (!asked) return undefined;
  return {
    text: '$(terminal) Gemini CLI: ready',
    tooltip: `Context Companion serves Gemini CLI on port ${status.port}: run \`gemini\` in a new integrated terminal of this workspace.`,
  };
}

/** The answer to `contextCompanion/showDiff`: the proposal's text (with the user's edits) unless rejected. */
export function diffAnswer(outcome: DiffOutcome, text: string | undefined): DiffAnswer {
  return outcome === 'rejected' || text === undefined ? { outcome } : { outcome, text };
}

interface PendingDiff {
  uri: string;
  proposal: vscode.TextDocument;
  resolve: (answer: DiffAnswer) => void;
}

/** The extension's side of the companion. `vscodeApi` is the `vscode` module (injected: tests need no VS Code). */
export class GeminiCompanionUi {
  private readonly diffs = new Map<string, PendingDiff>();
  private envs = new Map<Integration, Record<string, string>>();
  private readonly item: vscode.StatusBarItem;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly vs: typeof vscode,
    private readonly context: vscode.ExtensionContext,
    private readonly status: () => Promise<GeminiStatus | undefined>,
    private readonly asked: () => boolean = () => false,
  ) {
    this.item = vs.window.createStatusBarItem('contextCompanion.geminiCli', vs.StatusBarAlignment.Right, 99);
    this.item.name = 'Gemini CLI companion';
    this.disposables.push(
      this.item,
      vs.commands.registerCommand(GeminiCommand.accept, () => this.decideActive('accepted')),
      vs.commands.registerCommand(GeminiCommand.reject, () => this.decideActive('rejected')),
      vs.workspace.onDidCloseTextDocument((doc) => {
        for (const diff of this.diffs.values()) {
          if (diff.proposal === doc) this.finish(diff, 'closed', undefined);
        }
      }),
    );
    this.timer = setInterval(() => void this.refresh(), 5000);
  }

  /** `contextCompanion/companionStarted`. */
  onStarted(params: unknown): void {
    this.envs = mergeTerminalEnvs(this.envs, params);
    if (this.vs.extensions.getExtension(CLAUDE_CODE_EXTENSION) !== undefined) this.envs.delete('claudeCode');
    const collection = this.context.environmentVariableCollection;
    collection.clear();
    const agents = [...this.envs.keys()].map((k) => (k === 'geminiCli' ? '`gemini`' : '`claude`'));
    if (agents.length > 0) {
      collection.description = `Lets ${agents.join(' and ')} in this terminal connect to Context Companion.`;
      for (const env of this.envs.values()) {
        for (const [key, value] of Object.entries(env)) collection.replace(key, value);
      }
    }
    void this.refresh();
  }

  async refresh(): Promise<void> {
    let view: { text: string; tooltip: string } | undefined;
    const asked = this.asked();
    if (!asked && this.vs.window.terminals.length === 0) {
      // No terminal: the companion's port opens with the first one (listeners.ts), so no CLI is connected;
      // nothing to ask the server every 5 s.
      this.item.hide();
      return;
    }
    try {
      view = formatGeminiStatus(await this.status(), asked);
    } catch {
      view = undefined;
    }
    if (!view) {
      this.item.hide();
      return;
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.show();
  }

  /** `contextCompanion/showDiff`: resolves when the user accepts, rejects or closes the diff. */
  async showDiff(params: ShowDiffParams): Promise<DiffAnswer> {
    const vs = this.vs;
    const old = this.diffs.get(params.uri);
    if (old) this.finish(old, 'closed', old.proposal.getText());
    const file = vs.Uri.parse(params.uri);
    let language: string | undefined;
    try {
      language = (await vs.workspace.openTextDocument(file)).languageId;
    } catch {
      language = undefined; // a new file: no left side to read, the diff shows it all as added
    }
    const proposal = await vs.workspace.openTextDocument({ content: params.newText, language });
    const answer = new Promise<DiffAnswer>((resolve) => {
      this.diffs.set(params.uri, { uri: params.uri, proposal, resolve });
    });
    await vs.commands.executeCommand('vscode.diff', file, proposal.uri, params.title, { preview: false });
    await vs.commands.executeCommand('setContext', DIFF_CONTEXT_KEY, true);
    void vs.window
      .showInformationMessage(`Gemini CLI proposes a change to ${vs.workspace.asRelativePath(file)}.`, 'Accept', 'Reject')
      .then((choice) => {
        const diff = this.diffs.get(params.uri);
        if (diff && diff.proposal === proposal && choice) this.finish(diff, choice === 'Accept' ? 'accepted' : 'rejected', proposal.getText());
      });
    return answer;
  }

  /** `contextCompanion/closeDiff`. */
  closeDiff(params: { uri: string }): null {
    const diff = this.diffs.get(params.uri);
    if (diff) this.finish(diff, 'closed', diff.proposal.getText());
    return null;
  }

  private decideActive(outcome: DiffOutcome): void {
    const active = this.vs.window.activeTextEditor?.document;
    const diff =
      [...this.diffs.values()].find((d) => d.proposal === active || d.uri === active?.uri.toString()) ??
      (this.diffs.size === 1 ? [...this.diffs.values()][0] : undefined);
    if (!diff) {
      void this.vs.window.showWarningMessage('Context Companion: no Gemini CLI diff is open.');
      return;
    }
    this.finish(diff, outcome, diff.proposal.getText());
  }

  private finish(diff: PendingDiff, outcome: DiffOutcome, text: string | undefined): void {
    if (this.diffs.get(diff.uri) !== diff) return;
    this.diffs.delete(diff.uri);
    diff.resolve(diffAnswer(outcome, text));
    void this.vs.commands.executeCommand('setContext', DIFF_CONTEXT_KEY, this.diffs.size > 0);
    void this.closeTabs(diff.proposal.uri);
  }

  private async closeTabs(proposal: vscode.Uri): Promise<void> {
    const vs = this.vs;
    for (const group of vs.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const input = tab.input;
        if (input instanceof vs.TabInputTextDiff && input.modified.toString() === proposal.toString()) {
          await vs.window.tabGroups.close(tab, true);
        }
      }
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    for (const diff of [...this.diffs.values()]) this.finish(diff, 'closed', undefined);
    for (const d of this.disposables) d.dispose();
  }
}
