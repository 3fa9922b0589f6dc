"""GitHub Copilot CLI: what it loads itself and how it keeps it, and how its hooks reach it.

Measured with @github/copilot 1.0.102 against a recording stub: its system message carries
``~/.copilot/copilot-instructions.md``, ``.github/copilot-instructions.md``, then ``AGENTS.md``, ``CLAUDE.md`` and
``GEMINI.md`` of every folder from the working folder up to the repository root, then the ``.github/instructions``
files with ``applyTo`` ``**`` or none and the ``.claude/rules`` files without ``paths``; the instructions and rules
for other globs are only listed (a table of pattern and path the model may read when it touches such a file). Not
read: sub-folder memory below the working folder, ``CLAUDE.local.md``, ``.cursor/rules``. The interactive CLI reads
them at start and keeps them for the session (an edit of ``AGENTS.md`` is not seen by its next request); ``copilot
-p`` starts a new process each turn. It expands the ``@`` imports of ``AGENTS.md`` and ``CLAUDE.md`` (each imported
file in an ``<imported_custom_instruction source="…">`` block after the line, a sub-folder file too), not those of
``GEMINI.md``, ``.github/copilot-instructions.md`` or ``.claude/rules``; ``QWEN.md`` it never reads.

Its hooks: ``userPromptSubmitted`` in ``<project>/.github/hooks/context-companion.json`` (loaded only in a folder it
trusts) or ``$COPILOT_HOME/hooks/context-companion.json`` (default ``~/.copilot``), its own flat shape
``{"version": 1, "hooks": {"userPromptSubmitted": [{"type": "command", "bash": "...", "timeoutSec": 10}]}}``, read as
plain JSON (a file it cannot read is skipped whole). Its input is ``{sessionId, timestamp, cwd, prompt}``
(``sessionStart`` adds ``source``), no event name; it reads only a top-level ``{"additionalContext": ...}`` (it
ignores ``hookSpecificOutput``). 1.0.102 took 300,000 characters whole (no cut of its own short of 10 MiB); 30,000
is our own bound on what one prompt adds.

It also runs the Claude Code hooks of ``.claude/settings.json`` and ``.claude/settings.local.json`` (after its
own, one after the other, keeping the last non-empty ``additionalContext``), with ``COPILOT_CLI`` set in their
environment (:data:`.registry.HOOK_RUNNERS`) and no ``transcript_path`` in their input (:func:`runs_hooks_of`); the
hook then answers as this agent's hook of the same session, so a project set up for both gives it each text once.
VS Code 1.139.1's own agent reads ``.github/hooks`` too and runs the file as well (the hook tells that runner apart).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from .model import AgentRules, SettingsHooks

ID = "copilot-cli"
NAME = "GitHub Copilot CLI"
CHECKED = "1.0.102"
EVENTS = {"userPromptSubmitted": "UserPromptSubmit", "sessionStart": "SessionStart"}
LIMIT = 30_000
UNIT = "characters"
SESSION_KEY = "sessionId"  # the field of its hook input that holds the session id, named in errors


def answer(event: str, text: str) -> dict[str, object]:
    return {"additionalContext": text}


def hook_input(raw: dict[str, Any]) -> dict[str, Any]:
    """Its own hook input in the fields the hook reads: the event is told by which keys are there. Raises
    ``ValueError`` (one line) when it is neither of its events."""
    if "hook_event_name" in raw:
        event = raw["hook_event_name"]
        event = EVENTS.get(event, event) if isinstance(event, str) else event
        return {**raw, "hook_event_name": event}
    if "prompt" in raw:
        event = "UserPromptSubmit"
    elif "source" in raw:
        event = "SessionStart"
    else:
        raise ValueError(
            "prompt: missing in the hook input (GitHub Copilot CLI's userPromptSubmitted sends sessionId, "
            "timestamp, cwd, prompt)"
        )
    return {**raw, "hook_event_name": event, "session_id": raw.get("sessionId", raw.get("session_id", ""))}


def runs_hooks_of(agent: str, raw: dict[str, Any], environ: Mapping[str, str]) -> bool:
    """Whether this hook of ``agent`` is being run by GitHub Copilot CLI: it runs Claude Code's hooks, sets
    ``COPILOT_CLI`` for them and sends no ``transcript_path``, which Claude Code always sends (a Claude Code started
    from a shell inside Copilot CLI inherits the variable, not the input's shape)."""
    return agent == "claude-code" and bool(environ.get("COPILOT_CLI")) and "transcript_path" not in raw


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/overview",),
        names=("AGENTS.md", "CLAUDE.md", "GEMINI.md"),
        upward=True,
        globals=("~/.copilot/copilot-instructions.md",),
        rules=("copilot", "copilot-instructions", "claude"),
        expands_imports=True,
        expands_imports_in=("AGENTS.md", "CLAUDE.md"),
        keeps="start",
        checked=CHECKED,
    )


def setup_file() -> SettingsHooks:
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        ("userPromptSubmitted",),
        ".github/hooks/context-companion.json",
        "COPILOT_HOME",
        ".copilot",
        "hooks/context-companion.json",
        comments=False,
        shared=True,
        reads="GitHub Copilot CLI 1.0.102 reads this file as plain JSON and skips it whole otherwise",
        grouped=False,
        command_key="bash",
        handler_fields=(("type", "command"), ("timeoutSec", 10)),
        file_fields=(("version", 1),),
    )
