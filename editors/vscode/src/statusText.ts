/**
 * Texts the user reads in the status bar and in notifications. Pure: unit-tested without VS Code.
 */
import type { MemoryFile, PaletteCommand, RefreshMemoryResult, TokenInfo } from './protocol';

const grouping = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** `1234` → `1,234`. Exact on purpose: a one-line memory edit must show in the status bar. */
export function formatCount(n: number): string {
  return grouping.format(Math.round(n));
}

/** Token count with `~` in front when the server only estimated it. */
export function formatTokens(tokens: { total: number; estimated?: boolean }): string {
  return `${tokens.estimated ? '~' : ''}${formatCount(tokens.total)}`;
}

/** "1 memory file", "2 memory files" (the count formatted with thousands separators). */
export function plural(n: number, one: string, many: string): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

export type StatusState =
  | { kind: 'starting' }
  | { kind: 'ready'; tokens: TokenInfo; memoryFiles: number }
  | { kind: 'stopped' }
  | { kind: 'error'; message: string }
  /** Nothing failed: no server yet, the Install offer (or the Python it needs) waits for the user. */
  | { kind: 'notInstalled'; message: string; pythonMissing?: boolean };

export interface StatusView {
  text: string;
  tooltip: string;
  /** The palette command a click runs. */
  command: (typeof PaletteCommand)[keyof typeof PaletteCommand];
  /** Whether the item should use the warning background. */
  warning: boolean;
  /** What a screen reader says (the text without icons). */
  label: string;
}

export function formatStatus(state: StatusState): StatusView {
  switch (state.kind) {
    case 'starting':
      return {
        text: '$(loading~spin) Context Companion',
        tooltip: 'Context Companion: starting the server…',
        command: 'contextCompanion.showInstruction',
        warning: false,
        label: 'Context Companion: starting',
      };
    case 'ready': {
      const t = state.tokens;
      const how = t.estimated
        ? `about ${formatCount(t.total)} tokens (estimated${t.encoding ? `; ${t.encoding} could not be loaded` : ''})`
        : `${formatCount(t.total)} tokens${t.encoding ? ` (${t.encoding})` : ''}`;
      return {
        text: `$(sparkle) ${formatTokens(t)} tokens`,
        tooltip:
          `Context Companion: the system instruction is ${how}, ` +
          `with ${plural(state.memoryFiles, 'memory file', 'memory files')}. Click to show it.`,
        command: 'contextCompanion.showInstruction',
        warning: false,
        label: `Context Companion: ${formatTokens(t)} tokens`,
      };
    }
    case 'stopped':
      return {
        text: '$(circle-slash) Context Companion',
        tooltip: 'Context Companion: the server is not running. Click to start it.',
        command: 'contextCompanion.restartServer',
        warning: false,
        label: 'Context Companion: server not running',
      };
    case 'notInstalled':
      return {
        text: state.pythonMissing ? '$(info) Context Companion: Python needed' : '$(cloud-download) Context Companion: install needed',
        tooltip: `Context Companion: ${state.message}\nClick to ${state.pythonMissing ? 'look again once it is installed' : 'see the offer again'}.`,
        command: 'contextCompanion.restartServer',
        warning: false,
        label: state.pythonMissing ? 'Context Companion: Python needed' : 'Context Companion: server not installed',
      };
    case 'error':
      return {
        text: '$(warning) Context Companion',
        tooltip: `Context Companion: ${state.message}\nClick to restart the server.`,
        command: 'contextCompanion.restartServer',
        warning: true,
        label: 'Context Companion: error',
      };
  }
}

/** How many of the listed memory files made it into the instruction (plain paths count as included). */
export function countIncluded(files: readonly (MemoryFile | string)[] | undefined): number {
  if (!Array.isArray(files)) return 0;
  return files.filter((f) => typeof f === 'string' || (f !== null && typeof f === 'object' && f.included !== false)).length;
}

/** `refreshMemory` result → "3 memory files · 4,210 tokens". */
export function formatRefreshSummary(result: RefreshMemoryResult): string {
  const files = countIncluded(result.memoryFiles);
  const parts = [plural(files, 'memory file', 'memory files')];
  const tokens = result.tokens;
  if (typeof tokens === 'number') {
    parts.push(`${formatCount(tokens)} tokens`);
  } else if (tokens && typeof tokens.total === 'number') {
    parts.push(`${formatTokens(tokens)} tokens`);
  }
  return parts.join(' · ');
}
