/** A listAgents answer as the server gives it (docs/protocol.md), with an agent this extension never heard of. */
export const FAKE_ANSWER = {
  agents: [
    {
      id: 'alpha-cli',
      name: 'Alpha CLI',
      shortNames: ['alpha'],
      hooks: true,
      setup: { project: '.alpha/settings.json', user: '~/.alpha/settings.json', kind: 'hooks' },
      explain: true,
    },
    {
      id: 'newcomer',
      name: 'Newcomer Code',
      shortNames: [],
      hooks: true,
      setup: { project: '.newcomer/plugins/context-companion.js', user: '~/.config/newcomer/plugins/context-companion.js', kind: 'plugin' },
      explain: false,
    },
    { id: 'editor-bot', name: 'Editor Bot in the editor', shortNames: [], hooks: false, setup: null, explain: true },
    { id: 'context-companion', name: 'Context Companion', shortNames: [], hooks: false, setup: null, explain: true },
  ],
};
