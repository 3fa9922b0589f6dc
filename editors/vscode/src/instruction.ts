/**
 * The system instruction as the default session sees it: fetched from the server, kept fresh on
 * `systemInstructionChanged`, shown in the status bar and in a read-only markdown view.
 */
import * as vscode from 'vscode';
import { ServerCommand, type InstructionChangedParams, type SystemInstructionResult } from './protocol';
import type { ServerConnection } from './serverConnection';

export class InstructionModel implements vscode.Disposable {
  private latest: SystemInstructionResult | undefined;
  private inflight: Promise<SystemInstructionResult> | undefined;
  private queued: Promise<SystemInstructionResult> | undefined;
  private readonly changed = new vscode.EventEmitter<SystemInstructionResult>();
  /** Fires when a fetched instruction differs from the one before (new etag). */
  readonly onDidChange = this.changed.event;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly server: ServerConnection) {
    this.subscriptions.push(
      server.onDidChangeInstruction((params) => this.onPush(params)),
      server.onDidChangeState((state) => {
        // A new server process: forget the old etag (the extension fetches anew on 'running').
        if (state.kind !== 'running') this.latest = undefined;
      }),
    );
  }

  get current(): SystemInstructionResult | undefined {
    return this.latest;
  }

  /**
   * Fetch the instruction. The answer always comes from a request sent after this call (a fetch
   * already under way may predate a change, so one more is queued behind it; callers share it).
   * Asks with the known etag, so an unchanged instruction costs no text.
   */
  refresh(): Promise<SystemInstructionResult> {
    if (this.inflight) {
      if (!this.queued) {
        this.queued = this.inflight
          .catch(() => undefined)
          .then(() => {
            this.queued = undefined;
            return this.refresh();
          });
      }
      return this.queued;
    }
    this.inflight = this.fetch().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async fetch(): Promise<SystemInstructionResult> {
    const known = this.latest;
    const result = await this.server.execute<SystemInstructionResult>(
      ServerCommand.getSystemInstruction,
      known ? { ifNoneMatch: known.etag } : {},
    );
    if (known && result.unchanged && result.etag === known.etag) {
      return known;
    }
    const full =
      result.unchanged || typeof result.text !== 'string'
        ? await this.server.execute<SystemInstructionResult>(ServerCommand.getSystemInstruction, {})
        : result;
    const isNew = !known || full.etag !== known.etag;
    this.latest = full;
    if (isNew) this.changed.fire(full);
    return full;
  }

  private onPush(params: InstructionChangedParams): void {
    if (this.latest && params.etag === this.latest.etag) return;
    void this.refresh().catch((err) => this.server.log(`Fetching the changed system instruction: ${message(err)}`));
  }

  dispose(): void {
    this.subscriptions.forEach((d) => d.dispose());
    this.changed.dispose();
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
