import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildServerSettings,
  CLIENT_ONLY_KEYS,
  explicitValue,
  type InspectedValue,
  isOwnSection,
  isUserValue,
  sectionValue,
  serverSettingKeys,
  setWorkspaceTrust,
} from '../src/settingsPayload';

const manifest = {
  contributes: {
    configuration: [
      { properties: { 'contextCompanion.serverCommand': {}, 'contextCompanion.interpreter': {}, 'contextCompanion.trace.server': {} } },
      { properties: { 'contextCompanion.memory.maxTokens': {}, 'contextCompanion.memory.fileNames': {}, 'contextCompanion.prompt.sections': {} } },
      { properties: { 'contextCompanion.systemPrompt': {}, 'other.setting': {} } },
    ],
  },
};

describe('settings sent to the server', () => {
  it('lists server keys from package.json, never client-only ones', () => {
    assert.deepEqual(serverSettingKeys(manifest), ['memory.maxTokens', 'memory.fileNames', 'prompt.sections', 'systemPrompt']);
    for (const key of CLIENT_ONLY_KEYS) assert.ok(!serverSettingKeys(manifest).includes(key));
  });

  it('sends only values the user set, nested in camelCase', () => {
    const values: Record<string, InspectedValue> = {
      'memory.maxTokens': { globalValue: 2000 },
      'memory.fileNames': {},
      'prompt.sections': { workspaceValue: { git: false } },
      systemPrompt: { globalValue: null },
    };
    assert.deepEqual(buildServerSettings(serverSettingKeys(manifest), (k) => values[k], true), {
      memory: { maxTokens: 2000 },
      prompt: { sections: { git: false } },
      systemPrompt: null,
      userValues: ['memory.maxTokens', 'systemPrompt'],
      workspaceTrusted: true,
    });
  });

  it('sends no value when nothing is set, so the TOML files on the server keep effect', () => {
    const none = { userValues: [], workspaceTrusted: true };
    assert.deepEqual(buildServerSettings(serverSettingKeys(manifest), () => ({}), true), none);
    assert.deepEqual(buildServerSettings(serverSettingKeys(manifest), () => undefined, true), none);
  });

  it("marks as the user's only values set in user settings alone: a workspace or folder value is the workspace's", () => {
    const home = '/home/me/prompts/mine.md';
    const values: Record<string, InspectedValue> = {
      systemPromptFile: { globalValue: home },
      writeSystemPromptTo: { globalValue: 'mine.md', workspaceValue: 'leak.md' },
      'tokens.encodingFile': { workspaceFolderValue: '~/.ssh/id_rsa' },
      'context.exclude': { globalValue: ['*.pem'], workspaceValue: [] },
    };
    const keys = Object.keys(values);
    const out = buildServerSettings(keys, (k) => values[k], true);
    assert.deepEqual(out.userValues, ['systemPromptFile']);
    assert.equal(out.systemPromptFile, home);
    assert.equal(out.writeSystemPromptTo, 'leak.md');
    assert.deepEqual(out.tokens, { encodingFile: '~/.ssh/id_rsa' });
    assert.deepEqual(out.context, { exclude: [] });
    assert.equal(isUserValue({ globalValue: 'x' }), true);
    assert.equal(isUserValue({ globalValue: 'x', workspaceFolderValue: 'y' }), false);
    assert.equal(isUserValue({ workspaceValue: 'y' }), false);
    assert.equal(isUserValue(undefined), false);
  });

  it('in Restricted Mode sends only user values, and says the workspace is untrusted', () => {
    const values: Record<string, InspectedValue> = {
      systemPromptFile: { globalValue: '~/prompts/mine.md', workspaceValue: '~/.ssh/id_rsa' },
      writeSystemPromptTo: { workspaceValue: 'leak.md' },
    };
    const out = buildServerSettings(Object.keys(values), (k) => values[k], false);
    assert.deepEqual(out, {
      systemPromptFile: '~/prompts/mine.md',
      userValues: ['systemPromptFile'],
      workspaceTrusted: false,
    });
  });

  it('asks the trust source when the caller does not say (the extension sets vscode.workspace.isTrusted)', () => {
    let trusted = false;
    setWorkspaceTrust(() => trusted);
    try {
      assert.equal(buildServerSettings([], () => undefined).workspaceTrusted, false);
      trusted = true;
      assert.equal(buildServerSettings([], () => undefined).workspaceTrusted, true);
    } finally {
      setWorkspaceTrust(() => true);
    }
  });

  it('the most specific scope wins; objects merge across scopes', () => {
    assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 }), 3);
    assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2 }), 2);
    assert.deepEqual(explicitValue({ globalValue: ['a'], workspaceValue: ['b'] }), ['b']);
    assert.deepEqual(
      explicitValue({ globalValue: { git: false, sandbox: false }, workspaceValue: { git: true } }),
      { git: true, sandbox: false },
    );
  });

  it('does not share objects with the caller', () => {
    const list = ['AGENTS.md'];
    const out = buildServerSettings(['memory.fileNames'], () => ({ globalValue: list }));
    ((out.memory as Record<string, unknown>).fileNames as string[]).push('X.md');
    assert.deepEqual(list, ['AGENTS.md']);
  });

  it('answers workspace/configuration for the section and its parts only', () => {
    const settings = { memory: { maxTokens: 5 } };
    assert.deepEqual(sectionValue(settings, 'contextCompanion'), settings);
    assert.deepEqual(sectionValue(settings, 'contextCompanion.memory'), { maxTokens: 5 });
    assert.equal(sectionValue(settings, 'contextCompanion.memory.maxTokens'), 5);
    assert.equal(sectionValue(settings, 'contextCompanion.context'), null);
    assert.equal(sectionValue(settings, 'python'), undefined);
    assert.equal(isOwnSection('contextCompanion'), true);
    assert.equal(isOwnSection('contextCompanion.memory'), true);
    assert.equal(isOwnSection('contextCompanionX'), false);
    assert.equal(isOwnSection(undefined), false);
  });
});
