"""Where the bridges announce themselves to agent CLIs, and the removal of announcements whose
server is gone.

- Gemini CLI: ``<temp dir>/gemini/ide/gemini-ide-server-<editor pid>-<port>.json``
  (:mod:`.gemini.discovery`).
- Claude Code: ``<config>/ide/<port>.lock`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``).

A server killed with SIGKILL (a crash, the OOM killer, an editor restarting its language server)
leaves its files behind, and nothing else removes them: the Gemini file is named after the editor's
pid, which is still alive. :func:`remove_stale` removes, in these two directories only, the files
that carry our stamp (``"contextCompanion": {"serverPid", "serverStartTime"}``) and whose server is
gone; see :func:`context_companion.discovery.remove_dead_announcements` for the rules. Light: no
SDK import, so the language server can call it at start-up.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..discovery import remove_dead_announcements
from .gemini.discovery import remove_stale as remove_stale_gemini

__all__ = ["CLAUDE_LOCK", "claude_lock_dir", "remove_stale", "remove_stale_claude", "remove_stale_gemini"]

CLAUDE_LOCK = re.compile(r"^\d+\.lock$")


def claude_lock_dir() -> Path:
    """Where Claude Code looks for lock files: ``$CLAUDE_CONFIG_DIR/ide``, else ``~/.claude/ide``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "ide"


def remove_stale_claude(directory: Path | None = None) -> list[Path]:
    """Claude Code lock files of Context Companion servers that are gone."""
    return remove_dead_announcements(directory if directory is not None else claude_lock_dir(), CLAUDE_LOCK)


def remove_stale() -> list[Path]:
    """Both: what a language server does when it starts."""
    return [*remove_stale_gemini(), *remove_stale_claude()]
