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
import struct
from pathlib import Path

from ..errors import FileWriteError
from ..fileio import atomic_write_text, os_reason, read_regular
from ..ignore.git import find_repo, global_excludes_path
from ..ignore.rules import is_ignored_below

MAX_IGNORE_BYTES = 1024 * 1024
MAX_INDEX_BYTES = 64 * 1024 * 1024


def global_excludes_file() -> Path:
    """The file git reads as the user's global ignore file (as Claude Code finds it): ``core.excludesFile`` of
    the user's global git config, else the XDG default. Read from the config files themselves: no git process
    runs in a repository we did not write (its ``.git/config`` may name commands, e.g. ``core.fsmonitor``)."""
    return Path(global_excludes_path(None))


def _tracked(git_dir: str, relative: str) -> bool:
    """Whether git's index (version 2 or 3) holds ``relative``: an entry's name follows its 16-bit flags, whose
    low 12 bits are the name's length. A version 4 index (names prefix-compressed) or an unreadable one: False."""
    try:
        data = read_regular(Path(git_dir) / "index", MAX_INDEX_BYTES, follow=False)
    except OSError:
        return False
    if not data or data[:4] != b"DIRC" or struct.unpack(">I", data[4:8])[0] not in (2, 3):
        return False
    name = relative.encode("utf-8")
    at = data.find(name + b"\0")
    while at >= 2:
        if struct.unpack(">H", data[at - 2 : at])[0] & 0x0FFF == min(len(name), 0x0FFF):
            return True
        at = data.find(name + b"\0", at + 1)
    return False


def keep_out_of_git(workspace: Path, relative: str, *, dry_run: bool) -> str | None:
    """Make git ignore ``relative`` (a file of ``workspace``) the way Claude Code does; what was done, as a
    sentence, or None when there is nothing to say (no git repository, or git ignores it already). Git's ignore
    chain is read by our own reader (``ignore/``), never by running git in the repository."""
    repo = find_repo(workspace)
    if repo is None:
        return None
    inside = os.path.relpath(os.path.join(os.path.abspath(workspace), relative), repo.top).replace(os.sep, "/")
    if inside.startswith("../") or is_ignored_below(repo.top, inside):
        return None
    if _tracked(repo.git_dir, inside):
        return f"{relative} is tracked by git here, so no ignore rule keeps it out: `git rm --cached {relative}`"
    entry = f"**/{relative}"
    path = global_excludes_file()
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
