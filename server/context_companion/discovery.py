"""Discovery files: how a client on this machine finds a running server and its token.

A server listening on a socket writes ``<user runtime dir>/context-companion/server-<pid>-<port>.json``
holding ``{"pid", "startTime", "port", "transport", "workspaceFolders", "token"}``. The directory is 0700
and the file 0600, so only the same user can read the token; anything that can read it could already
read the user's files. Files whose process is gone are removed by the next server that starts.

A file is believed only while its process is this user's and started at ``startTime``
(:func:`~.procs.is_own_process`): a server killed with SIGKILL leaves its file behind, and its pid and
port may then be anyone's.

No protocol code here: the LSP transports and other bridges (an MCP endpoint, an IDE companion)
share it. Small API: :class:`DiscoveryFile` (``write``, ``remove``), :func:`find`,
:func:`remove_stale`, :func:`runtime_dir`.

Announcements written for other programs (Gemini CLI's discovery file, Claude Code's lock file)
carry an ``owner_stamp()`` (``"contextCompanion": {"serverPid", "serverStartTime"}``), so that
:func:`remove_dead_announcements` can tell the ones of a server that is gone (killed, crashed)
from those of a live server or of another program.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ownership
from .ownership import owned_by_other
from .procs import APP_NAME as APP_NAME  # re-exported: these lived here first
from .procs import is_own_process, mine, platform_runtime_dir, read_private_json
from .procs import pid_alive as pid_alive
from .procs import proc_stat_field as proc_stat_field
from .procs import process_start_time as process_start_time

log = logging.getLogger(__name__)

# ``server-``: sockets a client connects to (LSP, MCP); ``hook-``: the agent hooks' channel, apart so
# that nothing looking for a server to attach to ever lists it.
_NAME = re.compile(r"^(?:server|hook)-(\d+)-(\d+)\.json$")
_TEMP = re.compile(r"^\.(?:server|hook)-(\d+)-\d+\.[A-Za-z0-9_-]+\.tmp$")


class DiscoveryError(OSError):
    """The runtime directory or a discovery file cannot be used safely."""


@dataclass(frozen=True)
class Entry:
    """One running server, as its discovery file describes it."""

    path: Path
    pid: int
    port: int
    transport: str
    workspace_folders: tuple[str, ...]
    token: str | None
    url: str | None = None  # for HTTP transports (an MCP endpoint): where to connect
    start_time: int | None = None  # the process's start time (procs.process_start_time)

    def believed(self) -> bool:
        """Whether the announced process is still the one that wrote the file: this user's, started then."""
        return is_own_process(self.pid, self.start_time)


def runtime_dir() -> Path:
    """``<user runtime dir>/context-companion`` (``$XDG_RUNTIME_DIR`` on Linux, via platformdirs)."""
    return Path(platform_runtime_dir())


def private_dir(directory: Path) -> Path:
    """Create ``directory`` 0700, or check an existing one is ours, a real directory, and private."""
    directory.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileExistsError):
        directory.mkdir(mode=0o700)
    st = directory.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise DiscoveryError(f"{directory}: not a directory (a symlink or file is in the way)")
    if not mine(st):
        raise DiscoveryError(f"{directory}: {owned_by_other(st.st_uid)}")
    if ownership.MY_UID is not None and stat.S_IMODE(st.st_mode) & 0o077:  # where modes mean owner-only (not Windows)
        os.chmod(directory, 0o700)
    return directory


STAMP_KEY = "contextCompanion"


def owner_stamp() -> dict[str, Any]:
    """What an announcement records about the server that wrote it (see :func:`remove_dead_announcements`)."""
    pid = os.getpid()
    return {"serverPid": pid, "serverStartTime": process_start_time(pid)}


def _stamp_is_dead(raw: Any) -> bool:
    """True when ``raw`` (a parsed announcement) carries our stamp and its server is gone: the pid
    is dead, or it is alive but started at another time than the stamp says (the pid was reused)."""
    stamp = raw.get(STAMP_KEY) if isinstance(raw, dict) else None
    if not isinstance(stamp, dict):
        return False
    pid = stamp.get("serverPid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False  # not ours (another IDE companion's file, or ours from before the stamp): keep
    if not pid_alive(pid):
        return True
    recorded = stamp.get("serverStartTime")
    if not isinstance(recorded, int) or isinstance(recorded, bool):
        return False
    current = process_start_time(pid)
    return current is not None and current != recorded


def remove_dead_announcements(directory: Path, name: re.Pattern[str], max_bytes: int = 64 * 1024) -> list[Path]:
    """Remove the announcements in ``directory`` (file names matching ``name``) whose server is gone.

    Only what this process may safely judge is touched: ``directory`` itself must be a real
    directory owned by this user (no symlink), and it is opened once and used by descriptor; a
    file must be a regular file (never a symlink: opened with O_NOFOLLOW) owned by this user,
    small, JSON, carrying our stamp with a server that is gone (:func:`_stamp_is_dead`). It is
    unlinked only if the name still points at the same inode that was read. Returns what went.
    """
    removed: list[Path] = []
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow)
    except OSError:
        return removed  # missing, a symlink, or not ours to read: nothing to do
    try:
        st = os.fstat(dir_fd)
        if not stat.S_ISDIR(st.st_mode) or not mine(st):
            return removed
        for entry in os.listdir(dir_fd):
            if name.match(entry) is None:
                continue
            try:
                fd = os.open(entry, os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
            except OSError:
                continue
            try:
                fst = os.fstat(fd)
                if not stat.S_ISREG(fst.st_mode) or not mine(fst) or fst.st_size > max_bytes:
                    continue
                raw = json.loads(os.read(fd, max_bytes + 1))
            except (OSError, ValueError):
                continue
            finally:
                os.close(fd)
            if not _stamp_is_dead(raw):
                continue
            try:
                now = os.stat(entry, dir_fd=dir_fd, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (fst.st_dev, fst.st_ino):
                    continue  # rewritten since it was read (by a live server): not the file judged
                os.unlink(entry, dir_fd=dir_fd)
            except OSError:
                continue
            removed.append(directory / entry)
    finally:
        os.close(dir_fd)
    if removed:
        log.info("removed %d announcement(s) of servers that are gone: %s", len(removed), [p.name for p in removed])
    return removed


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_private(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so only this user can read it, atomically: the directory is
    made (or checked) 0700, the data goes to a 0600 temporary file in the same directory created
    with O_EXCL|O_NOFOLLOW (a planted symlink or file is never followed or reused), then it is
    renamed over ``path``."""
    private_dir(path.parent)
    temp = path.parent / f".{path.stem}.{secrets.token_urlsafe(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return path


class PrivateFile:
    """A file this process publishes for other programs of the same user: written (and rewritten)
    atomically, readable only by that user, removed at the end."""

    path: Path
    _written: bool = False

    def _publish(self, payload: Mapping[str, Any]) -> Path:
        write_private(self.path, json.dumps(payload, indent=2).encode("utf-8") + b"\n")
        self._written = True
        return self.path

    @property
    def written(self) -> bool:
        """The file is out there (written, not removed since)."""
        return self._written

    def remove(self) -> None:
        """Remove the file (idempotent; safe from signal handlers and atexit)."""
        if not self._written:
            return
        self._written = False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class DiscoveryFile(PrivateFile):
    """The discovery file of this process for one listening socket."""

    def __init__(
        self,
        port: int,
        transport: str,
        token: str | None,
        directory: Path | None = None,
        pid: int | None = None,
        url: str | None = None,
        prefix: str = "server",
    ) -> None:
        self.url = url
        self.port = port
        self.transport = transport
        self.token = token
        self.pid = os.getpid() if pid is None else pid
        self.directory = directory if directory is not None else runtime_dir()
        self.path = self.directory / f"{prefix}-{self.pid}-{port}.json"
        self._written = False

    def write(self, workspace_folders: Iterable[str | Path] = ()) -> Path:
        """Write (or atomically rewrite) the file: a 0600 temporary file in the same directory,
        created with O_EXCL|O_NOFOLLOW, then renamed over the old one."""
        payload = {
            "pid": self.pid,
            "startTime": process_start_time(self.pid),
            "port": self.port,
            "transport": self.transport,
            "workspaceFolders": [str(f) for f in workspace_folders],
            "token": self.token,
        }
        if self.url is not None:
            payload["url"] = self.url
        return self._publish(payload)


def read(path: Path) -> Entry | None:
    """The entry in ``path``, or None when it is not a private regular file of ours with valid JSON."""
    raw = read_private_json(path)
    if not isinstance(raw, dict):
        return None
    pid, port, folders, token = raw.get("pid"), raw.get("port"), raw.get("workspaceFolders"), raw.get("token")
    if not isinstance(pid, int) or not isinstance(port, int) or not isinstance(folders, list):
        return None
    return Entry(
        path=path,
        pid=pid,
        port=port,
        transport=str(raw.get("transport", "")),
        workspace_folders=tuple(str(f) for f in folders),
        token=token if isinstance(token, str) else None,
        url=raw["url"] if isinstance(raw.get("url"), str) else None,
        start_time=raw["startTime"] if isinstance(raw.get("startTime"), int) else None,
    )


def _contains(folder: str, workspace: Path) -> bool:
    try:
        return workspace == Path(folder) or workspace.is_relative_to(Path(folder))
    except ValueError:
        return False


def find(workspace: str | Path, directory: Path | None = None, transports: Sequence[str] = ()) -> list[Entry]:
    """Live servers whose workspace folders contain ``workspace``, the most specific folder first
    (then the newest file), then servers no client has claimed yet (no folders). ``transports``
    filters (``tcp``, ``ws``)."""
    directory = directory if directory is not None else runtime_dir()
    target = Path(os.path.abspath(workspace))
    found: list[tuple[int, float, Entry]] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    for name in names:
        if not name.startswith("server-") or not _NAME.match(name):
            continue
        entry = read(directory / name)
        if entry is None or not entry.believed() or (transports and entry.transport not in transports):
            continue
        depth = max((len(Path(f).parts) for f in entry.workspace_folders if _contains(f, target)), default=-1)
        if depth < 0 and entry.workspace_folders:
            continue  # a server of other folders (one without folders yet has no client: it may be ours)
        try:
            mtime = (directory / name).stat().st_mtime
        except OSError:
            continue
        found.append((depth, mtime, entry))
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [entry for _, _, entry in found]


def remove_stale(directory: Path | None = None) -> list[Path]:
    """Remove discovery (and leftover temporary) files whose process is gone, or whose pid now names
    another process (another start time, another user). Returns what went."""
    directory = directory if directory is not None else runtime_dir()
    removed: list[Path] = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        match = _NAME.match(name) or _TEMP.match(name)
        if match is None:
            continue
        path = directory / name
        if pid_alive(int(match.group(1))):
            entry = read(path) if _NAME.match(name) else None
            if entry is None or entry.start_time is None or entry.believed():
                continue  # a live server's, or one this process cannot judge
        try:
            if not mine(path.lstat()):
                continue
            os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    if removed:
        log.info("removed %d stale discovery file(s) in %s", len(removed), directory)
    return removed
