/** Read-only markdown documents: the system instruction and the turn context. */
import * as vscode from 'vscode';
import type { InstructionModel } from './instruction';

export const VIEW_SCHEME = 'context-companion';
export const INSTRUCTION_URI = vscode.Uri.from({ scheme: VIEW_SCHEME, path: '/System Instruction.md' });
export const TURN_CONTEXT_URI = vscode.Uri.from({ scheme: VIEW_SCHEME, path: '/Turn Context.md' });
export const EXPLAIN_URI = vscode.Uri.from({ scheme: VIEW_SCHEME, path: '/Memory per Agent.md' });

const EMPTY_INSTRUCTION =
  '_The system instruction is empty: every prompt section is switched off and no memory file was found._\n';

export class ViewProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private turnContext = '';
  private explanation = '';
  private readonly subscription: vscode.Disposable;

  constructor(private readonly instruction: InstructionModel) {
    // A pushed change re-renders the open instruction view.
    this.subscription = instruction.onDidChange(() => this.changed.fire(INSTRUCTION_URI));
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    if (uri.path === INSTRUCTION_URI.path) {
      try {
        const result = this.instruction.current ?? (await this.instruction.refresh());
        return result.text ? result.text : EMPTY_INSTRUCTION;
      } catch (err) {
        return `_Context Companion could not get the system instruction: ${err instanceof Error ? err.message : String(err)}_\n`;
      }
    }
    if (uri.path === TURN_CONTEXT_URI.path) {
      return this.turnContext;
    }
    if (uri.path === EXPLAIN_URI.path) {
      return this.explanation;
    }
    return '';
  }

  setTurnContext(text: string): void {
    this.turnContext = text;
    this.changed.fire(TURN_CONTEXT_URI);
  }

  setExplanation(text: string): void {
    this.explanation = text;
    this.changed.fire(EXPLAIN_URI);
  }

  /** Ask VS Code to re-read the instruction view (if it is open). */
  refreshInstruction(): void {
    this.changed.fire(INSTRUCTION_URI);
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}

/** Open one of the views beside nothing else: as a normal, non-preview markdown editor. */
export async function openView(uri: vscode.Uri): Promise<vscode.TextEditor> {
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'markdown') {
    doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  }
  return vscode.window.showTextDocument(doc, { preview: false });
}
