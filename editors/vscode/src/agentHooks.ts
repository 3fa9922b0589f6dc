/**
 * "Connect Agent Memory Hooks…": pick one of the agents with hooks the server lists (`contextCompanion.listAgents`),
 * and run `context-companion setup --agent <id> --workspace <folder>` for the window's folder with the same
 * program the extension runs the server with; show what it did (or its one-line error). From then
 * on that agent's hooks run `context-companion hook`, which asks this window's server for the memory
 * the agent does not read itself (docs/agents.md, "Agent hooks").
 *
 * The `vscode` module, the agent list and the process runner are injected, so this is unit-tested without VS Code.
 */
import { execFile } from 'node:child_process';
import type * as vscode from 'vscode';
import { type AgentInfo, setupDetail } from './agentList';
import { cliCommandLine, type LaunchPlan } from './launch';

export const CONNECT_AGENT_HOOKS = 'contextCompanion.connectAgentHooks';
const TITLE = 'Context Companion';
const SETUP_TIMEOUT_MS = 60_000;

export interface CommandLine {
  command: string;
  args: string[];
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `setup` from the plan that starts the server: the same interpreter, the same program, else PATH. */
export function setupCommandLine(plan: LaunchPlan, agent: string, folder: string): CommandLine {
  return cliCommandLine(plan, ['setup', '--agent', agent, '--workspace', folder]);
}

/** What to show: setup's own lines when it worked, its one-line error when it did not. */
export function setupOutcome(result: RunResult): { ok: boolean; message: string } {
  const lines = (text: string): string[] => text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  if (result.code === 0) return { ok: true, message: lines(result.stdout).join(' ') || 'done.' };
  const error = lines(result.stderr).pop()?.replace(/^context-companion: /, '');
  return { ok: false, message: error || `setup exited with status ${result.code ?? 'unknown'}` };
}

export function runProcess(line: CommandLine, cwd: string): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(line.command, line.args, { cwd, timeout: SETUP_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout: stdout ?? '', stderr: stderr || (err && code === null ? err.message : '') });
    });
  });
}

type Vs = Pick<typeof vscode, 'window' | 'workspace' | 'commands'>;

export interface AgentHooksDeps {
  /** The server's agents (agentList.ts); rejects with the server's state when it is not running. */
  agents(): Promise<AgentInfo[]>;
  plan(): Promise<LaunchPlan>;
  /** The folder `setup` runs in (launch.ts launchFolder): never the project, which goes in `--workspace`. */
  launchFolder(): string;
  run(line: CommandLine, cwd: string): Promise<RunResult>;
  log(line: string): void;
}

/** The palette command's work (registered by {@link registerAgentHooks}). */
export async function connectAgentHooks(vs: Vs, deps: AgentHooksDeps): Promise<void> {
  const folders = vs.workspace.workspaceFolders?.filter((f) => f.uri.scheme === 'file') ?? [];
  if (folders.length === 0) {
    void vs.window.showErrorMessage(`${TITLE}: open a folder first: the hooks are set up for a project folder.`);
    return;
  }
  const withSetup = (await deps.agents()).flatMap((a) => (a.hooks && a.setup ? [{ ...a, setup: a.setup }] : []));
  if (withSetup.length === 0) {
    void vs.window.showErrorMessage(`${TITLE}: the server lists no agent with hooks to set up.`);
    return;
  }
  const agent = await vs.window.showQuickPick(
    withSetup.map((a) => ({ label: a.name, description: a.id, detail: setupDetail(a.setup), id: a.id })),
    { title: `${TITLE}: Connect Agent Memory Hooks`, placeHolder: 'Which agent gets the memory it does not read itself?' },
  );
  if (!agent) return;
  let folder = folders[0];
  if (folders.length > 1) {
    const picked = await vs.window.showQuickPick(
      folders.map((f) => ({ label: f.name, description: f.uri.fsPath, folder: f })),
      { title: `${TITLE}: Connect Agent Memory Hooks`, placeHolder: 'For which folder?' },
    );
    if (!picked) return;
    folder = picked.folder;
  }
  const line = setupCommandLine(await deps.plan(), agent.id, folder.uri.fsPath);
  deps.log(`Connect Agent Memory Hooks: ${[line.command, ...line.args].join(' ')}`);
  const outcome = setupOutcome(await deps.run(line, deps.launchFolder()));
  deps.log(`Connect Agent Memory Hooks: ${outcome.message}`);
  if (outcome.ok) void vs.window.showInformationMessage(`${TITLE}: ${outcome.message}`);
  else void vs.window.showErrorMessage(`${TITLE}: ${agent.label} hooks not set up: ${outcome.message}`);
}

export function registerAgentHooks(vs: Vs, deps: AgentHooksDeps): vscode.Disposable {
  return vs.commands.registerCommand(CONNECT_AGENT_HOOKS, async () => {
    try {
      await connectAgentHooks(vs, deps);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      void vs.window.showErrorMessage(`${TITLE}: cannot set up the agent's hooks: ${why}`);
    }
  });
}
