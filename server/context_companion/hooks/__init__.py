"""``context-companion hook``: the command an agent's hook (or our plugin) runs before every prompt.

:mod:`.client` reads the hook input, asks the editor's server over the hooks' channel and prints the agent's
answer; without a server, :mod:`.disk` composes from disk and :mod:`.quiet` answers an unchanged prompt with a few
``stat`` calls. Nothing is imported here: the hook path imports :mod:`.client`, the registry and its one agent's
module (``tests/lsp/test_agent_hooks.py``).
"""
