import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildServerSettings,
  CLIENT_ONLY_KEYS,
  explicitValue,
  type InspectedValue,
  isOwnSection,
  sectionValue,
  serverSettingKeys,
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
    assert.deepEqual(
      buildServerSettings(serverSettingKeys(manifest), (k) => values[k]),
      { memory: { maxTokens: 2000 }, prompt: { sections: { git: false } }, systemPrompt: null },
    );
  });

  it('sends nothing when nothing is set, so the TOML files on the server keep effect', () => {
    assert.deepEqual(buildServerSettings(serverSettingKeys(manifest), () => ({})), {});
    assert.deepEqual(buildServerSettings(serverSettingKeys(manifest), () => undefined), {});
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
