/**
 * Language Model Tools: the system instruction, the turn context and the memory list, offered to
 * VS Code's own agent surfaces (Copilot Chat's agent mode, any chat extension through `vscode.lm`)
 * without configuration. Each tool runs one server command through the language client.
 * The `vscode` module is injected, so the pure parts and the registration are unit-tested.
 */
import type * as vscode from 'vscode';
import { isMemoryFile, memoryFileFacts } from './memoryItems';
import {
  ServerCommand,
  type ShowMemoryResult,
  type SystemInstructionResult,
  type TurnContextResult,
} from './protocol';
import { turnContextMarkdown } from './turnView';

/** Tool names (`contributes.languageModelTools[].name`): public, never renamed. */
export const LmTool = {
  systemInstruction: 'contextCompanion_systemInstruction',
  turnContext: 'contextCompanion_turnContext',
  memoryFiles: 'contextCompanion_memoryFiles',
} as const;

/**
 * The session the tools use when the model names none: one conversation of VS Code's chat, apart
 * from the server's `default` session (other extensions) and the palette's throw-away previews.
 */
export const TOOL_SESSION = 'vscode-chat';

const MAX_SESSION_ID = 200;

/** Thrown for tool input the model got wrong; VS Code hands the message back to the model. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolInputError';
  }
}

function field(input: unknown, name: string): unknown {
  if (input === undefined || input === null) return undefined;
  if (typeof input !== 'object' || Array.isArray(input)) throw new ToolInputError('the input must be a JSON object');
  return (input as Record<string, unknown>)[name];
}

function unknownKeys(input: unknown, allowed: readonly string[], tool: string): void {
  if (input === undefined || input === null || typeof input !== 'object') return;
  for (const key of Object.keys(input)) {
    if (!allowed.includes(key)) throw new ToolInputError(`${tool}: ${key}: unknown field (allowed: ${allowed.join(', ')})`);
  }
}

/** The session named by the tool input (`sessionId`), or {@link TOOL_SESSION}. */
export function sessionOf(input: unknown, tool: string): string {
  const value = field(input, 'sessionId');
  if (value === undefined || value === null || value === '') return TOOL_SESSION;
  if (typeof value !== 'string') throw new ToolInputError(`${tool}: sessionId: must be a string`);
  if (value.length > MAX_SESSION_ID) throw new ToolInputError(`${tool}: sessionId: longer than ${MAX_SESSION_ID} characters`);
  return value;
}

/**
 * The server command and its argument for one tool invocation. `memoryElsewhere`: the memory already reaches
 * the chat in its system message (chat instructions), so the instruction and the turn context leave it out
 * (`includeMemory: false`): nothing reaches the model twice.
 */
export function commandFor(
  tool: string,
  input: unknown,
  memoryElsewhere = false,
): { command: string; arg: Record<string, unknown> } {
  switch (tool) {
    case LmTool.systemInstruction: {
      unknownKeys(input, ['sessionId'], tool);
      const arg: Record<string, unknown> = { sessionId: sessionOf(input, tool) };
      if (memoryElsewhere) arg.includeMemory = false;
      return { command: ServerCommand.getSystemInstruction, arg };
    }
    case LmTool.turnContext: {
      unknownKeys(input, ['sessionId', 'forceFull'], tool);
      const arg: Record<string, unknown> = { sessionId: sessionOf(input, tool) };
      const forceFull = field(input, 'forceFull');
      if (forceFull !== undefined && forceFull !== null) {
        if (typeof forceFull !== 'boolean') throw new ToolInputError(`${tool}: forceFull: must be true or false`);
        arg.forceFull = forceFull;
      }
      if (memoryElsewhere) arg.includeMemory = false;
      return { command: ServerCommand.getTurnContext, arg };
    }
    case LmTool.memoryFiles:
      unknownKeys(input, [], tool);
      return { command: ServerCommand.showMemory, arg: {} };
    default:
      throw new ToolInputError(`unknown tool ${tool}`);
  }
}

/** The instruction's text exactly as the server built it (the same bytes every call until memory or settings change). */
export function instructionText(result: SystemInstructionResult): string {
  return typeof result.text === 'string' ? result.text : '';
}

const NO_CHANGE = 'Nothing changed in the editor or in memory since this session last asked.';

/** The turn context's message for the model, with the memory it carries. */
export function turnContextText(result: TurnContextResult): string {
  if (result.kind === 'none' && (!Array.isArray(result.memoryUpdates) || result.memoryUpdates.length === 0)) {
    return NO_CHANGE;
  }
  const text = typeof result.text === 'string' ? result.text : '';
  if (text !== '') return text;
  return turnContextMarkdown(result);
}

/**
 * One line per memory file: where it is, whether it is in the instruction or comes with the turn,
 * and why (the facts the "Show Memory Files" quick pick shows, from {@link memoryFileFacts}).
 */
export function memoryFilesText(result: ShowMemoryResult & { warnings?: unknown }): string {
  const files = (Array.isArray(result.files) ? result.files : []).filter(isMemoryFile).map(memoryFileFacts);
  if (files.length === 0) {
    return 'No memory files were found (AGENTS.md, CLAUDE.md, GEMINI.md, rule files) for this workspace.';
  }
  const lines = files.map((f) => `- ${f.path}${f.facts.length > 0 ? ` [${f.facts.join(', ')}]` : ''}: ${f.state}`);
  const inInstruction = files.filter((f) => f.included && !f.comesWithTurn).length;
  const withTurn = files.filter((f) => f.included && f.comesWithTurn).length;
  const counts = [`${inInstruction} included in the system instruction`];
  if (withTurn > 0) counts.push(`${withTurn} ${withTurn === 1 ? 'comes' : 'come'} with the turn`);
  const out = [`${files.length} memory file${files.length === 1 ? '' : 's'}, ${counts.join(', ')}:`, ...lines];
  const warnings = Array.isArray(result.warnings) ? result.warnings.filter((w): w is string => typeof w === 'string') : [];
  if (warnings.length > 0) out.push('', 'Warnings:', ...warnings.map((w) => `- ${w}`));
  return out.join('\n');
}

/** What the tools need from the server connection. */
export interface ToolServer {
  execute<T>(command: string, arg?: object): Promise<T>;
}

/** Run one tool: the server command, then its text for the model. */
export async function runTool(server: ToolServer, tool: string, input: unknown, memoryElsewhere = false): Promise<string> {
  const { command, arg } = commandFor(tool, input, memoryElsewhere);
  switch (tool) {
    case LmTool.systemInstruction:
      return instructionText(await server.execute<SystemInstructionResult>(command, arg));
    case LmTool.turnContext:
      return turnContextText(await server.execute<TurnContextResult>(command, arg));
    default:
      return memoryFilesText(await server.execute<ShowMemoryResult>(command, arg));
  }
}

const PROGRESS: Record<string, string> = {
  [LmTool.systemInstruction]: 'Reading the system instruction from Context Companion',
  [LmTool.turnContext]: 'Reading the editor context from Context Companion',
  [LmTool.memoryFiles]: 'Listing the memory files Context Companion found',
};

/**
 * Register the three tools with `vs.lm.registerTool`; none when this VS Code has no tool API.
 * `memoryElsewhere()` says whether the chat already has the memory in its system message (chat instructions).
 */
export function registerLanguageModelTools(
  vs: typeof vscode,
  server: ToolServer,
  log: (line: string) => void,
  memoryElsewhere: () => boolean = () => false,
): vscode.Disposable[] {
  if (typeof vs.lm?.registerTool !== 'function') {
    log('Language model tools not registered: this VS Code has no vscode.lm.registerTool (it came in VS Code 1.95).');
    return [];
  }
  return Object.values(LmTool).map((name) =>
    vs.lm.registerTool<unknown>(name, {
      prepareInvocation: () => ({ invocationMessage: PROGRESS[name] }),
      invoke: async (options) => {
        const text = await runTool(server, name, options.input, memoryElsewhere());
        return new vs.LanguageModelToolResult([new vs.LanguageModelTextPart(text)]);
      },
    }),
  );
}
