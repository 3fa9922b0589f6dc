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

/** One row per file, in the server's order (the order the files appear in the instruction). */
export function toMemoryPickItems(files: readonly MemoryFile[]): MemoryPickItem[] {
  return files
    .filter((f) => f !== null && typeof f === 'object' && typeof f.path === 'string' && f.path !== '')
    .map((f) => {
      const included = f.included !== false;
      const facts: string[] = [];
      if (f.tier) facts.push(f.tier);
      if (typeof f.tokens === 'number') facts.push(`${formatCount(f.tokens)} tokens`);
      if (f.comesWithTurn === true) facts.push('comes with the turn');
      const why = f.reason ? `: ${f.reason}` : '';
      return {
        label: `${included ? '$(check)' : '$(circle-slash)'} ${baseName(f.path)}`,
        description: facts.join(' · '),
        detail: `${included ? 'included' : 'not included'}${why} — ${f.path}`,
        path: f.path,
      };
    });
}
