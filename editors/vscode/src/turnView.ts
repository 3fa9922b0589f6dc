/** The markdown of the turn-context view: what the agent would receive, and the memory updates it carries. */

export interface MemoryUpdate {
  path: string;
  reason: string;
  content: string;
  tokens: number;
}

export interface TurnContextView {
  text: string | null;
  memoryUpdates?: MemoryUpdate[];
}

const NOTHING =
  '_No editor context to share: no file is open, or sharing is switched off (contextCompanion.context.enabled)._\n';

/** The turn context's text, then a summary of `memoryUpdates` (file, tokens, why it applies). */
export function turnContextMarkdown(result: TurnContextView): string {
  const text = typeof result.text === 'string' && result.text !== '' ? result.text : NOTHING;
  const updates = Array.isArray(result.memoryUpdates) ? result.memoryUpdates : [];
  if (updates.length === 0) return text;
  const rows = updates.map(
    (u) => `| \`${u.path.replace(/\|/g, '\\|')}\` | ${u.tokens} | ${u.reason.replace(/\|/g, '\\|')} |`,
  );
  return [
    text.trimEnd(),
    '',
    `## Memory updates (${updates.length})`,
    '',
    'Memory files delivered with this turn instead of the system instruction:',
    '',
    '| file | tokens | why |',
    '| --- | ---: | --- |',
    ...rows,
    '',
  ].join('\n');
}
