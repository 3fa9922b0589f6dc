"""The quiet prompt without an editor, without composing: ``context-companion hook`` answers most prompts
with nothing (nothing changed), and composing from disk to find that out costs the domain's imports (about
0.3 s a prompt). So each composition from disk records what it depended on — every file it opened, every
folder it listed, every path it looked at, with their ``stat`` — and, once a session has been given all of
it, that the session is *quiet* at that record. The next prompt of a quiet session checks the record with
a few ``stat`` calls and, when nothing moved, prints nothing without importing anything heavy.

What the record holds, per path (:func:`_entry`):

- a file the composition opened: its inode, size, modification and change times (an edit moves them);
- a folder it listed: its inode and modification time (a file added, removed or renamed in it moves it);
- a path it only looked at (``stat``/``lstat``: a memory file that may appear, a marker, a link): what is
  there (nothing, a file, a folder, a link and where it points), not its content.

Plus the package's version and the environment variables that steer the composition. Anything not seen
this way is not read by the composition, so it cannot change its result. The record is kept per agent,
project and working folder in ``<state dir>/hook-quiet/<key>.json`` (owner-only, written atomically), with
the sessions that are quiet at it.

Light: imported before every prompt, it uses only ``os``, ``stat``, ``json``, ``hashlib``, ``sys``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys

from .. import __version__
from ..procs import read_private_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLDER = "hook-quiet"
MAX_SESSIONS = 256  # quiet sessions kept per record, the most recent last
MAX_PATHS = 20_000  # a composition that looked at more is not recorded (it is composed every time)
_SKIPPED_ROOTS = ("/proc/", "/sys/", "/dev/")
# What steers a composition besides the files: where the settings and the user's folders are, and our own settings.
_ENV_PREFIXES = ("CONTEXT_COMPANION_", "XDG_", "GIT_")
_ENV_NAMES = ("HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME")
_RANK = {"look": 0, "list": 1, "open": 2}  # a path opened or listed is recorded as such, not as looked at


def _environment() -> str:
    relevant = sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES) or k in _ENV_NAMES)
    text = json.dumps([__version__, sys.version_info[:2], relevant])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def key_of(agent: str, project: str, cwd: str) -> str:
    return hashlib.sha256("\0".join((agent, project, cwd)).encode("utf-8", "surrogatepass")).hexdigest()[:32]


_lstat, _stat = os.lstat, os.stat  # the real ones, also while a Recorder watches os.stat and os.lstat


def _entry(path: str, role: str) -> list[Any]:
    """What is at ``path`` now, as far as ``role`` (``open``, ``list``, ``look``) depends on it."""
    try:
        st = _lstat(path)
    except OSError:
        return [path, role, None]
    kind: Any = stat.S_IFMT(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        try:
            target: Any = os.readlink(path)
        except OSError:
            target = None
        try:
            followed = _stat(path)
        except OSError:
            return [path, role, kind, st.st_ino, target, None]
        st = followed
        kind = [kind, stat.S_IFMT(followed.st_mode)]
    else:
        target = None
    # The owner too: a marker or memory file handed to another user changes what is trusted (ownership.py).
    if role == "open":
        return [path, role, kind, st.st_ino, target, st.st_uid, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    if role == "list":
        return [path, role, kind, st.st_ino, target, st.st_uid, st.st_mtime_ns]
    return [path, role, kind, st.st_ino, target, st.st_uid]


class Recorder:
    """What a composition looks at, while :meth:`recording` is on: every ``open`` (the audit event covers
    ``open()``, ``os.open`` and ``io.open_code``), every folder listed (``os.scandir``, ``os.listdir``), every
    ``os.stat``/``os.lstat`` (``os.path.exists``, ``isdir``, ``realpath``, ``Path.exists`` go through them)."""

    _installed = False
    _active: Recorder | None = None

    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        self.roles: dict[str, str] = {}
        self.seen: dict[str, list[Any]] = {}  # path → what was there when it was first used so
        self._skip = tuple(p.rstrip(os.sep) + os.sep for p in skip) + _SKIPPED_ROOTS

    def _note(self, path: Any, role: str) -> None:
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path:
            return  # a descriptor (dir_fd, fstat): its path was noted when it was opened
        path = os.path.abspath(path)
        if path.startswith(self._skip):
            return
        current = self.roles.get(path)
        if current is None or _RANK[role] > _RANK[current]:
            self.roles[path] = role
            # Taken now, before the file is read: a change after this moves the record, never the reverse.
            self.seen[path] = _entry(path, role)

    @classmethod
    def _audit(cls, event: str, args: tuple[Any, ...]) -> None:
        recorder = cls._active
        if recorder is None:
            return
        if event == "open" and args:
            mode = args[1] if len(args) > 1 else None
            flags = args[2] if len(args) > 2 else 0
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
            )
            if not writing:
                recorder._note(args[0], "open")
        elif event in ("os.scandir", "os.listdir") and args:
            recorder._note(args[0], "list")

    def __enter__(self) -> Recorder:
        if not Recorder._installed:
            sys.addaudithook(Recorder._audit)
            Recorder._installed = True
        Recorder._active = self
        self._stat, self._lstat = os.stat, os.lstat
        real_stat, real_lstat = self._stat, self._lstat

        def looked_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if Recorder._active is self and not kwargs.get("dir_fd"):
                self._note(path, "look")
            return real_stat(path, *args, **kwargs)

        def looked_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            if Recorder._active is self and not kwargs.get("dir_fd"):
                self._note(path, "look")
            return real_lstat(path, *args, **kwargs)

        os.stat, os.lstat = looked_stat, looked_lstat
        return self

    def __exit__(self, *_exc: object) -> None:
        os.stat, os.lstat = self._stat, self._lstat
        Recorder._active = None

    def record(self) -> dict[str, Any] | None:
        """The record of what was looked at, as it was when first used (None when too large to be worth it)."""
        if len(self.seen) > MAX_PATHS:
            return None
        return {"env": _environment(), "paths": [self.seen[p] for p in sorted(self.seen)]}


def unchanged(record: Any) -> bool:
    """Whether everything ``record`` saw is as it was (the same environment, each path the same)."""
    if not isinstance(record, dict) or record.get("env") != _environment():
        return False
    paths = record.get("paths")
    if not isinstance(paths, list):
        return False
    for entry in paths:
        if not isinstance(entry, list) or len(entry) < 3 or not isinstance(entry[0], str):
            return False
        if _entry(entry[0], entry[1]) != entry:
            return False
    return True


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, FOLDER, key + ".json")


def is_quiet(directory: str, key: str, session: str) -> bool:
    """Whether ``session`` is quiet at a record that still holds (nothing it depended on moved)."""
    raw = read_private_json(_path(directory, key), max_bytes=8 << 20)
    if not isinstance(raw, dict) or raw.get("version") != __version__:
        return False
    sessions = raw.get("sessions")
    return isinstance(sessions, list) and session in sessions and unchanged(raw.get("record"))


def _sessions(raw: Any, record: Any) -> list[str]:
    """The sessions quiet at ``record`` in a stored ``raw`` (none when it holds another record)."""
    if not isinstance(raw, dict) or raw.get("version") != __version__ or raw.get("record") != record:
        return []
    return [s for s in raw.get("sessions") or [] if isinstance(s, str)]


def mark_quiet(directory: Any, key: str, session: str, record: dict[str, Any]) -> None:
    """Remember that ``session`` is quiet at ``record`` (the caller holds the state lock); a new record
    forgets the sessions quiet at the one before."""
    from pathlib import Path

    from ..discovery import private_dir, write_private

    path = Path(_path(str(directory), key))
    sessions = [s for s in _sessions(read_private_json(path, max_bytes=8 << 20), record) if s != session]
    sessions.append(session)
    private_dir(path.parent)
    payload = {"version": __version__, "record": record, "sessions": sessions[-MAX_SESSIONS:]}
    write_private(path, json.dumps(payload).encode("utf-8"))


def forget(directory: Any, key: str, session: str) -> None:
    """``session`` is no longer quiet (it was reset, or a composition for it was not taken)."""
    from pathlib import Path

    from ..discovery import write_private

    path = Path(_path(str(directory), key))
    raw = read_private_json(path, max_bytes=8 << 20)
    if not isinstance(raw, dict) or session not in (raw.get("sessions") or []):
        return
    raw["sessions"] = [s for s in raw["sessions"] if s != session]
    write_private(path, json.dumps(raw).encode("utf-8"))


def _resume_path(directory: str, key: str) -> str:
    return os.path.join(directory, FOLDER, key + ".resume.json")


def resume_at(directory: Any, key: str) -> int:
    """Where the rule files' reading starts for this project and folder: 0, or where a composition stopped by the
    hook's deadline left off (:mod:`..memory.rule_budget`)."""
    raw = read_private_json(_resume_path(str(directory), key), max_bytes=1024)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else 0


def set_resume(directory: Any, key: str, start: int) -> None:
    """Remember where the next composition starts reading rule files (the caller holds the state lock)."""
    from pathlib import Path

    from ..discovery import private_dir, write_private

    path = Path(_resume_path(str(directory), key))
    private_dir(path.parent)
    write_private(path, json.dumps(start).encode("utf-8"))
