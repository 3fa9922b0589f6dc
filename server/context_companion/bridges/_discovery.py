"""Discovery files: ``<user runtime dir>/context-companion/server-<pid>-<port>.json``, owner-only.

A stand-in with the layout and guarantees (0600 in a 0700 directory, written atomically) the
shared discovery module gives; the bridges switch to that module when it lands.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def discovery_dir() -> Path:
    import platformdirs

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset, then falls back
        warnings.simplefilter("ignore")
        return Path(platformdirs.user_runtime_dir()) / "context-companion"


def write(port: int, content: Mapping[str, Any]) -> Path:
    folder = discovery_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"server-{os.getpid()}-{port}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".server-", suffix=".tmp")  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(dict(content), out, indent=2)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def read_all() -> list[dict[str, Any]]:
    """Every readable discovery file of this user whose process is alive."""
    found = []
    folder = discovery_dir()
    try:
        entries = sorted(folder.glob("server-*.json"))
    except OSError:
        return []
    for path in entries:
        try:
            if path.stat().st_uid != os.getuid():
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not _alive(data.get("pid")):
            continue
        data["_file"] = str(path)
        found.append(data)
    return found


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
