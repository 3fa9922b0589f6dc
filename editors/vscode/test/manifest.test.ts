/**
 * package.json is a contract: palette commands with the titles, and one contributed
 * setting per server setting with the server's default (checked against the Python Settings model).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { CONNECT_AGENT_HOOKS } from '../src/agentHooks';
import { PaletteCommand, ServerCommand } from '../src/protocol';
import { CLIENT_ONLY_KEYS, SECTION, serverSettingKeys } from '../src/settingsPayload';

const root = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const properties: Record<string, Record<string, unknown>> = Object.assign(
  {},
  ...manifest.contributes.configuration.map((c: { properties: object }) => c.properties),
);

describe('package.json: palette commands', () => {
  const commands: { command: string; title: string; category: string }[] = manifest.contributes.commands;

  it('declares each palette command under "Context Companion" with the title the issue names', () => {
    const titles = Object.fromEntries(commands.map((c) => [c.command, c.title]));
    assert.deepEqual(titles, {
      [PaletteCommand.refresh]: 'Refresh System Instruction',
      [PaletteCommand.showInstruction]: 'Show System Instruction',
      [PaletteCommand.showTurnContext]: 'Show Turn Context',
      [PaletteCommand.showMemoryFiles]: 'Show Memory Files',
      [PaletteCommand.addMemoryFact]: 'Add Memory',
      [PaletteCommand.explainMemoryForAgent]: 'Explain Memory for Agent…',
      [PaletteCommand.restartServer]: 'Restart Server',
      [CONNECT_AGENT_HOOKS]: 'Connect Agent Memory Hooks…',
      [PaletteCommand.geminiDiffAccept]: 'Accept Gemini CLI Change',
      [PaletteCommand.geminiDiffReject]: 'Reject Gemini CLI Change',
    });
    for (const c of commands) assert.equal(c.category, 'Context Companion');
  });

  it('never reuses a server command id (the language client registers those itself)', () => {
    const server = new Set<string>(Object.values(ServerCommand));
    for (const c of commands) assert.ok(!server.has(c.command), `${c.command} clashes with a server command`);
  });

  it('has what vsce needs to package without prompting', () => {
    assert.equal(manifest.license, 'MIT');
    assert.ok(manifest.repository?.url);
    assert.ok(fs.existsSync(path.join(root, 'LICENSE')));
    assert.ok(fs.existsSync(path.join(root, 'README.md')));
  });
});

describe('package.json: settings mirror the server', () => {
  it('every contributed setting has a description and a default', () => {
    for (const [key, schema] of Object.entries(properties)) {
      assert.ok(key.startsWith(`${SECTION}.`), key);
      assert.ok(schema.description || schema.markdownDescription, `${key} has no description`);
      assert.ok('default' in schema, `${key} has no default`);
    }
    for (const key of CLIENT_ONLY_KEYS) assert.ok(`${SECTION}.${key}` in properties, `${key} missing`);
  });

  it('matches the Python Settings model: same keys, defaults, choices and bounds', () => {
    const python = process.env.COMPANION_TEST_PYTHON || 'python3';
    const script = `
import json, typing
from pydantic import BaseModel
from annotated_types import Ge, Le
from context_companion.settings import Settings

def leaves(model, prefix, defaults):
    for name, info in model.model_fields.items():
        alias = info.alias or name
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from leaves(ann, prefix + alias + '.', defaults[alias])
            continue
        entry = {'default': defaults[alias]}
        if typing.get_origin(ann) is typing.Literal:
            entry['enum'] = list(typing.get_args(ann))
        for m in info.metadata:
            if isinstance(m, Ge): entry['minimum'] = m.ge
            if isinstance(m, Le): entry['maximum'] = m.le
        yield prefix + alias, entry

print(json.dumps(dict(leaves(Settings, '', Settings().to_wire()))))
`;
    let out: string;
    try {
      out = execFileSync(python, ['-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? String(err);
      assert.fail(
        `could not read the server's Settings model with ${python} (install the server: pip install -e '.[dev]' at the repo root, ` +
          `or point COMPANION_TEST_PYTHON at a Python that has it):\n${stderr}`,
      );
    }
    const server: Record<string, { default: unknown; enum?: string[]; minimum?: number; maximum?: number }> = JSON.parse(out);
    // Read by the server process at start (its config file and environment), before any editor
    // connects: an editor setting could not change it, so the extension does not offer it.
    const startOnly = new Set(['server.allowedOrigins']);
    const editorSettable = Object.fromEntries(Object.entries(server).filter(([key]) => !startOnly.has(key)));
    assert.deepEqual(serverSettingKeys(manifest).sort(), Object.keys(editorSettable).sort());
    for (const [key, want] of Object.entries(editorSettable)) {
      const schema = properties[`${SECTION}.${key}`];
      assert.deepEqual(schema.default, want.default, `default of ${key}`);
      if (want.enum) assert.deepEqual(schema.enum, want.enum, `choices of ${key}`);
      if (want.minimum !== undefined) assert.equal(schema.minimum, want.minimum, `minimum of ${key}`);
      if (want.maximum !== undefined) assert.equal(schema.maximum, want.maximum, `maximum of ${key}`);
    }
  });
});

describe('package.json: the server the extension carries', () => {
  it('declares contextCompanion.server.autoInstall: off by default, user (machine) settings only, never sent to the server', () => {
    const schema = properties[`${SECTION}.server.autoInstall`];
    assert.equal(schema.type, 'boolean');
    assert.equal(schema.default, false);
    assert.equal(schema.scope, 'machine');
    assert.ok(CLIENT_ONLY_KEYS.has('server.autoInstall'));
    assert.ok(!serverSettingKeys(manifest).includes('server.autoInstall'));
    assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(`${SECTION}.server.autoInstall`));
  });

  it('packages the wheel: `npm run package` puts it in place before vsce, and .vscodeignore lets it in', () => {
    assert.match(manifest.scripts.package, /node scripts\/server-wheel\.mjs && vsce package/);
    const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8').split('\n');
    assert.ok(ignore.includes('!server/context_companion-*.whl'), ignore.join('|'));
  });
});

describe('scripts/server-wheel.mjs', () => {
  const made: string[] = [];
  after(() => {
    for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
  });
  /** A copy of the extension folder's package.json and the script, at <tmp>/editors/vscode (no repository around it). */
  function layout(version: string): string {
    const top = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-wheel-script-'));
    made.push(top);
    const dir = path.join(top, 'editors', 'vscode');
    fs.mkdirSync(path.join(dir, 'scripts'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ version }));
    fs.copyFileSync(path.join(root, 'scripts', 'server-wheel.mjs'), path.join(dir, 'scripts', 'server-wheel.mjs'));
    return dir;
  }
  const run = (dir: string): { status: number | null; stderr: string } => {
    const r = spawnSync(process.execPath, [path.join(dir, 'scripts', 'server-wheel.mjs')], { encoding: 'utf8' });
    return { status: r.status, stderr: r.stderr };
  };

  it('accepts the wheel of the extension’s version the release command placed', () => {
    const dir = layout('1.2.3');
    fs.mkdirSync(path.join(dir, 'server'));
    fs.writeFileSync(path.join(dir, 'server', 'context_companion-1.2.3-py3-none-any.whl'), Buffer.alloc(4096));
    const r = run(dir);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /the \.vsix carries server\/context_companion-1\.2\.3-py3-none-any\.whl \(4 KiB\)/);
  });

  it('fails in one line when the wheel is missing and there is no repository to build it from', () => {
    const r = run(layout('1.2.3'));
    assert.equal(r.status, 1);
    assert.match(r.stderr.trim(), /^server-wheel: .*context_companion-1\.2\.3-py3-none-any\.whl is missing and .* is not the repository to build it from/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  });

  it('fails when a wheel of another version is there too (the .vsix would carry both)', () => {
    const dir = layout('1.2.3');
    fs.mkdirSync(path.join(dir, 'server'));
    fs.writeFileSync(path.join(dir, 'server', 'context_companion-1.2.3-py3-none-any.whl'), Buffer.alloc(4096));
    fs.writeFileSync(path.join(dir, 'server', 'context_companion-1.2.2-py3-none-any.whl'), Buffer.alloc(4096));
    const r = run(dir);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /holds context_companion-1\.2\.2-py3-none-any\.whl besides context_companion-1\.2\.3-py3-none-any\.whl: remove it/);
  });
});
