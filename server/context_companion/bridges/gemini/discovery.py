"""Gemini CLI's discovery file: how a ``gemini`` started in the editor's terminal finds us.

The CLI walks up from itself to the first shell and takes that shell's grandparent as "the IDE"
process, then reads ``<os temp dir>/gemini/ide/gemini-ide-server-<PID>-<PORT>.json`` (files of
other users are ignored). In an editor terminal that grandparent is the parent of the process
that speaks LSP to us (Neovim's TUI above ``nvim --embed``; VS Code's main process above the
extension host), so the file is named after the parent of ``initialize.processId``.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ... import ownership
from ...discovery import STAMP_KEY, PrivateFile, owner_stamp, private_dir, proc_stat_field, remove_dead_announcements
from ...ownership import owned_by_other

log = logging.getLogger(__name__)

FILE_NAME = re.compile(r"^gemini-ide-server-\d+-\d+\.json$")

# clientInfo.name (lower case) → (ideInfo.name, ideInfo.displayName)
_KNOWN_IDES = {
    "neovim": ("neovim", "Neovim"),
    "nvim": ("neovim", "Neovim"),
    "visual studio code": ("vscode", "VS Code"),
    "vscode": ("vscode", "VS Code"),
    "code - oss": ("vscode", "VS Code"),
    "helix": ("helix", "Helix"),
    "zed": ("zed", "Zed"),
    "emacs": ("emacs", "Emacs"),
}


@dataclass(frozen=True)
class IdeInfo:
    name: str
    display_name: str

    def to_wire(self) -> dict[str, str]:
        return {"name": self.name, "displayName": self.display_name}


def ide_info(client_name: str | None) -> IdeInfo:
    """``ideInfo`` from ``initialize.clientInfo.name``: known editors by their usual id, else a slug."""
    raw = (client_name or "").strip()
    known = _KNOWN_IDES.get(raw.lower())
    if known is None and raw.lower().startswith("neovim"):
        known = _KNOWN_IDES["neovim"]
    if known is not None:
        return IdeInfo(*known)
    slug = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
    return IdeInfo(slug or "lsp-editor", raw or "LSP editor")


def ide_dir() -> Path:
    """``<os temp dir>/gemini/ide``: the CLI looks in ``os.tmpdir()``, which honours ``TMPDIR`` as
    Python's ``tempfile`` does."""
    return Path(tempfile.gettempdir()) / "gemini" / "ide"


def ide_dir_problem(directory: Path | None = None) -> str | None:
    """Why no discovery file can be written for Gemini CLI, with the fix, when ``<temp dir>/gemini`` or
    ``<temp dir>/gemini/ide`` is a folder of another user (the temp dir is shared: anyone may make it
    first; the CLI also ignores files of other users); None otherwise. Light: two ``lstat`` calls."""
    ide = directory if directory is not None else ide_dir()
    for folder in (ide.parent, ide):
        try:
            st = folder.lstat()
        except OSError:
            continue
        if ownership.MY_UID is not None and st.st_uid != ownership.MY_UID:
            return (
                f"Gemini CLI's discovery file is off: {folder} is {owned_by_other(st.st_uid)}; a gemini started "
                f"outside the editor's terminal will not find this editor (remove {ide.parent} as its owner or "
                "root, or set TMPDIR to a folder of your own for both the editor and gemini)"
            )
    return None


def parent_pid(pid: int) -> int | None:
    """The parent of ``pid`` as the OS reports it, or None when it cannot be read."""
    if pid <= 0:
        return None
    ppid = proc_stat_field(pid, 4)
    if ppid is not None:
        return ppid
    if sys.platform == "win32":
        return None
    try:
        out = subprocess.run(
            ["ps", "-o", "ppid=", "-p", str(pid)], capture_output=True, text=True, timeout=3, check=False
        ).stdout
        return int(out.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def ide_pid(process_id: int | None) -> int:
    """The PID the CLI will look for: the parent of the LSP client's process (``processId``, else
    our own parent, which is the client when it started us over stdio). Where that parent is init
    or unknown the CLI settles on the client process itself, and so do we."""
    client = process_id if process_id is not None and process_id > 0 else os.getppid()
    parent = parent_pid(client)
    return parent if parent is not None and parent > 1 else client


def remove_stale(directory: Path | None = None) -> list[Path]:
    """Discovery files of Context Companion servers that are gone (see
    :func:`context_companion.discovery.remove_dead_announcements`)."""
    return remove_dead_announcements(directory if directory is not None else ide_dir(), FILE_NAME)


class IdeDiscoveryFile(PrivateFile):
    """``gemini-ide-server-<pid>-<port>.json``, 0600, rewritten atomically, removed at the end."""

    def __init__(self, pid: int, port: int, token: str, ide: IdeInfo, directory: Path | None = None) -> None:
        self.pid = pid
        self.port = port
        self.token = token
        self.ide = ide
        self.directory = directory if directory is not None else ide_dir()
        self.path = self.directory / f"gemini-ide-server-{pid}-{port}.json"
        self._written = False

    @staticmethod
    def workspace_path(folders: Iterable[str | Path]) -> str:
        return os.pathsep.join(str(f) for f in folders)

    def write(self, folders: Iterable[str | Path]) -> Path:
        # The temp dir is shared by every user: both gemini/ and gemini/ide/ must be ours and private.
        private_dir(self.directory.parent)
        private_dir(self.directory)
        payload = {
            "port": self.port,
            "workspacePath": self.workspace_path(folders),
            "authToken": self.token,
            "ideInfo": self.ide.to_wire(),
            # Which server wrote it: a later server removes it if this one died without doing so.
            STAMP_KEY: owner_stamp(),
        }
        return self._publish(payload)
