/**
 * The `contextCompanion.*` settings the server receives (initializationOptions,
 * workspace/configuration, workspace/didChangeConfiguration).
 *
 * Only values the user set explicitly are sent: the editor's layer sits above the user's
 * `config.toml` and the workspace's `.context-companion.toml` on the server, so sending defaults
 * would silently override those files. Client-only settings (how to start the server, tracing)
 * are never sent: the server rejects unknown keys. Each payload also says which values are the
 * user's own and whether the workspace is trusted (a cloned repository's `.vscode/settings.json`
 * must not name your files: see docs/configuration.md). Pure: unit-tested without VS Code.
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

/**
 * Beside the values, what the payload says about them (a public contract, docs/protocol.md):
 * `userValues` lists the keys whose value is the user's own (set in user settings only, no
 * workspace or folder value), which alone may name files outside the workspace; `workspaceTrusted`
 * is false in Restricted Mode, where the server takes no file-naming value of the workspace.
 */
export const USER_VALUES = 'userValues';
export const WORKSPACE_TRUSTED = 'workspaceTrusted';

let trustSource: () => boolean = () => true;

/** Where {@link buildServerSettings} learns whether the workspace is trusted (`vscode.workspace.isTrusted`). */
export function setWorkspaceTrust(source: () => boolean): void {
  trustSource = source;
}

/** Whether the value VS Code applies is the user's own: set in user settings, in no workspace or folder scope. */
export function isUserValue(inspected: InspectedValue | undefined): boolean {
  return (
    inspected !== undefined &&
    inspected.globalValue !== undefined &&
    inspected.workspaceValue === undefined &&
    inspected.workspaceFolderValue === undefined
  );
}

/**
 * Build the nested camelCase object the server's Settings model reads, with `userValues` and
 * `workspaceTrusted` (always sent, so a later answer replaces what an earlier one said). In an
 * untrusted workspace the workspace and folder values of every key are left out here too.
 */
export function buildServerSettings(
  keys: readonly string[],
  inspect: (key: string) => InspectedValue | undefined,
  trusted: boolean = trustSource(),
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const userValues: string[] = [];
  for (const key of keys) {
    let inspected = inspect(key);
    if (!trusted && inspected) inspected = { globalValue: inspected.globalValue };
    const value = explicitValue(inspected);
    if (value === undefined) continue;
    if (isUserValue(inspected)) userValues.push(key);
    const path = key.split('.');
    let node = out;
    for (const part of path.slice(0, -1)) {
      if (!isPlainObject(node[part])) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    node[path[path.length - 1]] = structuredCloneJson(value);
  }
  out[USER_VALUES] = userValues;
  out[WORKSPACE_TRUSTED] = trusted;
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
