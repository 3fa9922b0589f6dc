"""``context-companion setup --agent claude-code|gemini-cli|codex``: write the agent's hooks.

Each agent runs ``context-companion hook --agent <id>`` at ``SessionStart`` and before every
prompt (``UserPromptSubmit``; Gemini CLI: ``BeforeAgent``), configured in its settings file:

- Claude Code: ``<project>/.claude/settings.local.json`` (not committed), or with ``--user``
  ``$CLAUDE_CONFIG_DIR/settings.json`` (default ``~/.claude/settings.json``);
- Gemini CLI: ``<project>/.gemini/settings.json``, or ``~/.gemini/settings.json``;
- Codex: ``<project>/.codex/hooks.json`` (loaded only in a project Codex trusts), or
  ``$CODEX_HOME/hooks.json`` (default ``~/.codex``). Codex runs a new or changed hook only once
  the user trusts it in its TUI ("Hooks need review"); setup never writes that trust.

All three take Claude Code's shape: ``{"hooks": {"<event>": [{"hooks": [{"type": "command",
"command": "..."}]}]}}``. The file is merged (every other key and hook kept, ours recognised by
their command and replaced in place), written atomically with its mode kept, only inside the
project or the agent's config folder (symlinks resolved); a file that is not plain JSON (Gemini
CLI allows comments, which a rewrite would lose) is refused with exit status 2 and left as it is.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ContextCompanionError
from .fileio import make_folder, open_directory, read_in, replace_in, resolve_for_write, stat_in

if TYPE_CHECKING:
    import argparse

MAX_SETTINGS_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class AgentHooks:
    id: str
    name: str
    events: tuple[str, ...]
    project_file: str  # relative to the project folder
    user_dir_env: str | None  # the variable that moves its config folder
    user_dir: str  # its default config folder, under home
    user_file: str  # the file name in that folder


AGENT_HOOKS = {
    a.id: a
    for a in (
        AgentHooks(
            "claude-code",
            "Claude Code",
            ("SessionStart", "UserPromptSubmit"),
            ".claude/settings.local.json",
            "CLAUDE_CONFIG_DIR",
            ".claude",
            "settings.json",
        ),
        AgentHooks(
            "gemini-cli",
            "Gemini CLI",
            ("SessionStart", "BeforeAgent"),
            ".gemini/settings.json",
            None,
            ".gemini",
            "settings.json",
        ),
        AgentHooks(
            "codex",
            "Codex",
            ("SessionStart", "UserPromptSubmit"),
            ".codex/hooks.json",
            "CODEX_HOME",
            ".codex",
            "hooks.json",
        ),
    )
}

CODEX_REVIEW = (
    'Codex will ask "Hooks need review" the next time it starts here: trust the Context Companion hooks there '
    "(setup never trusts them for you; `codex exec` skips a hook that is not trusted)."
)

_OURS = re.compile(r"(?:^|[\s/'\"])(?:context-companion|-m\s+context_companion)['\"]?\s+hook\s+--agent[\s=]")


class SetupError(ContextCompanionError):
    """``setup`` cannot do what it was asked; nothing was written."""


def hook_command(agent: str) -> str:
    """The command the agent runs: the ``context-companion`` next to this Python (or on PATH),
    absolute and shell-quoted, else this Python with ``-m context_companion``."""
    here = Path(sys.executable).parent / "context-companion"
    exe = str(here) if here.is_file() and os.access(here, os.X_OK) else shutil.which("context-companion")
    if exe:
        return f"{shlex.quote(os.path.abspath(exe))} hook --agent {agent}"
    return f"{shlex.quote(sys.executable)} -m context_companion hook --agent {agent}"


def is_ours(handler: Any) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and _OURS.search(command) is not None


def settings_path(agent: AgentHooks, workspace: Path, user: bool, home: Path) -> tuple[Path, Path]:
    """(the file, the folder it must stay in)."""
    if not user:
        return workspace / agent.project_file, workspace
    moved = os.environ.get(agent.user_dir_env) if agent.user_dir_env else None
    folder = Path(moved).expanduser() if moved else home / agent.user_dir
    return folder / agent.user_file, folder


def _problem(path: Path, what: str) -> SetupError:
    return SetupError(f"{path}: {what}; left untouched")


def parse(path: Path, data: bytes | None) -> dict[str, Any]:
    """The settings in ``data`` (None or blank: none yet). Raises :class:`SetupError`."""
    if data is None or not data.strip():
        return {}
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise _problem(path, "not UTF-8 text") from None
    except ValueError as exc:
        hint = " (comments or trailing commas would be lost by a rewrite: add the hooks by hand, see --dry-run)"
        raise _problem(path, f"not plain JSON: {exc}{hint}") from None
    if not isinstance(raw, dict):
        raise _problem(path, "not a JSON object")
    if "hooks" in raw and not isinstance(raw["hooks"], dict):
        raise _problem(path, '"hooks" is not an object')
    settings: dict[str, Any] = raw
    return settings


def merged(settings: dict[str, Any], agent: AgentHooks, command: str, path: Path) -> dict[str, Any]:
    """``settings`` with our hook in each of the agent's events (replacing an older one of ours)."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.setdefault("hooks", {})
    for event in agent.events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise _problem(path, f'"hooks.{event}" is not a list')
        placed = False
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                continue
            for i, handler in enumerate(handlers):
                if is_ours(handler):
                    if not placed:
                        handlers[i] = {**handler, "type": "command", "command": command}
                        placed = True
                    else:
                        handlers[i] = None  # a second copy of ours
            group["hooks"] = [h for h in handlers if h is not None]
        hooks[event] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [] and len(g) == 1)]
        if not placed:
            hooks[event].append({"hooks": [{"type": "command", "command": command}]})
    return out


def removed(settings: dict[str, Any], agent: AgentHooks, path: Path) -> dict[str, Any]:
    """``settings`` without our hooks (groups and events they leave empty go too)."""
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h) for h in handlers):
                rest = [h for h in handlers if not is_ours(h)]
                if not rest:
                    continue
                group = {**group, "hooks": rest}
            kept_groups.append(group)
        if kept_groups != groups:
            if kept_groups:
                hooks[event] = kept_groups
            else:
                del hooks[event]
    if not hooks and settings.get("hooks"):
        del out["hooks"]
    return out


def render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _read(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise _problem(path, "a folder, not a file") from None
    except OSError as exc:
        raise SetupError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_SETTINGS_BYTES:
        raise _problem(path, f"larger than {MAX_SETTINGS_BYTES // (1024 * 1024)} MiB")
    return data


def run(args: argparse.Namespace, home: Path | None = None) -> int:
    agent = AGENT_HOOKS[args.agent]
    home = home if home is not None else Path.home()
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if not args.user and not base.is_dir():
        raise SetupError(f"--workspace {args.workspace}: not a directory")
    workspace = base.resolve()
    path, root = settings_path(agent, workspace, args.user, home)
    root_real = os.path.realpath(root)
    target = resolve_for_write(path, [root_real])  # refuses a symlink out of the folder: nothing read yet
    command = hook_command(agent.id)
    before = _read(target)
    try:
        current = parse(path, before)
    except SetupError:
        if args.dry_run and not args.remove:
            sys.stdout.write(f"# {path} cannot be merged automatically; add by hand:\n")
            sys.stdout.write(render(merged({}, agent, command, path)))
        raise
    after = removed(current, agent, path) if args.remove else merged(current, agent, command, path)
    events = ", ".join(agent.events)
    if after == current:
        what = "no Context Companion hooks in" if args.remove else f"already set up ({events}) in"
        sys.stdout.write(f"{agent.name}: {what} {path}; nothing changed\n")
        return 0
    new_text = render(after) if after else ""
    if args.dry_run:
        old_text = (before or b"").decode("utf-8")
        diff = difflib.unified_diff(
            old_text.splitlines(keepends=True), new_text.splitlines(keepends=True), str(path), f"{path} (after setup)"
        )
        sys.stdout.writelines(diff)
    else:
        make_folder(target.parent, path)
        with open_directory(target.parent, path, lock=True) as dir_fd:
            old = stat_in(dir_fd, target.name, path)
            if (read_in(dir_fd, target.name, path) if old is not None else None) != before:
                raise SetupError(f"{path}: changed while setup was reading it; run it again")
            replace_in(dir_fd, target.name, new_text.encode("utf-8"), old, path)
    verb = (
        ("would remove" if args.dry_run else "removed") if args.remove else ("would add" if args.dry_run else "added")
    )
    where = "from" if args.remove else "to"
    sys.stdout.write(f"{agent.name}: {verb} the hooks {events} {where} {path} (command: {command})\n")
    if agent.id == "codex" and not args.remove:
        sys.stdout.write(CODEX_REVIEW + "\n")
    return 0
