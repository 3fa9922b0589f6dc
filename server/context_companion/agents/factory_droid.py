"""Factory Droid (``droid``, npm ``@factory/cli``): what it loads itself and how it keeps it, and how our hook reaches
it. Measured with the linux-x64 binary 0.225.2 against a recording model stub (``customModels`` with a
``generic-chat-completion-api`` base URL, no login; ``tests/agents/test_factory_droid_agent.py``):

- Memory: ``CLAUDE.md`` then ``AGENTS.md`` of every folder from the working folder up to the repository root
  (without a repository, the working folder's only), ``.factory/AGENTS.md``, ``.agents/AGENTS.md`` and
  ``DESIGN.md`` at the root, and ``~/.factory/AGENTS.md``, in a ``<system-reminder>`` part of the session's first
  user message, never the system message; ``@`` lines as written. Not read: ``CLAUDE.local.md``, ``GEMINI.md``,
  sub-folder files below the working folder, ``.factory/rules``, ``.claude/rules``, ``.github`` or ``.cursor``
  files, ``~/.claude/CLAUDE.md``. Read once when the session starts: an edit is not seen by a later turn, nor by a
  session resumed in a new process (``droid.load_session``).
- Hooks: Claude Code's shape, ``{"hooks": {"<event>": [{"hooks": [{"type": "command", "command": …}]}]}}``, in
  ``<project>/.factory/settings.json`` and ``~/.factory/settings.json`` (both run; no trust asked). Its input is
  Claude Code's (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; ``UserPromptSubmit`` adds
  ``prompt``, ``message_id``; ``SessionStart`` ``source``: ``startup``, ``resume``), with ``CLAUDE_PROJECT_DIR``,
  ``FACTORY_PROJECT_DIR`` and ``DROID_PROJECT_DIR`` set; it does not run ``.claude/settings*.json`` hooks.
  ``hookSpecificOutput.additionalContext`` becomes a user message of its own just before the prompt (300,000
  characters arrived whole), kept in the history while the process runs. ``UserPromptSubmit`` runs in its TUI and
  on the JSON-RPC path (``droid exec --input-format stream-jsonrpc``); a plain ``droid exec "…"`` runs only
  ``SessionStart``. A session resumed in a new process (``droid.load_session``; ``droid exec -s`` asks Factory's
  servers) runs ``SessionStart`` with ``source: "resume"`` and sends none of the earlier hook messages again:
  :func:`hook_input` makes that a fresh start, so what they carried is given again.
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .model import AgentRules, SettingsHooks

ID = "factory-droid"
NAME = "Factory Droid"
CHECKED = "0.225.2"
EVENTS: dict[str, str] = {"SessionStart": "SessionStart", "UserPromptSubmit": "UserPromptSubmit"}
# It took 300,000 characters whole: 30,000 is our own bound on what one prompt adds (as for Gemini CLI).
LIMIT = 30_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
DOCS = (
    "https://docs.factory.ai/cli/configuration/agents-md",
    "https://docs.factory.ai/reference/hooks-reference",
)


def hook_input(raw: dict[str, Any]) -> dict[str, Any]:
    """Its input in the common fields: a resumed session (``source: "resume"``) no longer holds the earlier hook
    messages, so it counts as a start."""
    if raw.get("hook_event_name") == "SessionStart" and raw.get("source") == "resume":
        return {**raw, "source": "startup"}
    return raw


def rules() -> AgentRules:
    """What it loads itself (see the module's docstring)."""
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        DOCS,
        names=("CLAUDE.md", "AGENTS.md"),
        upward=True,
        globals=("~/.factory/AGENTS.md",),
        keeps="start",
        checked=CHECKED,
    )


def setup_file() -> SettingsHooks:
    """Where ``setup --agent droid`` writes: the project's ``.factory/settings.json`` or ``~/.factory/settings.json``."""
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        tuple(EVENTS),
        ".factory/settings.json",
        None,
        ".factory",
        "settings.json",
        comments=True,
        shared=True,
        reads=f"{NAME} {CHECKED} reads comments here but ignores the whole file on a trailing comma",
    )
