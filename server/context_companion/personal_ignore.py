"""Keeping Claude Code's personal settings file out of git, as Claude Code itself does.

``.claude/settings.local.json`` is this user's: setup writes an absolute path of this machine into it. When
Claude Code creates that file in a git repository where git does not already ignore it, it appends
``**/.claude/settings.local.json`` to the user's global excludes file (``core.excludesFile`` of the global git
config, else ``$XDG_CONFIG_HOME/git/ignore``, else ``~/.config/git/ignore``; measured on Claude Code 2.x's
bundle: it never writes the repository's ``.gitignore`` or ``.git/info/exclude``). Setup does the same, only in
a git repository, keeping the file's lines and writing it atomically (into the real file when it is a link).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .errors import FileWriteError
from .fileio import atomic_write_text, os_reason, read_regular

GIT_TIMEOUT_S = 10.0
MAX_IGNORE_BYTES = 1024 * 1024


def _git(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run(
            [git, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def global_excludes_file(cwd: Path) -> Path:
    """The file git reads as the user's global ignore file (as Claude Code finds it)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
    found = _git(["--git-dir=/dev/null", "config", "--no-includes", "core.excludesfile"], cwd, env)
    value = found.stdout.strip() if found is not None and found.returncode == 0 else ""
    if value == "~" or value.startswith("~/"):
        return Path.home() / value[2:]
    if value and os.path.isabs(value):
        return Path(value)
    config = os.environ.get("XDG_CONFIG_HOME")
    if config and os.path.isabs(config):
        return Path(config) / "git" / "ignore"
    return Path.home() / ".config" / "git" / "ignore"


def keep_out_of_git(workspace: Path, relative: str, *, dry_run: bool) -> str | None:
    """Make git ignore ``relative`` (a file of ``workspace``) the way Claude Code does; what was done, as a
    sentence, or None when there is nothing to say (no git repository, or git ignores it already)."""
    inside = _git(["rev-parse", "--is-inside-work-tree"], workspace)
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    ignored = _git(["check-ignore", "-q", "--", relative], workspace)
    if ignored is None or ignored.returncode != 1:
        return None  # 0: ignored already; 128: git could not tell
    tracked = _git(["ls-files", "--error-unmatch", "--", relative], workspace)
    if tracked is not None and tracked.returncode == 0:
        return f"{relative} is tracked by git here, so no ignore rule keeps it out: `git rm --cached {relative}`"
    entry = f"**/{relative}"
    path = global_excludes_file(workspace)
    real = Path(os.path.realpath(path))
    try:
        data = read_regular(real, MAX_IGNORE_BYTES, follow=False)
    except OSError as exc:
        return f"could not read git's global ignore file {path} ({os_reason(exc)}): add {entry} to it"
    old = (data or b"").decode("utf-8", errors="replace")
    if entry in (line.strip() for line in old.splitlines()):
        return f"{path} lists {entry} but git does not ignore {relative} here (core.excludesFile may point elsewhere)"
    if dry_run:
        return f"would add {entry} to git's global ignore file {path}, as Claude Code does"
    text = old + ("\n" if old and not old.endswith("\n") else "") + entry + "\n"
    try:
        atomic_write_text(real, text, [str(real.parent)])
    except FileWriteError as exc:
        return f"could not write git's global ignore file ({exc}): add {entry} to it"
    return (
        f"added {entry} to git's global ignore file {path}, as Claude Code does: git leaves it out of every repository"
    )
