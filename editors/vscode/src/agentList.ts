/**
 * The agents the server knows (`contextCompanion.listAgents`, docs/protocol.md): the explain picker and "Connect
 * Agent Memory Hooks…" list them with the server's names and setup files, so a new agent reaches this extension
 * with a server release. The answer changes only with the server, so it is kept until the server starts again.
 * Pure: no `vscode` import, so unit tests can load it.
 */

export interface SetupFiles {
  kind: 'hooks' | 'plugin';
  /** Relative to the project. */
  project: string;
  /** With `--user`: the file in the agent's default config folder, under `~`. */
  user: string;
}

export interface AgentInfo {
  id: string;
  name: string;
  shortNames: string[];
  /** `context-companion hook` and `setup` serve it. */
  hooks: boolean;
  setup: SetupFiles | null;
  /** `explainMemory` knows it. */
  explain: boolean;
}

const isString = (v: unknown): v is string => typeof v === 'string' && v !== '';

function parseSetup(raw: unknown): SetupFiles | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const s = raw as Record<string, unknown>;
  if ((s.kind !== 'hooks' && s.kind !== 'plugin') || !isString(s.project) || !isString(s.user)) return null;
  return { kind: s.kind, project: s.project, user: s.user };
}

/** The agents of a `listAgents` answer, in its order; an entry without an id is left out, a missing name is the id. */
export function parseAgentList(result: unknown): AgentInfo[] {
  const list = typeof result === 'object' && result !== null ? (result as { agents?: unknown }).agents : undefined;
  if (!Array.isArray(list)) throw new Error('the server did not list its agents (contextCompanion.listAgents)');
  const agents: AgentInfo[] = [];
  for (const raw of list) {
    if (typeof raw !== 'object' || raw === null || !isString((raw as { id?: unknown }).id)) continue;
    const a = raw as Record<string, unknown>;
    const id = a.id as string;
    if (agents.some((known) => known.id === id)) continue;
    agents.push({
      id,
      name: isString(a.name) ? a.name : id,
      shortNames: Array.isArray(a.shortNames) ? a.shortNames.filter(isString) : [],
      hooks: a.hooks === true,
      setup: parseSetup(a.setup),
      explain: a.explain === true,
    });
  }
  return agents;
}

/** The palette's detail for an agent with setup: where setup writes in the project. */
export function setupDetail(setup: SetupFiles): string {
  return setup.kind === 'plugin' ? `a plugin in ${setup.project}` : `hooks in ${setup.project}`;
}

/** The server's list, asked once per server start ({@link forget} when the server starts or stops). */
export class AgentList {
  private cached: Promise<AgentInfo[]> | undefined;

  constructor(private readonly ask: () => Promise<unknown>) {}

  get(): Promise<AgentInfo[]> {
    if (this.cached) return this.cached;
    const asked = this.ask().then(parseAgentList);
    this.cached = asked;
    asked.catch(() => {
      if (this.cached === asked) this.cached = undefined; // a failed answer is asked again next time
    });
    return asked;
  }

  forget(): void {
    this.cached = undefined;
  }
}
