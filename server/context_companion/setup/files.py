"""The files ``setup`` writes, whatever the agent: reading a settings file without blocking and within a
size cap, the exact command a hook runs, writing atomically in a folder held open (a change since the read
refused), and the small owner-only record of what setup created so ``--remove`` can take it away again.
Used by :mod:`.command` (settings files of JSON hooks) and :mod:`.plugin` (a plugin file)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from ..errors import ContextCompanionError
from ..fileio import NotRegular, make_folder, open_directory, os_reason, read_in, read_regular, replace_in, stat_in

MAX_SETTINGS_BYTES = 4 * 1024 * 1024
PROGRAM = "context-companion"
# The hook's command when no ``context-companion`` script sits beside this Python. The agent runs it with the
# project as the working folder, and ``python -m``/``-c`` put that folder first on ``sys.path``, so a repository's
# own ``context_companion/`` (or ``pydantic/``, ...) would run instead of ours. ``-P`` is 3.11+ and ``-I`` drops
# PYTHONPATH and the user's site-packages, so this code removes the working folder (``''``, and the folder itself,
# which an empty PYTHONPATH entry adds) from the path before it imports anything: ``os`` and ``sys`` are loaded
# already at start-up. docs/reliability.md "A repository's Python files".
SAFE_MAIN = (
    "import os,sys;h=os.path.realpath(os.curdir);sys.path[:]=[p for p in sys.path if p and os.path.realpath(p)!=h];"
    "from context_companion.cli import main;sys.exit(main())"
)


class SetupError(ContextCompanionError):
    """``setup`` cannot do what it was asked; nothing was written."""


def hook_command(agent: str, *, shared: bool = True) -> tuple[str, bool]:
    """The command the agent runs, and whether it works on any machine that has Context Companion.

    For a file teams commit (``shared``), the bare ``context-companion`` when the one found on PATH is
    this installation (the script beside this Python): a teammate's own installation answers to it.
    Otherwise (a file of this machine only: Claude Code's ``settings.local.json``, a user settings file),
    and when PATH finds another one or none, that script's absolute path, shell-quoted: an agent may run
    its hooks with another PATH than this shell's (VS Code's agent runs them with a login shell's); else
    this Python running :data:`SAFE_MAIN` (never ``-m context_companion``: see there)."""
    here = Path(sys.executable).parent / PROGRAM
    mine = str(here) if here.is_file() and os.access(here, os.X_OK) else None
    found = shutil.which(PROGRAM)
    if shared and mine is not None and found is not None and os.path.realpath(found) == os.path.realpath(mine):
        return f"{PROGRAM} hook --agent {agent}", True
    if mine is not None:
        return f"{shlex.quote(os.path.abspath(mine))} hook --agent {agent}", False
    return shlex.join([sys.executable, "-c", SAFE_MAIN, "hook", "--agent", agent]), False


def problem(path: Path, what: str) -> SetupError:
    return SetupError(f"{path}: {what}; left untouched")


def read_settings(target: Path, shown: Path) -> bytes | None:
    """The file's bytes (None: there is none), never blocking (:func:`.fileio.read_regular`: a FIFO, socket or
    device is refused by its type), never through a symlink (``target`` is resolved already)."""
    try:
        return read_regular(target, MAX_SETTINGS_BYTES, follow=False)
    except NotRegular as exc:
        what = str(exc)
        raise problem(shown, what if what.startswith("larger") else f"{what}, not a settings file") from None
    except OSError as exc:
        raise SetupError(f"{shown}: cannot read: {os_reason(exc)}") from None


# What setup created, so that --remove takes it away again: a small owner-only record per file.


def record_file(real: Path) -> Path:
    from platformdirs import user_state_dir

    key = hashlib.sha256(os.fsencode(real)).hexdigest()[:32]
    return Path(user_state_dir(PROGRAM, appauthor=False)) / "setup" / f"{key}.json"


def read_record(real: Path) -> dict[str, Any] | None:
    from ..procs import read_private_json

    try:
        raw = read_private_json(record_file(real), 64 * 1024)
    except Exception:  # an odd state folder: as if there were no record
        return None
    if not isinstance(raw, dict) or raw.get("path") != str(real) or not isinstance(raw.get("createdFolders"), list):
        return None
    return raw


def write_record(real: Path, created_file: bool, created_folders: list[Path]) -> None:
    """Best effort: without a record, --remove deletes a file that holds nothing but ours."""
    import json

    from ..discovery import write_private

    record = {"path": str(real), "createdFile": created_file, "createdFolders": [str(f) for f in created_folders]}
    with contextlib.suppress(Exception):
        write_private(record_file(real), json.dumps(record).encode())


def drop_record(real: Path) -> None:
    with contextlib.suppress(Exception):
        os.unlink(record_file(real))


def missing_folders(folder: Path, root: str) -> list[Path]:
    """The folders from ``folder`` up that do not exist yet and lie in ``root`` (or are it), deepest first."""
    missing = []
    while not folder.exists() and within(folder, root) and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    return missing


def empty_folders(folders: list[Path]) -> str:
    """``the empty folder A`` or ``the empty folders A and B`` (A, B, and C) as a sentence names them."""
    names = [str(f) for f in folders]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"the empty folder{'s' if len(names) > 1 else ''} {listed}"


def within(folder: Path, root: str) -> bool:
    return str(folder) == root or str(folder).startswith(root.rstrip(os.sep) + os.sep)


def portability_note(agent: str, path: Path, command: str, portable: bool, user: bool, *, shared: bool) -> None:
    """One line when a file teams commit names a path of this machine."""
    if portable or user or not shared:
        return
    program = shlex.split(command)[0]
    sys.stdout.write(
        f"Note: {path} now names {program}, a path on this machine that teammates may not have if the file is "
        f"committed; `setup --agent {agent} --user` keeps the hooks out of the project (or put {PROGRAM} on "
        "PATH and run setup again).\n"
    )


def commit(
    path: Path,
    target: Path,
    root_real: str,
    before: bytes | None,
    data: bytes | None,
    record: dict[str, Any] | None,
    had_ours: bool,
    removing: bool,
) -> list[Path]:
    """Write ``data`` (None: delete the file) if the file still holds ``before``, and keep the
    record of what was there before setup. Returns the folders removed with the file."""
    created = missing_folders(target.parent, root_real) if before is None else []
    if data is not None:
        make_folder(target.parent, path)
    with open_directory(target.parent, path, lock=True) as dir_fd:
        old = stat_in(dir_fd, target.name, path)
        now = read_in(dir_fd, target.name, path) if old is not None and old.st_size == len(before or b"") else None
        if (old is None) != (before is None) or (old is not None and now != before):
            raise SetupError(f"{path}: changed while setup was reading it; run it again")
        if data is None:
            try:
                os.unlink(target.name, dir_fd=dir_fd)
            except OSError as exc:
                raise SetupError(f"{path}: cannot delete: {os_reason(exc)}") from None
        else:
            replace_in(dir_fd, target.name, data, old, path)
    if data is not None and not removing:
        if before is None or not before.strip():
            write_record(target, True, created)  # --remove deletes it (a blank file would stop Gemini CLI)
        elif not had_ours:
            write_record(target, False, [])  # --remove leaves it, with what it held
    if data is not None:
        return []
    folders = []
    if record is not None:
        for folder in (Path(f) for f in record["createdFolders"] if isinstance(f, str)):
            if not within(folder, root_real) or not target.is_relative_to(folder):
                break
            try:
                os.rmdir(folder)
            except OSError:
                break
            folders.append(folder)
    return folders
