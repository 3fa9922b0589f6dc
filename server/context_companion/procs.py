"""Light helpers about processes and private files, for paths that must start fast.

``context-companion hook`` runs before every prompt of an agent, so what it needs to find the
editor's server (is a pid alive, a process's parent and start time, an owner-only JSON file) lives
here, importing only ``os``, ``stat`` and ``json``; :mod:`.discovery` builds on it.

Calls whose meaning differs by platform are guarded here: on Windows ``os.kill(pid, 0)`` *ends* the process
(TerminateProcess with exit code 0), there is no ``/proc``, no ``os.getuid`` and no owner-only file mode
(``st_mode`` says 0o666). There a process is asked about with psutil (a dependency on Windows only, imported
when first asked: never on the hook's path elsewhere), and a file's owner and mode are not judged
(:data:`.ownership.MY_UID` is None there).
"""

from __future__ import annotations

import json
import os
import stat
import sys

from . import ownership

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

APP_NAME = "context-companion"


def on_windows() -> bool:
    """Windows, where ``os.kill`` ends a process whatever the signal (asked at each call: tests simulate it)."""
    return sys.platform == "win32" or os.name == "nt"


_told_no_psutil = False


def _psutil() -> Any:
    """psutil (a dependency on Windows only), or None where it is missing (said once in the log)."""
    global _told_no_psutil
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        if not _told_no_psutil:
            _told_no_psutil = True
            import logging

            logging.getLogger(__name__).warning(
                "psutil is missing: on Windows no process can be checked (every announced process is taken as "
                "alive and the token's proof alone decides); reinstall context-companion with its dependencies"
            )
        return None
    return psutil


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if on_windows():  # never os.kill there: it would end the process
        psutil = _psutil()
        return psutil is None or bool(psutil.pid_exists(pid))  # unknown: alive (nothing of it is removed)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def process_owner(pid: int) -> int | None:
    """The user id that owns ``pid`` (the owner of ``/proc/<pid>``), or None where that cannot be read
    (no such process, no ``/proc``)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except (OSError, ValueError):
        return None


def is_own_process(pid: int, start_time: Any) -> bool:
    """Whether ``pid`` is a live process of this user that started at ``start_time`` (what an
    announcement recorded, :func:`process_start_time`): a pid of another user, or a pid reused since
    the announcement was written, is not the process announced. Where ``/proc`` is missing, a live pid
    this user may signal counts (the channel's proof of the token still decides)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if on_windows():
        return _windows_own_process(pid)
    if os.path.isdir("/proc/self"):
        if process_owner(pid) != ownership.MY_UID:
            return False
        now = process_start_time(pid)
        return (
            now is not None and isinstance(start_time, int) and not isinstance(start_time, bool) and now == start_time
        )
    try:
        os.kill(pid, 0)  # POSIX without /proc (macOS, the BSDs): signal 0 only asks
    except OSError:
        return False  # gone, or another user's (PermissionError)
    return True


def _windows_own_process(pid: int) -> bool:
    """A live process of this user, as psutil tells on Windows (its owner's name); without psutil, True (as
    on POSIX without ``/proc``: the channel's proof of the token still decides)."""
    psutil = _psutil()
    if psutil is None:
        return True
    try:
        return bool(psutil.Process(pid).username() == psutil.Process().username())
    except Exception:  # psutil.Error: gone, or another user's (AccessDenied)
        return False


def proc_stat_field(pid: int, number: int) -> int | None:
    """Field ``number`` (1-based, as proc(5) numbers them) of ``/proc/<pid>/stat`` as an int, or
    None where it cannot be read (no such process, no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        # The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
        return int(data[data.rindex(b")") + 2 :].split()[number - 3])
    except (OSError, ValueError, IndexError):
        return None


def process_start_time(pid: int) -> int | None:
    """When ``pid`` started, as the kernel counts it (``/proc/<pid>/stat`` field 22, clock ticks
    since boot), or None where that cannot be read. With the pid, it names one process: a pid
    reused by a later process has another start time."""
    return proc_stat_field(pid, 22)


def ancestors(pid: int, limit: int = 64) -> list[int]:
    """``pid`` and its parents, nearest first, up to (not including) pid 1; [] without ``/proc``."""
    chain: list[int] = []
    while pid > 1 and len(chain) < limit:
        chain.append(pid)
        parent = proc_stat_field(pid, 4)
        if parent is None or parent == pid:
            break
        pid = parent
    return chain


def mine(st: os.stat_result) -> bool:
    """Owned by this user (where the system has user ids; elsewhere, True: see the module docstring)."""
    return ownership.MY_UID is None or st.st_uid == ownership.MY_UID


def private(st: os.stat_result) -> bool:
    """This user's and no one else may read or write it (owner-only mode, where modes mean that)."""
    return mine(st) and (ownership.MY_UID is None or not stat.S_IMODE(st.st_mode) & 0o077)


def read_private_json(path: str | os.PathLike[str], max_bytes: int = 1 << 20) -> Any:
    """The JSON in ``path`` when it is a regular file of this user that no one else may read (never
    through a symlink), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not private(st):
            return None
        chunks = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return json.loads(b"".join(chunks)) if size <= max_bytes else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def runtime_dir_fast() -> str | None:
    """``$XDG_RUNTIME_DIR/context-companion`` when the variable names a private directory of this
    user (0700, not a symlink: what platformdirs accepts) and that folder exists, without
    importing platformdirs; None otherwise (then ask :func:`.discovery.runtime_dir`)."""
    base = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if not base or not os.path.isabs(base):
        return None
    try:
        st = os.lstat(base)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != ownership.MY_UID or stat.S_IMODE(st.st_mode) != 0o700:
        return None
    folder = os.path.join(base, APP_NAME)
    return folder if os.path.isdir(folder) else None


def runtime_folder() -> str | None:
    """The user's runtime folder for our files (:func:`runtime_dir_fast`, else platformdirs' answer), or None
    when there is none this user can trust (``XDG_RUNTIME_DIR`` unset and the fallback folder made by
    another user: then no server could announce itself there either)."""
    directory = runtime_dir_fast()
    if directory is not None:
        return directory
    try:
        return platform_runtime_dir()
    except OSError:
        return None


def platform_runtime_dir() -> str:
    """``<user runtime dir>/context-companion`` as platformdirs finds it (``$XDG_RUNTIME_DIR`` on Linux, else
    its fallbacks); raises ``OSError`` (PermissionError) when its fallback folder is not this user's."""
    import warnings

    from platformdirs import user_runtime_dir

    with warnings.catch_warnings():
        # platformdirs warns on stderr when XDG_RUNTIME_DIR is unset and it falls back: not news.
        warnings.simplefilter("ignore")
        return user_runtime_dir(APP_NAME, appauthor=False)
