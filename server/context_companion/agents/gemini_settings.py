"""The settings of Gemini CLI and of the agents that share its reader (Qwen Code, a fork of it) that change what
they load, read where that is cheap. What differs between them (the files, the defaults, how a value's variables
are expanded, how a folder's trust is decided) is data of each agent's module: ``SETTINGS_FILE``,
``DEFAULT_FILE_NAMES``, ``ON_BAD_SETTINGS``, ``TRUST_*``, ``expand_vars`` and, optionally, ``trust_from_environment``.

Gemini CLI reads only ``GEMINI.md`` unless ``context.fileName`` names other files (a string or a list, e.g.
``["AGENTS.md", "GEMINI.md"]``) in ``.gemini/settings.json`` of the project or ``~/.gemini/settings.json`` (the
project's wins); its fork does the same with its own folder and defaults. :func:`for_agent` returns the agent's
table with those names, and a line saying what was read or assumed. The files are read as Gemini CLI 0.61 and its
fork read them (comments allowed, trailing commas not: :mod:`..jsonc`), with ``$VAR`` and ``${VAR}`` in a value
replaced from the environment as each expands them (a variable that is not set stays as written).

Folder trust (read in their shipped code): with ``security.folderTrust.enabled`` (each module says whether it is
on when the user settings do not say), a folder that the agent's ``trustedFolders.json`` does not trust
(``TRUST_FOLDER``, ``TRUST_PARENT`` of a folder above it) is loaded without its project settings and without its
project memory: the agent then reads only its global files. Gemini CLI also takes ``GEMINI_CLI_TRUST_WORKSPACE``
(``true``/``false``) and ``GEMINI_RESTRICTED_MODE=true`` from the environment. Reads a few small files, never blocks
on one that is not a regular file; never raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any

from ..fileio import read_regular
from ..jsonc import JsoncError
from ..jsonc import parse as parse_jsonc
from . import registry
from .model import AgentRules

_MAX_BYTES = 1024 * 1024
TRUST_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def reader_of(agent: str) -> ModuleType | None:
    """The module of ``agent`` when its settings are read here (it has a ``SETTINGS_FILE``), else None."""
    if agent not in registry.HOOK_AGENTS:
        return None
    module = registry.load(agent)
    return module if hasattr(module, "SETTINGS_FILE") else None


def _reader(agent: str) -> ModuleType:
    module = reader_of(agent)
    if module is None:
        raise KeyError(agent)
    return module


def expand_vars(agent: str, value: str, environ: Mapping[str, str]) -> str:
    """``value`` with ``$VAR``, ``${VAR}`` (Gemini CLI: ``${VAR:-default}``) replaced as ``agent`` replaces them."""
    result: str = _reader(agent).expand_vars(value, environ)
    return result


def _read_bytes(path: str) -> bytes | None:
    """The file's bytes, None when there is none; never blocks (:func:`..fileio.read_regular`). Raises OSError,
    or ValueError (not a regular file, too large)."""
    return read_regular(path, _MAX_BYTES)


def _read_json(path: str, agent: str = "gemini-cli") -> tuple[Any, str | None]:
    """(the settings or None, a problem) of a settings file read as ``agent`` reads it: UTF-8, comments stripped,
    then JavaScript's ``JSON.parse`` (no trailing commas; the last of two keys wins). (None, None) when there is
    none. A file it cannot read stops Gemini CLI at start (its fork starts without its settings)."""
    module = _reader(agent)
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
        name = module.NAME
        return None, f"{path} is not JSON that {name} can read ({exc}; {name} {module.ON_BAD_SETTINGS})"


def _file_names(raw: Any, agent: str, environ: Mapping[str, str]) -> tuple[str, ...] | None:
    context = raw.get("context") if isinstance(raw, dict) else None
    names = context.get("fileName") if isinstance(context, dict) else None
    if isinstance(names, str):
        names = expand_vars(agent, names, environ)
        if names.strip():
            return (names.strip(),)
    if isinstance(names, list):
        kept = tuple(
            n.strip() for n in (expand_vars(agent, n, environ) for n in names if isinstance(n, str)) if n.strip()
        )
        return kept or None
    return None


def _trust_on(agent: str, user: Any) -> bool:
    security = user.get("security") if isinstance(user, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    enabled = folder_trust.get("enabled") if isinstance(folder_trust, dict) else None
    return enabled if isinstance(enabled, bool) else bool(_reader(agent).TRUST_DEFAULT_ON)


def _real(path: str) -> str:
    return os.path.normpath(os.path.realpath(os.path.expanduser(path)))


def _under(parent: str, child: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def folder_trusted(
    agent: str, folder: str, home: str, user: Any, environ: Mapping[str, str]
) -> tuple[bool, str | None]:
    """(whether ``agent`` loads ``folder``'s project settings and memory, why not when it does not)."""
    module = _reader(agent)
    from_environment = getattr(module, "trust_from_environment", None)
    if from_environment is not None:
        said, why = from_environment(environ)
        if said is not None:
            return said, why
    if not _trust_on(agent, user):
        return True, None
    path = environ.get(module.TRUST_FILE_ENV) or os.path.join(home, module.TRUST_FILE)
    raw, problem = _read_json(path, agent)
    if problem is not None:
        return False, problem
    location = _real(folder)
    deepest_wins = bool(module.TRUST_DEEPEST_WINS)
    best: tuple[int, bool] | None = None  # (rank, trusted)
    for key, level in (raw or {}).items() if isinstance(raw, dict) else ():
        if level not in TRUST_LEVELS:
            continue
        target = _real(os.path.dirname(key) if level == "TRUST_PARENT" else key)
        if not _under(target, location):
            continue
        trusted = level != "DO_NOT_TRUST"
        rank = target.count(os.sep) if deepest_wins else len(key)
        if best is None or rank > best[0] or (deepest_wins and rank == best[0] and not trusted):
            best = (rank, trusted)
    if best is not None and best[1]:
        return True, None
    said = "does not trust it" if best is None else "marks it DO_NOT_TRUST"
    return False, f"security.folderTrust is on and {path} {said}"


def context_file_names(
    agent: str, folder: str | None, home: str, environ: Mapping[str, str] | None = None
) -> tuple[tuple[str, ...], str, bool]:
    """``context.fileName`` of ``agent`` (one whose settings are read here) for a project folder, where it came from,
    and whether the agent trusts the folder (else it reads neither the folder's settings nor its memory)."""
    env = os.environ if environ is None else environ
    module = _reader(agent)
    relative, name, default_names = module.SETTINGS_FILE, module.NAME, tuple(module.DEFAULT_FILE_NAMES)
    user_path = os.path.join(home, relative)
    user, user_problem = _read_json(user_path, agent)
    trusted, why = folder_trusted(agent, folder, home, user, env) if folder else (True, None)
    untrusted = (
        f"{name} does not trust {folder} ({why}): it reads neither {os.path.join(folder, relative)} nor the "
        "project's memory files, only its global ones"
        if folder and not trusted
        else None
    )
    places = [os.path.join(folder, relative)] if folder and trusted else []
    problems = []
    found: tuple[tuple[str, ...], str] | None = None
    for path in places:
        raw, problem = _read_json(path, agent)
        if problem is not None:
            problems.append(problem)
            continue
        names = _file_names(raw, agent, env)
        if names is not None:
            found = names, f"context.fileName {list(names)} from {path}"
            break
    if found is None:
        if user_problem is not None:
            problems.append(user_problem)
        else:
            names = _file_names(user, agent, env)
            if names is not None:
                found = names, f"context.fileName {list(names)} from {user_path}"
    if found is None:
        default = f"{name}'s default context.fileName {list(default_names)}"
        found = (
            default_names,
            (
                f"assumed {default}: {'; '.join(problems)}"
                if problems
                else f"{default} (no context.fileName in its settings)"
            ),
        )
    note = found[1] if untrusted is None else f"{untrusted}; {found[1]}"
    return found[0], note, trusted


def gemini_file_names(folder: str | None, home: str) -> tuple[tuple[str, ...], str]:
    """Gemini CLI's ``context.fileName`` for a project folder, and where it came from."""
    names, note, _trusted = context_file_names("gemini-cli", folder, home)
    return names, note


def for_agent(
    agent: AgentRules, folder: str | None, home: str, environ: Mapping[str, str] | None = None
) -> tuple[AgentRules, tuple[str, ...]]:
    """The agent's table adjusted to its own settings, and what was read or assumed (for explain)."""
    if reader_of(agent.id) is None:
        return agent, ()
    names, note, trusted = context_file_names(agent.id, folder, home, environ)
    if not trusted:  # its global files only: no project memory, no rules, nothing in sub-folders
        why = f"{agent.name} does not trust this folder: it reads only its global files"
        rules = replace(agent, names=(), subfolders="never", rules=(), stand_in=None, above_root=False, untrusted=why)
        return rules, (note,)
    return replace(agent, names=names), (note,)
