"""Git's ignore sources beyond the working tree's own files: the repository (:func:`find_repo`),
``info/exclude``, the global excludes file named by ``core.excludesFile`` in git's config files,
and :func:`ignore_sources` (every file outside a folder that changes verdicts inside it)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..ownership import find_marker
from .patterns import IGNORE_FILE_NAMES, MAX_IGNORE_FILE_BYTES

# --------------------------------------------------------------------------- git's other sources


@dataclass(frozen=True, slots=True)
class GitRepo:
    """A working tree found above a folder: its top directory and its (common) git directory."""

    top: str
    git_dir: str  # where info/exclude and config live (the common dir of a linked worktree)


def find_repo(folder: str | os.PathLike[str]) -> GitRepo | None:
    """The nearest working tree holding ``folder`` (a ``.git`` directory or ``gitdir:`` file above), found as
    git finds it (:func:`~context_companion.ownership.find_marker`: never another user's, never above a
    ``GIT_CEILING_DIRECTORIES`` folder)."""
    top = find_marker(os.path.abspath(os.fspath(folder)), (".git",)).root
    if top is None:
        return None
    dot_git = os.path.join(top, ".git")
    if os.path.isdir(dot_git):
        return GitRepo(top, _common_dir(dot_git))
    git_dir = _read_gitdir_file(dot_git) if os.path.isfile(dot_git) else None
    return GitRepo(top, _common_dir(git_dir)) if git_dir is not None else None


def _read_gitdir_file(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline(4096).strip()  # "gitdir: <path>": one short line
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = first[len("gitdir:") :].strip()
    return os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else None


def _common_dir(git_dir: str) -> str:
    """A linked worktree's git dir names the shared one in ``commondir``; info/ and config live there."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as fh:
            common = fh.readline().strip()
    except OSError:
        return git_dir
    return os.path.normpath(os.path.join(git_dir, common)) if common else git_dir


def _xdg_config_home() -> str:
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    return xdg if xdg else os.path.join(os.path.expanduser("~"), ".config")


def git_config_files(repo: GitRepo | None) -> list[str]:
    """The config files git reads, lowest precedence first (system, global, the repository's)."""
    files: list[str] = []
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if "GIT_CONFIG_GLOBAL" in os.environ:
        files.append(os.environ["GIT_CONFIG_GLOBAL"])
    else:
        files.append(os.path.join(_xdg_config_home(), "git", "config"))
        files.append(os.path.join(os.path.expanduser("~"), ".gitconfig"))
    if repo is not None:
        files.append(os.path.join(repo.git_dir, "config"))
    return files


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(=?)")


def _config_value(text: str) -> str:
    """A git config value: quotes removed, escapes read, comments and trailing blanks dropped."""
    out: list[str] = []
    pending_space = ""
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(pending_space + {"n": "\n", "t": "\t", "b": "\b"}.get(nxt, nxt))
            pending_space = ""
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted and c in "#;":
            break
        elif not quoted and c.isspace():
            pending_space += c if out else ""
        else:
            out.append(pending_space + c)
            pending_space = ""
        i += 1
    return "".join(out)


def read_core_excludes_file(path: str) -> str | None:
    """The last ``core.excludesFile`` set in one git config file (None: not set there)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            # A git config, bounded like ignore files; read as much as stat says (a read of the cap
            # itself allocates the cap, 16 MiB, on every change batch that asks).
            size = os.fstat(fh.fileno()).st_size
            raw_lines = fh.read(min(size, MAX_IGNORE_FILE_BYTES)).split("\n")
    except OSError:
        return None
    lines: list[str] = []
    for raw in raw_lines:
        if lines and lines[-1].endswith("\\") and not lines[-1].endswith("\\\\"):
            lines[-1] = lines[-1][:-1] + raw  # a value continued on the next line
        else:
            lines.append(raw)
    value: str | None = None
    in_core = False
    for line in lines:
        rest = line
        section = _SECTION.match(rest)
        if section:
            in_core = section.group(1).lower() == "core" and section.group(2) is None
            rest = rest[section.end() :]
        if not in_core:
            continue
        key = _KEY.match(rest)
        if key and key.group(1).lower() == "excludesfile" and key.group(2):
            value = _config_value(rest[key.end() :])
    return value


def global_excludes_path(repo: GitRepo | None) -> str:
    """Where the user's global excludes file is: ``core.excludesFile`` or the XDG default."""
    configured: str | None = None
    for path in git_config_files(repo):
        value = read_core_excludes_file(path)
        if value is not None:
            configured = value
    if not configured:
        return os.path.join(_xdg_config_home(), "git", "ignore")
    if configured.startswith("~"):
        configured = os.path.expanduser(configured)
    if not os.path.isabs(configured):
        configured = os.path.join(repo.top if repo is not None else os.getcwd(), configured)
    return os.path.normpath(configured)


def _ancestor_dirs(top: str, folder: str) -> list[str]:
    """Directories from ``top`` down to the parent of ``folder`` (empty if folder is top)."""
    rel = os.path.relpath(folder, top)
    if rel == "." or rel.startswith(".."):
        return []
    parts = rel.split(os.sep)
    return [os.path.join(top, *parts[:i]) for i in range(len(parts))]


def ignore_sources(folder: str | os.PathLike[str]) -> list[Path]:
    """Files outside ``folder`` whose content changes verdicts inside it (they may not exist yet).

    The ignore files of every directory from the repository root down to the folder's parent,
    ``info/exclude``, the global excludes file and the git config files that can name it. A
    watcher that sees one of these change should re-walk the folder.
    """
    folder_abs = os.path.abspath(os.fspath(folder))
    repo = find_repo(folder_abs)
    out: list[str] = []
    if repo is not None:
        for directory in _ancestor_dirs(repo.top, folder_abs):
            out += [os.path.join(directory, name) for name in IGNORE_FILE_NAMES]
        out.append(os.path.join(repo.git_dir, "info", "exclude"))
    out.append(global_excludes_path(repo))
    out += git_config_files(repo)
    return [Path(p) for p in dict.fromkeys(out)]
