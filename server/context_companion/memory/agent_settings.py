"""An agent's own settings that change what it loads, read where that is cheap.

Gemini CLI reads only ``GEMINI.md`` unless ``context.fileName`` names other files (a string or a
list, e.g. ``["AGENTS.md", "GEMINI.md"]``) in ``.gemini/settings.json`` of the project or
``~/.gemini/settings.json`` (the project's wins). :func:`for_agent` returns the agent's table with
those names, and a line saying what was read or assumed. Reads two small files; never raises.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from .agents import AgentRules

GEMINI_SETTINGS = os.path.join(".gemini", "settings.json")
_MAX_BYTES = 1024 * 1024


def _read_json(path: str) -> tuple[Any, str | None]:
    """(parsed JSON or None, a problem) of a settings file; (None, None) when there is none."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    try:
        return json.loads(data), None
    except ValueError:
        return None, f"{path} is not plain JSON (comments?)"


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
