"""The agents ``context-companion hook`` and ``setup`` serve: one line each, the one list every part reads.

Each agent is one module of this package that says everything about it (what it loads by itself and how it keeps
it, where and how its hook or plugin is configured, its events, the shape of its answer, its limit and unit). This
registry holds only what must be known before that module is loaded: its id, the module's name and the short names
users type. The hook runs before every prompt, so this module holds strings only and :func:`load` imports one
agent's module, no other.

Adding an agent: its module beside this one, its line here, its tests and its row in docs/agents.md.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

# id → the module of this package that describes the agent, in the order lists show them.
HOOK_AGENTS: dict[str, str] = {
    "claude-code": "claude_code",
    "gemini-cli": "gemini_cli",
    "codex": "codex",
    "copilot-cli": "copilot_cli",
    "opencode": "opencode",
    "qwen-code": "qwen_code",
    "factory-droid": "factory_droid",
    "cline-cli": "cline_cli",
    "kilo-cli": "kilo_cli",
}
# What users type for an id longer than the agent's command (hook, setup). ``copilot`` means GitHub Copilot CLI
# here, the only Copilot with hooks; ``explain`` keeps ``copilot`` for GitHub Copilot in the editor (and ``cline``
# for the Cline editor extension).
SHORT_NAMES: dict[str, str] = {
    "claude": "claude-code",
    "gemini": "gemini-cli",
    "copilot": "copilot-cli",
    "qwen": "qwen-code",
    "droid": "factory-droid",
    "cline": "cline-cli",
    "kilo": "kilo-cli",
}

# The agents that run other agents' hooks too, and the variable each sets in their environment: the hook loads
# such an agent's module (its ``runs_hooks_of`` tells it by the input) only when its variable is set.
HOOK_RUNNERS: dict[str, str] = {"copilot-cli": "COPILOT_CLI"}


def hook_agent(name: str) -> str:
    """The agent id ``name`` stands for: an id or a short name, in any case (an unknown name comes back as given,
    lower-cased and stripped)."""
    key = name.strip().lower()
    return SHORT_NAMES.get(key, key)


def short_names(agent_id: str) -> tuple[str, ...]:
    """The short names of ``agent_id``, in the order of :data:`SHORT_NAMES`."""
    return tuple(short for short, full in SHORT_NAMES.items() if full == agent_id)


def choices() -> str:
    """The ids for help and error messages, each with its short names: ``claude-code (or claude), codex, ...``."""
    said = []
    for agent_id in HOOK_AGENTS:
        shorts = short_names(agent_id)
        said.append(f"{agent_id} (or {', '.join(shorts)})" if shorts else agent_id)
    return ", ".join(said)


def load(agent_id: str) -> ModuleType:
    """The module of ``agent_id`` (one of :data:`HOOK_AGENTS`), imported on first use."""
    import importlib

    return importlib.import_module(f"{__package__}.{HOOK_AGENTS[agent_id]}")


def hook_specific_output(event: str, text: str) -> dict[str, object]:
    """The hook output Claude Code defined and most agents (and our plugins) read: an agent's module takes it as its
    ``answer`` unless its agent reads another shape."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
