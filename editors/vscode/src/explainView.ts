import type { AgentInfo } from './agentList';
/** The "Explain Memory for Agent…" view: the agents to pick from (the server's, agentList.ts) and the Markdown of an answer. */

/** The picker's items: every agent the server's explainMemory knows, in the server's order. */
export function explainItems(agents: readonly AgentInfo[]): { label: string; description: string; id: string }[] {
  return agents.filter((a) => a.explain).map((a) => ({ label: a.name, description: a.id, id: a.id }));
}

export interface ExplainedFile {
  path: string;
  tier?: string;
  trigger?: string;
  glob?: string;
  why?: string;
  tokens?: number;
}

export interface ExplainMemoryResult {
  agent: string;
  name?: string;
  docs?: string[];
  files?: ExplainedFile[];
  listed?: ExplainedFile[];
  notLoaded?: { path: string; reason?: string }[];
  onlyAgent?: string[];
  onlyContextCompanion?: string[];
  tokens?: number;
}

/** Pipes and line breaks would break a table row. */
function cell(text: unknown): string {
  return String(text ?? '').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function code(path: string): string {
  return '`' + path.replace(/`/g, "'") + '`';
}

export function formatExplanation(result: ExplainMemoryResult): string {
  const name = result.name || result.agent;
  const files = Array.isArray(result.files) ? result.files : [];
  const out: string[] = [`# What ${name} would load`, ''];
  const docs = Array.isArray(result.docs) ? result.docs : [];
  if (docs.length) out.push(`Rules from: ${docs.join(', ')}`, '');
  if (files.length === 0) {
    out.push(`_${name} would load no memory or rule file here._`, '');
  } else {
    out.push('| file | tier | why | tokens |', '| --- | --- | --- | ---: |');
    for (const f of files) out.push(`| ${code(f.path)} | ${cell(f.tier)} | ${cell(f.why)} | ${f.tokens ?? ''} |`);
    out.push('', `${files.length} file${files.length === 1 ? '' : 's'}, ${result.tokens ?? 0} tokens.`, '');
  }
  const listed = Array.isArray(result.listed) ? result.listed : [];
  if (listed.length) {
    out.push('## Offered by description only', '');
    for (const f of listed) out.push(`- ${code(f.path)}: ${cell(f.why)}`);
    out.push('');
  }
  const notLoaded = Array.isArray(result.notLoaded) ? result.notLoaded : [];
  if (notLoaded.length) {
    out.push('## Not loaded', '');
    for (const f of notLoaded) out.push(`- ${code(f.path)}: ${cell(f.reason)}`);
    out.push('');
  }
  const onlyAgent = Array.isArray(result.onlyAgent) ? result.onlyAgent : [];
  const onlyOurs = Array.isArray(result.onlyContextCompanion) ? result.onlyContextCompanion : [];
  if (onlyAgent.length) out.push(`**Loaded by ${name}, not by Context Companion:** ${onlyAgent.map(code).join(', ')}`, '');
  if (onlyOurs.length) out.push(`**Loaded by Context Companion, not by ${name}:** ${onlyOurs.map(code).join(', ')}`, '');
  return out.join('\n');
}
