/**
 * The `contextCompanion.*` settings the server receives (initializationOptions,
 * workspace/configuration, workspace/didChangeConfiguration).
 *
 * Only values the user set explicitly are sent: the editor's layer sits above the user's
 * `config.toml` and the workspace's `.context-companion.toml` on the server, so sending defaults
 * would silently override those files. Client-only settings (how to start the server, tracing)
 * are never sent: the server rejects unknown keys. Pure: unit-tested without VS Code.
 */

export const SECTION = 'contextCompanion';

/** Settings that configure this extension, not the server. */
export const CLIENT_ONLY_KEYS: ReadonlySet<string> = new Set([
  'serverCommand',
  'interpreter',
  'server.autoInstall',
  'trace.server',
  'connect.mode',
  'connect.port',
  'connect.token',
]);

/** What `WorkspaceConfiguration.inspect()` reports for one key (the parts used here). */
export interface InspectedValue {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

interface ConfigurationContribution {
  properties?: Record<string, unknown>;
}

/** Server setting keys (relative to `contextCompanion.`) declared in the extension's package.json. */
export function serverSettingKeys(packageJson: {
  contributes?: { configuration?: ConfigurationContribution | ConfigurationContribution[] };
}): string[] {
  const conf = packageJson.contributes?.configuration;
  const blocks = Array.isArray(conf) ? conf : conf ? [conf] : [];
  const keys: string[] = [];
  for (const block of blocks) {
    for (const full of Object.keys(block.properties ?? {})) {
      if (!full.startsWith(`${SECTION}.`)) continue;
      const key = full.slice(SECTION.length + 1);
      if (!CLIENT_ONLY_KEYS.has(key)) keys.push(key);
    }
  }
  return keys;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The value the user chose, most specific scope first. Object values set in several scopes are
 * merged (folder over workspace over user), as VS Code itself does for object settings.
 */
export function explicitValue(inspected: InspectedValue | undefined): unknown {
  if (!inspected) return undefined;
  const layers = [inspected.globalValue, inspected.workspaceValue, inspected.workspaceFolderValue].filter(
    (v) => v !== undefined,
  );
  if (layers.length === 0) return undefined;
  if (layers.length > 1 && layers.every(isPlainObject)) {
    return Object.assign({}, ...layers);
  }
  return layers[layers.length - 1];
}

/** Build the nested camelCase object the server's Settings model reads. */
export function buildServerSettings(
  keys: readonly string[],
  inspect: (key: string) => InspectedValue | undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = explicitValue(inspect(key));
    if (value === undefined) continue;
    const path = key.split('.');
    let node = out;
    for (const part of path.slice(0, -1)) {
      if (!isPlainObject(node[part])) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    node[path[path.length - 1]] = structuredCloneJson(value);
  }
  return out;
}

function structuredCloneJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}

/**
 * The answer to a `workspace/configuration` item: `contextCompanion` → the whole object,
 * `contextCompanion.memory` → its part, anything else → undefined (not ours).
 */
export function sectionValue(settings: Record<string, unknown>, section: string | undefined): unknown {
  if (section === SECTION) return settings;
  if (!section || !section.startsWith(`${SECTION}.`)) return undefined;
  let node: unknown = settings;
  for (const part of section.slice(SECTION.length + 1).split('.')) {
    node = isPlainObject(node) ? node[part] : undefined;
  }
  return node ?? null;
}

export function isOwnSection(section: string | undefined): boolean {
  return section === SECTION || (section ?? '').startsWith(`${SECTION}.`);
}
