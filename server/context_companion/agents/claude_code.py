"""Claude Code: what it loads itself and how it keeps it, and how its hooks reach it.

It reads ``CLAUDE.md`` and ``CLAUDE.local.md`` in every folder up to ``/``, a sub-folder's ``CLAUDE.md`` when it
reads files there, ``.claude/rules`` (``paths``), ``~/.claude/CLAUDE.md`` and ``~/.claude/rules``
(https://docs.anthropic.com/en/docs/claude-code/memory). Measured with 2.1.331: an edit of ``CLAUDE.md`` or of a
file it imports arrives in the next request ("changed on disk"); with no ``CLAUDE.md`` it reads ``AGENTS.md`` at
start and never sees an edit of it; with one, ``AGENTS.md`` is not read unless imported.

Its hooks: ``SessionStart`` and ``UserPromptSubmit`` in ``<project>/.claude/settings.local.json`` (not committed),
or with ``--user`` ``$CLAUDE_CONFIG_DIR/settings.json`` (default ``~/.claude/settings.json``), read as plain JSON.
It reads ``{"hookSpecificOutput": {"hookEventName", "additionalContext"}}``; 2.1.331 shows 10,000 characters of it
inline (more becomes a short preview). Other agents run these hooks too (a runner's module says how it is told:
``runs_hooks_of``), and so does VS Code's own agent (``hooks.client.hook_runner``). The project file is personal:
setup keeps it out of git as Claude Code does (:mod:`..setup.personal_ignore`).
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .model import AgentRules, SettingsHooks

ID = "claude-code"
NAME = "Claude Code"
CHECKED = "2.1.331"
EVENTS = {"SessionStart": "SessionStart", "UserPromptSubmit": "UserPromptSubmit"}
LIMIT = 10_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".claude", "CLAUDE.md"),)
GLOBAL_RANK = 40  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "claude"


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://docs.anthropic.com/en/docs/claude-code/memory",),
        names=("CLAUDE.md", "CLAUDE.local.md"),
        upward=True,
        subfolders="when-open",
        globals=("~/.claude/CLAUDE.md",),
        rules=("claude",),
        above_root=True,
        stand_in=("AGENTS.md", "CLAUDE.md"),
        expands_imports=True,
        keeps="tracked",
        checked=CHECKED,
    )


def setup_file() -> SettingsHooks:
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        ("SessionStart", "UserPromptSubmit"),
        ".claude/settings.local.json",
        "CLAUDE_CONFIG_DIR",
        ".claude",
        "settings.json",
        comments=False,
        shared=False,
        reads="Claude Code reads this file as plain JSON",
    )
