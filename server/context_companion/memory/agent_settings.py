"""An agent's own settings that change what it loads, read where that is cheap.

Gemini CLI reads only ``GEMINI.md`` unless ``context.fileName`` names other files (a string or a
list, e.g. ``["AGENTS.md", "GEMINI.md"]``) in ``.gemini/settings.json`` of the project or
``~/.gemini/settings.json`` (the project's wins). :func:`for_agent` returns the agent's table with
those names, and a line saying what was read or assumed. The files are read as Gemini CLI 0.61
reads them (comments allowed, trailing commas not: :mod:`..jsonc`). Reads two small files, never
blocks on one that is not a regular file; never raises.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from typing import Any

from ..jsonc import JsoncError
from ..jsonc import parse as parse_jsonc
from .agents import AgentRules

GEMINI_SETTINGS = os.path.join(".gemini", "settings.json")
_MAX_BYTES = 1024 * 1024


def _read_bytes(path: str) -> bytes | None:
    """The file's bytes, None when there is none; never blocks (a FIFO or socket is refused by its
    type, then opened without blocking). Raises OSError or ValueError (not a regular file, too large)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("not a regular file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        chunks, size = [], 0
        while size <= _MAX_BYTES:
            chunk = os.read(fd, _MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > _MAX_BYTES:
        raise ValueError(f"larger than {_MAX_BYTES // (1024 * 1024)} MiB")
    return b"".join(chunks)


def _read_json(path: str) -> tuple[Any, str | None]:
    """(the settings or None, a problem) of a settings file read as Gemini CLI 0.61 reads it: UTF-8,
    comments stripped, then JavaScript's ``JSON.parse`` (no trailing commas; the last of two keys
    wins). (None, None) when there is none. A file it cannot read stops Gemini CLI at start."""
    try:
        data = _read_bytes(path)
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    except ValueError as exc:
        return None, f"cannot read {path}: {exc}"
    if data is None:
        return None, None
    try:
        return parse_jsonc(data.decode("utf-8"), comments=True, as_javascript=True).root.python(), None
    except UnicodeDecodeError as exc:
        return None, f"{path} is not UTF-8 text (a bad byte at offset {exc.start})"
    except JsoncError as exc:
        return None, f"{path} is not JSON that Gemini CLI can read ({exc}; Gemini CLI stops at start on it)"


def _file_names(raw: Any) -> tuple[str, ...] | None:
    context = raw.get("context") if isinstance(raw, dict) else None
    names = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(names, str) and names.strip():
        return (names.strip(),)
    if isinstance(names, list):
        kept = tuple(n.strip() for n in names if isinstance(n, str) and n.strip())
        return kept or None
    return None


def gemini_file_names(folder: str | None, home: str) -> tuple[tuple[str, ...], str]:
    """Gemini CLI's ``context.fileName`` for a project folder, and where it came from."""
    places = ([os.path.join(folder, GEMINI_SETTINGS)] if folder else []) + [os.path.join(home, GEMINI_SETTINGS)]
    problems = []
    for path in places:
        raw, problem = _read_json(path)
        if problem is not None:
            problems.append(problem)
            continue
        names = _file_names(raw)
        if names is not None:
            return names, f"context.fileName {list(names)} from {path}"
    default = "Gemini CLI's default context.fileName ['GEMINI.md']"
    if problems:
        return ("GEMINI.md",), f"assumed {default}: {'; '.join(problems)}"
    return ("GEMINI.md",), f"{default} (no context.fileName in its settings)"


def for_agent(agent: AgentRules, folder: str | None, home: str) -> tuple[AgentRules, tuple[str, ...]]:
    """The agent's table adjusted to its own settings, and what was read or assumed (for explain)."""
    if agent.id != "gemini-cli":
        return agent, ()
    names, note = gemini_file_names(folder, home)
    return replace(agent, names=names), (note,)
