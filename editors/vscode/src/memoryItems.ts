/** Quick-pick rows for "Show Memory Files". Pure: unit-tested without VS Code. */
import type { MemoryFile } from './protocol';
import { formatCount } from './statusText';

export interface MemoryPickItem {
  label: string;
  description: string;
  detail: string;
  /** The file to open when picked. */
  path: string;
}

function baseName(path: string): string {
  const parts = path.split(/[\\/]/).filter((p) => p !== '');
  return parts.length > 0 ? parts[parts.length - 1] : path;
}

/** What the extension says about one memory file: shared by the quick pick and the memory-files LM tool. */
export interface MemoryFileFacts {
  path: string;
  /** Tier and tokens (`1,520 tokens`), then `comes with the turn` for such a file. */
  facts: string[];
  included: boolean;
  /** Delivered with the next turn (memoryUpdates) rather than in the system instruction. */
  comesWithTurn: boolean;
  /** `included`, `included: <reason>`, `not included: <reason>`. */
  state: string;
}

/** Whether `f` is a memory file entry the extension can show (an object with a non-empty path). */
export function isMemoryFile(f: unknown): f is MemoryFile {
  return f !== null && typeof f === 'object' && typeof (f as MemoryFile).path === 'string' && (f as MemoryFile).path !== '';
}

/** The facts shown for one file, in the words both the quick pick and the LM tool use. */
export function memoryFileFacts(f: MemoryFile): MemoryFileFacts {
  const included = f.included !== false;
  const comesWithTurn = f.comesWithTurn === true;
  const facts: string[] = [];
  if (f.tier) facts.push(f.tier);
  if (typeof f.tokens === 'number') facts.push(`${formatCount(f.tokens)} tokens`);
  if (comesWithTurn) facts.push('comes with the turn');
  // the server's reason may already start with "not included" (as the Neovim plugin checks)
  const reason = included ? f.reason ?? '' : (f.reason ?? '').replace(/^not included:?\s*/, '');
  const state = `${included ? 'included' : 'not included'}${reason ? `: ${reason}` : ''}`;
  return { path: f.path, facts, included, comesWithTurn, state };
}

/** One row per file, in the server's order (the order the files appear in the instruction). */
export function toMemoryPickItems(files: readonly MemoryFile[]): MemoryPickItem[] {
  return files.filter(isMemoryFile).map((f) => {
    const m = memoryFileFacts(f);
    return {
      label: `${m.included ? '$(check)' : '$(circle-slash)'} ${baseName(m.path)}`,
      description: m.facts.join(' · '),
      detail: `${m.state} — ${m.path}`,
      path: m.path,
    };
  });
}
