/**
 * An MCP server definition provider: VS Code's chat (agent mode) lists "Context Companion" among its
 * MCP servers without an mcp.json, and starts it as
 * `context-companion mcp --attach --workspace <folder> --server-pid <pid>`, a view of this window's
 * language server (started with `--mcp-endpoint`), with the same Python the extension runs the server with.
 * While the chat instructions carry the memory into the chat's system message, `--memory-elsewhere` is added:
 * the MCP tools then leave the memory files out (nothing twice). The flag is decided when VS Code asks for the
 * definitions and again when it starts the server (`resolveMcpServerDefinition`), and a change of it is announced.
 *
 * `vscode.lm.registerMcpServerDefinitionProvider` is final API from VS Code 1.101; in 1.100 it is the
 * proposal `mcpConfigurationProvider` and throws for extensions that may not use proposals. It is
 * feature-detected: where it is missing or refused, the extension logs one line and goes on.
 * The `vscode` module is injected, so this is unit-tested without VS Code.
 */
import type * as vscode from 'vscode';
import { cliCommandLine, type LaunchPlan } from './launch';

/** `contributes.mcpServerDefinitionProviders[].id` (and `modelContextServerCollections` for VS Code 1.100). */
export const MCP_PROVIDER_ID = 'contextCompanion.mcp';
export const MCP_SERVER_LABEL = 'Context Companion';
export const MEMORY_ELSEWHERE_FLAG = '--memory-elsewhere';

export interface McpCommandLine {
  command: string;
  args: string[];
}

/**
 * The `mcp --attach` command line for `workspace`, from the plan that starts the language server:
 * the same interpreter (`<python> -m context_companion mcp ...`), the same program when
 * `contextCompanion.serverCommand` runs `... serve`, else `context-companion` on PATH.
 */
export function mcpCommandLine(plan: LaunchPlan, workspace: string, serverPid?: number, memoryElsewhere = false): McpCommandLine {
  const tail = ['mcp', '--attach', '--workspace', workspace];
  // Two windows on one folder run two servers: the pid says which one is this window's.
  if (serverPid !== undefined) tail.push('--server-pid', String(serverPid));
  // The chat has the memory in its system message already (chat instructions).
  if (memoryElsewhere) tail.push(MEMORY_ELSEWHERE_FLAG);
  return cliCommandLine(plan, tail);
}

/** The plan with `--mcp-endpoint` added when it runs `serve` (a custom command without `serve` is left alone). */
export function withMcpEndpoint(plan: LaunchPlan): LaunchPlan {
  const runsServe = plan.python !== undefined || [plan.command, ...plan.args].includes('serve');
  if (!runsServe || plan.args.includes('--mcp-endpoint')) return plan;
  return { ...plan, args: [...plan.args, '--mcp-endpoint'] };
}

/* The parts of the MCP API used here (final in VS Code 1.101; @types/vscode is pinned to 1.95). */
interface McpStdioServerDefinition {
  cwd?: vscode.Uri;
  args: string[];
}
interface McpStdioServerDefinitionCtor {
  new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string | number | null>,
    version?: string,
  ): McpStdioServerDefinition;
}
interface McpServerDefinitionProvider {
  readonly onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): Promise<object[]>;
  resolveMcpServerDefinition?(server: object, token: vscode.CancellationToken): Promise<object | undefined>;
}
interface McpLm {
  registerMcpServerDefinitionProvider?(id: string, provider: McpServerDefinitionProvider): vscode.Disposable;
}

export interface McpProviderSource {
  /** The workspace folder the server attaches for, or undefined when no folder is open. */
  workspace(): string | undefined;
  /**
   * The folder VS Code starts the MCP server in (launch.ts launchFolder): never the workspace, whose Python files
   * `python -m` would import; the workspace goes in `--workspace`.
   */
  launchFolder(): string;
  /** The plan that starts the language server (throws when the settings are unusable). */
  plan(): Promise<LaunchPlan>;
  /** The pid of this window's server once it runs (undefined when it runs elsewhere, in tcp mode). */
  serverPid(): Promise<number | undefined>;
  /** Whether the chat already gets the memory in its system message (the chat instructions deliver). */
  memoryElsewhere(): boolean;
  /** Opens the language server's MCP endpoint (it listens only when asked); resolves once it listens. */
  openEndpoint?(): Promise<void>;
  /** Fires when the command line may have changed (interpreter, settings, folders). */
  readonly onDidChange: vscode.Event<void>;
  version: string;
}

export type McpRegistration = { registered: true; disposable: vscode.Disposable } | { registered: false; reason: string };

/** Register the provider when this VS Code has the API; otherwise say which API is missing. */
export function registerMcpProvider(vs: typeof vscode, source: McpProviderSource, log: (line: string) => void): McpRegistration {
  const lm = vs.lm as unknown as McpLm | undefined;
  const register = lm?.registerMcpServerDefinitionProvider;
  const Definition = (vs as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionCtor }).McpStdioServerDefinition;
  let reason: string;
  if (typeof register !== 'function') {
    reason = `this VS Code (${vs.version}) has no vscode.lm.registerMcpServerDefinitionProvider (final API from VS Code 1.101)`;
  } else if (typeof Definition !== 'function') {
    reason = `this VS Code (${vs.version}) has no vscode.McpStdioServerDefinition`;
  } else {
    const provider: McpServerDefinitionProvider = {
      onDidChangeMcpServerDefinitions: source.onDidChange,
      provideMcpServerDefinitions: async () => {
        const workspace = source.workspace();
        if (!workspace) return [];
        let plan: LaunchPlan;
        try {
          plan = await source.plan();
        } catch (err) {
          log(`MCP server definition left out: ${err instanceof Error ? err.message : String(err)}`);
          return [];
        }
        const line = mcpCommandLine(plan, workspace, await source.serverPid(), source.memoryElsewhere());
        const definition = new Definition(MCP_SERVER_LABEL, line.command, line.args, {}, source.version);
        definition.cwd = vs.Uri.file(source.launchFolder());
        return [definition];
      },
      // Called when VS Code starts the server: the endpoint opened, and the flag as it is now (the chat instructions may have come on
      // since the definitions were provided).
      resolveMcpServerDefinition: async (server: object) => {
        const definition = server as McpStdioServerDefinition;
        if (!Array.isArray(definition.args)) return server;
        const args = definition.args.filter((a) => a !== MEMORY_ELSEWHERE_FLAG);
        definition.args = source.memoryElsewhere() ? [...args, MEMORY_ELSEWHERE_FLAG] : args;
        // `mcp --attach` looks for the endpoint as it starts: it listens before VS Code starts it.
        try {
          await source.openEndpoint?.();
        } catch (err) {
          log(`The MCP endpoint could not be opened: ${err instanceof Error ? err.message : String(err)}`);
        }
        return server;
      },
    };
    try {
      const disposable = register.call(lm, MCP_PROVIDER_ID, provider);
      log(`MCP server definition provider registered (${MCP_PROVIDER_ID}).`);
      return { registered: true, disposable };
    } catch (err) {
      reason = `vscode.lm.registerMcpServerDefinitionProvider refused: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  log(`MCP server definition provider not registered: ${reason}`);
  return { registered: false, reason };
}
