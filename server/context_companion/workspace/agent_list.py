"""The agents this installation knows, for a client to list (``contextCompanion.listAgents`` and
``context-companion agents --json``): the editors build their pickers, completion and messages from it, so a new
agent reaches them with a server release, not an editor release.

One row per agent ``explain`` knows (the tables of :mod:`..memory.agents`) and per agent ``hook`` and ``setup``
serve (:mod:`..agents.registry`): the agents with hooks first, in the registry's order, then the others in
``explain``'s order. Built from those tables on every call; it reads no workspace.
"""

from __future__ import annotations

from typing import Any


def agent_list() -> dict[str, Any]:
    """``{"agents": [{"id", "name", "shortNames", "hooks", "setup", "explain"}, ...]}`` (docs/protocol.md)."""
    from ..agents.registry import HOOK_AGENTS, short_names
    from ..memory.agents import AGENT_ALIASES, AGENTS
    from ..setup.command import AGENT_HOOKS, setup_files

    rows = []
    for agent_id in (*HOOK_AGENTS, *(a for a in AGENTS if a not in HOOK_AGENTS)):
        rules = AGENTS.get(agent_id)
        hooks = AGENT_HOOKS.get(agent_id)
        name = rules.name if rules is not None else hooks.name if hooks is not None else agent_id
        # The names hook and setup take (the registry's) and the ones explain takes, each once.
        shorts = dict.fromkeys((*short_names(agent_id), *(s for s, a in AGENT_ALIASES.items() if a == agent_id)))
        files = setup_files(agent_id) if agent_id in HOOK_AGENTS else None
        setup = {"project": files[1], "user": files[2], "kind": files[0]} if files is not None else None
        rows.append(
            {
                "id": agent_id,
                "name": name,
                "shortNames": list(shorts),
                "hooks": agent_id in HOOK_AGENTS,
                "setup": setup,
                "explain": rules is not None,
            }
        )
    return {"agents": rows}
