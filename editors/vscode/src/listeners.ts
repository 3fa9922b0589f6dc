/**
 * The server's listening ports, opened when they are used. The extension starts the server with
 * `capabilities.listenOnRequest`: nothing listens until it sends `contextCompanion.openListeners`:
 * `{"for": "terminal"}` once this window has a terminal (Gemini CLI and Claude Code, started there, look
 * for the editor as they start: their discovery and lock files are written then; the port numbers are
 * in the terminals' environment from the start), `{"for": "mcp"}` just before VS Code starts our MCP
 * server (mcpProvider.ts). A window without a terminal and without the MCP server listens on no port.
 * The `vscode` module is injected, so this is unit-tested without VS Code.
 */
import type * as vscode from 'vscode';

export const OPEN_LISTENERS = 'contextCompanion.openListeners';

export interface ListenerHost {
  /** Whether the server runs now (commands can be sent). */
  readonly running: boolean;
  execute(command: string, args: unknown): Promise<unknown>;
  log(line: string): void;
}

/** Asks the server for the terminal agents' listeners while this window has a terminal. */
export class TerminalListeners implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly vs: typeof vscode,
    private readonly host: ListenerHost,
  ) {
    this.disposables.push(vs.window.onDidOpenTerminal(() => void this.serverStarted()));
  }

  /** The server (re)started, or a terminal opened: ask when a terminal exists. */
  async serverStarted(): Promise<boolean> {
    if (!this.host.running || this.vs.window.terminals.length === 0) return false;
    try {
      await this.host.execute(OPEN_LISTENERS, { for: 'terminal' });
      return true;
    } catch (err) {
      this.host.log(`Could not open the terminal agents' listeners: ${err instanceof Error ? err.message : String(err)}`);
      return false;
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
