"""Codex: what it loads itself and how it keeps it, and how its hooks reach it.

One file per folder from the repository root down to the working directory: ``AGENTS.override.md``, else
``AGENTS.md``, else ``project_doc_fallback_filenames``; ``~/.codex/AGENTS.override.md`` or ``~/.codex/AGENTS.md``
globally; the project files together cut at ``project_doc_max_bytes``, 32 KiB
(https://developers.openai.com/codex/guides/agents-md, https://github.com/openai/codex/blob/main/docs/agents_md.md).
Measured with 0.169.0: read at start and kept for the session (an edit is seen after /new), ``@`` lines not
expanded, ``CLAUDE.md`` never read.

Its hooks: ``SessionStart`` and ``UserPromptSubmit`` in ``<project>/.codex/hooks.json`` (loaded only in a project
Codex trusts), or ``$CODEX_HOME/hooks.json`` (default ``~/.codex``), Claude Code's shape, plain JSON. Codex runs a
new or changed hook only once the user trusts it in its TUI ("Hooks need review"); setup never writes that trust.
It fails a hook whose output has a top-level key it does not know, so it gets ``hookSpecificOutput`` alone.
0.169-0.171 keep about 2,500 tokens of it, counted as UTF-8 bytes / 4, and cut the middle of anything longer:
9,800 bytes leave it a margin.
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .model import AgentRules, SettingsHooks

ID = "codex"
NAME = "Codex"
CHECKED = "0.169.0"
EVENTS = {"SessionStart": "SessionStart", "UserPromptSubmit": "UserPromptSubmit"}
LIMIT = 9_800
UNIT = "bytes"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".codex", "AGENTS.override.md"), (".codex", "AGENTS.md"))
GLOBAL_RANK = 50  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "codex"
REVIEW = (
    'Codex will ask "Hooks need review" the next time it starts here: trust the Context Companion hooks there '
    "(setup never trusts them for you; `codex exec` skips a hook that is not trusted)."
)


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        (
            "https://developers.openai.com/codex/guides/agents-md",
            "https://github.com/openai/codex/blob/main/docs/agents_md.md",
        ),
        names=("AGENTS.override.md", "AGENTS.md"),
        upward=True,
        one_per_folder=True,
        fallback_names=True,
        globals=("~/.codex/AGENTS.override.md", "~/.codex/AGENTS.md"),
        project_max_bytes=32 * 1024,
        keeps="start",
        checked=CHECKED,
    )


def setup_file() -> SettingsHooks:
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        ("SessionStart", "UserPromptSubmit"),
        ".codex/hooks.json",
        "CODEX_HOME",
        ".codex",
        "hooks.json",
        comments=False,
        shared=True,
        reads="Codex reads this file as plain JSON",
        after_setup=REVIEW,
    )
