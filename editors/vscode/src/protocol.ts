/**
 * The server's public contract (docs/protocol.md): method names, command ids and the shapes this
 * extension reads. Pure: no `vscode` import, so unit tests can load it.
 */
import type { MemoryUpdate } from './turnView';

export const CURSOR_NOTIFICATION = 'contextCompanion/didChangeCursor';
export const INSTRUCTION_CHANGED_NOTIFICATION = 'contextCompanion/systemInstructionChanged';

/** Commands the server answers through workspace/executeCommand (vscode-languageclient registers them). */
export const ServerCommand = {
  startSession: 'contextCompanion.startSession',
  endSession: 'contextCompanion.endSession',
  getSystemInstruction: 'contextCompanion.getSystemInstruction',
  refreshMemory: 'contextCompanion.refreshMemory',
  getTurnContext: 'contextCompanion.getTurnContext',
  buildMessages: 'contextCompanion.buildMessages',
  getInitialHistory: 'contextCompanion.getInitialHistory',
  showMemory: 'contextCompanion.showMemory',
  addMemory: 'contextCompanion.addMemory',
  getCompressionPrompt: 'contextCompanion.getCompressionPrompt',
  explainMemory: 'contextCompanion.explainMemory',
  companionStatus: 'contextCompanion.companionStatus',
  getAgentMemory: 'contextCompanion.getAgentMemory',
  listAgents: 'contextCompanion.listAgents',
} as const;

/** Commands this extension contributes to the palette. They must never equal a server command id. */
export const PaletteCommand = {
  refresh: 'contextCompanion.refresh',
  showInstruction: 'contextCompanion.showInstruction',
  showTurnContext: 'contextCompanion.showTurnContext',
  showMemoryFiles: 'contextCompanion.showMemoryFiles',
  addMemoryFact: 'contextCompanion.addMemoryFact',
  explainMemoryForAgent: 'contextCompanion.explainMemoryForAgent',
  restartServer: 'contextCompanion.restartServer',
  geminiDiffAccept: 'contextCompanion.geminiDiffAccept',
  geminiDiffReject: 'contextCompanion.geminiDiffReject',
} as const;

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface CursorParams {
  textDocument: { uri: string };
  position: Position;
  selections: Range[];
}

export interface TokenInfo {
  total: number;
  encoding?: string;
  estimated?: boolean;
  sections?: { id: string; tokens: number }[];
}

export interface MemoryFile {
  path: string;
  tier?: string;
  tokens?: number;
  included?: boolean;
  reason?: string;
  /** Delivered with the next turn (memoryUpdates) rather than in the system instruction. */
  comesWithTurn?: boolean;
}

export interface SystemInstructionResult {
  sessionId: string;
  etag: string;
  unchanged: boolean;
  text?: string;
  tokens?: TokenInfo;
  memoryFiles?: (MemoryFile | string)[];
  environmentContext?: unknown;
}

export interface RefreshMemoryResult {
  changed?: boolean;
  etag?: string;
  tokens?: TokenInfo | number;
  memoryFiles?: (MemoryFile | string)[];
  sessionsUpdated?: string[];
}

export interface TurnContextResult {
  kind: 'full' | 'delta' | 'none';
  context: unknown;
  text: string | null;
  /** Memory delivered with this turn (memory.onDemandDelivery = "turn", memory.reload = "session"). */
  memoryUpdates?: MemoryUpdate[];
}

export interface ShowMemoryResult {
  files: MemoryFile[];
  text?: string;
}

export interface AddMemoryResult {
  path: string;
}

export interface InstructionChangedParams {
  etag: string;
  reason?: string;
  changedFiles?: string[];
  changedSections?: string[];
  tokens?: { total: number };
  sessions?: string[];
}

export type { MemoryUpdate };
