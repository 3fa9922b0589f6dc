/** Reports the active editor's cursor and selections to the server, debounced (positions only). */
import * as vscode from 'vscode';
import { isTrackedScheme, sameCursor, toCursorParams } from './cursor';
import { debounce } from './debounce';
import { CURSOR_NOTIFICATION, type CursorParams } from './protocol';
import type { ServerConnection } from './serverConnection';

export const CURSOR_DEBOUNCE_MS = 50;

export class CursorTracker implements vscode.Disposable {
  private lastSent: CursorParams | undefined;
  private readonly schedule = debounce(() => this.report(), CURSOR_DEBOUNCE_MS);
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly server: ServerConnection) {
    this.subscriptions = [
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (e.textEditor === vscode.window.activeTextEditor) this.schedule();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.schedule()),
      server.onDidChangeState((state) => {
        if (state.kind === 'running') {
          // A new server process knows nothing yet: report the current cursor again.
          this.lastSent = undefined;
          this.schedule();
        }
      }),
    ];
  }

  /** Send a pending report now (before asking the server for the turn context). */
  flush(): void {
    this.schedule.flush();
  }

  private report(): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor || !isTrackedScheme(editor.document.uri.scheme)) return;
    const params = toCursorParams(this.server.asUri(editor.document.uri), editor.selections);
    if (!params || sameCursor(params, this.lastSent)) return;
    if (this.server.notify(CURSOR_NOTIFICATION, params)) this.lastSent = params;
  }

  dispose(): void {
    this.schedule.cancel();
    this.subscriptions.forEach((d) => d.dispose());
  }
}
