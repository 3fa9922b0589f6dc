"""An agent's own settings that change what it loads, read where that is cheap.

Gemini CLI reads only ``GEMINI.md`` unless ``context.fileName`` names other files (a string or a
list, e.g. ``["AGENTS.md", "GEMINI.md"]``) in ``.gemini/settings.json`` of the project or
``~/.gemini/settings.json`` (the project's wins). Qwen Code, a fork of it, does the same with
``.qwen/settings.json`` and ``~/.qwen/settings.json`` (default ``QWEN.md`` and ``AGENTS.md``).
:func:`for_agent` returns the agent's table with those names, and a line saying what was read or
assumed. The files are read as Gemini CLI 0.61 and Qwen Code 0.24 read them (comments allowed,
trailing commas not: :mod:`..jsonc`). Reads two small files, never blocks on one that is not a
regular file; never raises.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ..fileio import read_regular
from ..jsonc import JsoncError
from ..jsonc import parse as parse_jsonc
from .agents import AgentRules

GEMINI_SETTINGS = os.path.join(".gemini", "settings.json")
QWEN_SETTINGS = os.path.join(".qwen", "settings.json")
# agent id → (its settings file, relative to the project and to home; its name; its default file names)
CONTEXT_FILE_NAMES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "gemini-cli": (GEMINI_SETTINGS, "Gemini CLI", ("GEMINI.md",)),
    "qwen-code": (QWEN_SETTINGS, "Qwen Code", ("QWEN.md", "AGENTS.md")),
}
_MAX_BYTES = 1024 * 1024


def _read_bytes(path: str) -> bytes | None:
    """The file's bytes, None when there is none; never blocks (:func:`..fileio.read_regular`). Raises OSError,
    or ValueError (not a regular file, too large)."""
    return read_regular(path, _MAX_BYTES)


def _read_json(path: str, agent: str = "Gemini CLI") -> tuple[Any, str | None]:
    """(the settings or None, a problem) of a settings file read as Gemini CLI 0.61 reads it: UTF-8,
    comments stripped, then JavaScript's ``JSON.parse`` (no trailing commas; the last of two keys
    wins). (None, None) when there is none. A file it cannot read stops Gemini CLI at start (Qwen Code
    0.24 starts without its settings)."""
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
        if agent == "Gemini CLI":
            return None, f"{path} is not JSON that Gemini CLI can read ({exc}; Gemini CLI stops at start on it)"
        return None, f"{path} is not JSON that {agent} can read ({exc}; {agent} ignores the whole file)"


def _file_names(raw: Any) -> tuple[str, ...] | None:
    context = raw.get("context") if isinstance(raw, dict) else None
    names = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(names, str) and names.strip():
        return (names.strip(),)
    if isinstance(names, list):
        kept = tuple(n.strip() for n in names if isinstance(n, str) and n.strip())
        return kept or None
    return None


def context_file_names(agent: str, folder: str | None, home: str) -> tuple[tuple[str, ...], str]:
    """``context.fileName`` of ``agent`` (``gemini-cli``, ``qwen-code``) for a project folder, and where it
    came from."""
    relative, name, default_names = CONTEXT_FILE_NAMES[agent]
    places = ([os.path.join(folder, relative)] if folder else []) + [os.path.join(home, relative)]
    problems = []
    for path in places:
        raw, problem = _read_json(path, name)
        if problem is not None:
            problems.append(problem)
            continue
        names = _file_names(raw)
        if names is not None:
            return names, f"context.fileName {list(names)} from {path}"
    default = f"{name}'s default context.fileName {list(default_names)}"
    if problems:
        return default_names, f"assumed {default}: {'; '.join(problems)}"
    return default_names, f"{default} (no context.fileName in its settings)"


def gemini_file_names(folder: str | None, home: str) -> tuple[tuple[str, ...], str]:
    """Gemini CLI's ``context.fileName`` for a project folder, and where it came from."""
    return context_file_names("gemini-cli", folder, home)


def for_agent(agent: AgentRules, folder: str | None, home: str) -> tuple[AgentRules, tuple[str, ...]]:
    """The agent's table adjusted to its own settings, and what was read or assumed (for explain)."""
    if agent.id not in CONTEXT_FILE_NAMES:
        return agent, ()
    names, note = context_file_names(agent.id, folder, home)
    return replace(agent, names=names), (note,)
