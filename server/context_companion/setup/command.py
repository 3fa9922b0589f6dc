"""``context-companion setup --agent AGENT``: write the agent's hooks.

Each agent runs ``context-companion hook --agent <id>`` before every prompt (its per-prompt event) and, where the
agent has it, at ``SessionStart``, configured in its settings file: where that file is (project and user), its
events, whether it reads comments, whether teams commit it and the shape of its hooks are its module's
``setup_file()`` (a :class:`~..agents.model.SettingsHooks`; :mod:`..agents.registry` lists the modules). An agent
that loads plugin files instead gets a plugin file of ours (a :class:`~..agents.model.PluginFile`: :mod:`.plugin`).

Most agents take Claude Code's shape: ``{"hooks": {"<event>": [{"hooks": [{"type": "command",
"command": "..."}]}]}}``; others a flat list of handlers with their own fields. A hook is ours only when its command
is exactly one setup writes (:func:`is_ours`); anything else, a wrapper around ours included, is the user's and is
never touched. The file is edited in place (:mod:`..jsonc`): only the text of our entries changes, the user's
layout and comments stay; ``--remove`` takes out exactly what setup added, and a file setup created (a record in
the user's state folder says so) goes again, with the folders it made when they are empty. The file is read as its
agent reads it (comments allowed where the agent allows them) and refused, untouched with exit status 2, when that
reader would fail on it or take it another way than we would: no regular file (a FIFO, a socket), not UTF-8, a
syntax error, a comment in a plain-JSON file, a trailing comma, a key written twice, a number out of range, a lone
surrogate. Writes are atomic with the mode kept, only inside the project or the agent's config folder (symlinks
resolved).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import jsonc
from ..agents import registry
from ..agents.model import PluginFile, SettingsHooks
from ..fileio import resolve_for_write

if TYPE_CHECKING:
    import argparse

from .files import (
    PROGRAM,
    SAFE_MAIN,
    SetupError,
    commit,
    drop_record,
    empty_folders,
    hook_command,
    portability_note,
    problem,
    read_record,
    read_settings,
)

SETUP_FILES: dict[str, SettingsHooks | PluginFile] = {
    agent: registry.load(agent).setup_file() for agent in registry.HOOK_AGENTS
}
# The agents whose hooks are commands in a JSON settings file, and those that load a plugin file of ours instead.
AGENT_HOOKS: dict[str, SettingsHooks] = {k: v for k, v in SETUP_FILES.items() if isinstance(v, SettingsHooks)}
PLUGIN_AGENTS: dict[str, PluginFile] = {k: v for k, v in SETUP_FILES.items() if isinstance(v, PluginFile)}


def setup_files(agent_id: str) -> tuple[str, str, str] | None:
    """Where ``setup --agent agent_id`` writes, as users are told: (kind, the project's file relative to the
    project, the user file with its default config folder under ``~``), kind ``"hooks"`` (a settings file's
    hooks) or ``"plugin"`` (a plugin file of ours); None for an agent setup does not serve."""
    where = SETUP_FILES.get(agent_id)
    if where is None:
        return None
    return ("hooks" if isinstance(where, SettingsHooks) else "plugin", *where.shown())


_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")


def is_ours(command: Any, agent: str) -> bool:
    """True when ``command`` is exactly one that setup writes (or wrote) for ``agent``:
    ``context-companion hook --agent <id>``, the same with the program's absolute path, or an
    absolute Python with ``-c`` :data:`.files.SAFE_MAIN` (or ``-m context_companion``, which setup wrote
    before it knew that form runs the project's own ``context_companion/``); shell-quoted as setup quotes it."""
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    if len(argv) < 4 or argv[-3:] != ["hook", "--agent", agent] or shlex.join(argv) != command:
        return False
    head = argv[:-3]
    if head == [PROGRAM]:
        return True
    if len(head) == 1:
        return os.path.isabs(head[0]) and os.path.basename(head[0]) == PROGRAM
    return (
        len(head) == 3
        and head[1:] in (["-m", "context_companion"], ["-c", SAFE_MAIN])
        and os.path.isabs(head[0])
        and _PYTHON.fullmatch(os.path.basename(head[0])) is not None
    )


def settings_path(agent: SettingsHooks, workspace: Path, user: bool, home: Path) -> tuple[Path, Path]:
    """(the file, the folder it must stay in)."""
    return agent.where(workspace, user, home)


def parse(path: Path, agent: SettingsHooks, text: str) -> jsonc.Document:
    """The settings as the agent reads them, checked for the shape setup edits. Raises :class:`SetupError`."""
    try:
        doc = jsonc.parse(text, comments=agent.comments)
    except jsonc.JsoncError as exc:
        note = {
            "comment": f" ({agent.reads})",
            "trailing-comma": f" ({agent.reads})",
            "duplicate-key": " (readers disagree on which one counts: keep one)",
        }.get(exc.code, "")
        raise problem(path, f"{exc}{note}") from None
    root = doc.root
    if root.kind != "object":
        raise problem(path, "not a JSON object")
    hooks = root.get("hooks")
    if hooks is not None:
        if hooks.kind != "object":
            raise problem(path, '"hooks" is not an object')
        for event in agent.events:
            groups = hooks.get(event)
            if groups is not None and groups.kind != "array":
                raise problem(path, f'"hooks.{event}" is not a list')
    return doc


def _text(path: Path, data: bytes | None) -> str | None:
    """The file's text; None when there is none or it is blank (setup then writes it whole)."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise problem(path, f"not UTF-8 text (a bad byte at offset {exc.start})") from None
    if text.startswith("\ufeff"):
        raise problem(path, "starts with a byte order mark, which JSON readers such as JavaScript's JSON.parse reject")
    return text if text.strip() else None


Found = tuple[str, int, int]  # (event, entry, handler in the entry's group; -1 when flat)


def _handlers(agent: SettingsHooks, entry: jsonc.Node) -> list[jsonc.Node]:
    if not agent.grouped:
        return [entry]
    handlers = entry.get("hooks") if entry.kind == "object" else None
    return handlers.children if handlers is not None and handlers.kind == "array" else []


def _ours(doc: jsonc.Document, agent: SettingsHooks, events: tuple[str, ...] | None) -> list[Found]:
    """Our handlers, in file order (``events`` None: in every event)."""
    found = []
    hooks = doc.root.get("hooks")
    if hooks is None or hooks.kind != "object":
        return []
    for event, entries in zip(hooks.keys, hooks.children, strict=True):
        if (events is not None and event not in events) or entries.kind != "array":
            continue
        for g, entry in enumerate(entries.children):
            for h, handler in enumerate(_handlers(agent, entry)):
                command = handler.get(agent.command_key) if handler.kind == "object" else None
                if command is not None and is_ours(command.value, agent.id):
                    found.append((event, g, h if agent.grouped else -1))
    return found


def _handler(doc: jsonc.Document, agent: SettingsHooks, at: Found) -> jsonc.Node:
    event, g, h = at
    hooks = doc.root.get("hooks")
    assert hooks is not None
    entries = hooks.get(event)
    assert entries is not None
    return _handlers(agent, entries.children[g])[max(h, 0)]


def _take_out(doc: jsonc.Document, agent: SettingsHooks, at: Found) -> list[jsonc.Edit]:
    """Edits that take our handler out, with the group, event and ``hooks`` it leaves empty."""
    event, g, h = at
    root = doc.root
    hooks = root.get("hooks")
    assert hooks is not None
    groups = hooks.get(event)
    assert groups is not None
    handlers = groups.children[g].get("hooks") if agent.grouped else None
    if handlers is not None and len(handlers.children) > 1:
        return jsonc.remove(doc, handlers, h)
    if len(groups.children) > 1:
        return jsonc.remove(doc, groups, g)
    if len(hooks.children) > 1:
        return jsonc.remove(doc, hooks, hooks.index(event))
    return jsonc.remove(doc, root, root.index("hooks"))


def merged(path: Path, agent: SettingsHooks, text: str, command: str) -> str:
    """``text`` with our hook in each of the agent's events: an older form of ours gets the new
    command, a second copy goes, a missing one is added after the user's."""
    for event in agent.events:
        for _ in range(10_000):  # one change a pass; a pass that adds ours is the last for this event
            doc = parse(path, agent, text)
            hooks = doc.root.get("hooks")
            groups = hooks.get(event) if hooks is not None else None
            found = _ours(doc, agent, (event,))
            last = True
            if hooks is None:
                edits = jsonc.add_member(doc, doc.root, "hooks", {event: [agent.entry(command)]})
            elif groups is None:
                edits = jsonc.add_member(doc, hooks, event, [agent.entry(command)])
            elif not found:
                edits = jsonc.add_item(doc, groups, agent.entry(command))
            else:
                last = False
                edits = _update(doc, agent, found, command)
                if not edits:
                    break
            text = jsonc.apply(text, edits)
            if last:
                break
    return text


def _update(doc: jsonc.Document, agent: SettingsHooks, found: list[Found], command: str) -> list[jsonc.Edit]:
    """The next edit that leaves one handler of ours, with today's command and the fields a new
    one has (a field the user changed is theirs); none when it is so."""
    if len(found) > 1:
        return _take_out(doc, agent, found[-1])
    handler = _handler(doc, agent, found[0])
    current = handler.get(agent.command_key)
    if current is not None and current.value != command:
        return jsonc.replace(doc, current, command)
    for key, value in agent.handler_fields:
        if handler.get(key) is None:
            return jsonc.add_member(doc, handler, key, value)
    return []


def removed(path: Path, agent: SettingsHooks, text: str) -> str:
    """``text`` without our hooks (in any event), and without what they alone held."""
    for _ in range(10_000):
        doc = parse(path, agent, text)
        found = _ours(doc, agent, None)
        if not found:
            break
        text = jsonc.apply(text, _take_out(doc, agent, found[0]))
    return text


def _only_what_setup_starts_with(doc: jsonc.Document, agent: SettingsHooks) -> bool:
    """The file holds what a file setup creates holds before the hooks (``{}``), and no comment."""
    return doc.root.python() == dict(agent.file_fields) and not doc.comments


def run(args: argparse.Namespace, home: Path | None = None) -> int:
    home = home if home is not None else Path.home()
    if args.agent in PLUGIN_AGENTS:
        from .plugin import run as run_plugin

        return run_plugin(PLUGIN_AGENTS[args.agent], args, home)
    agent = AGENT_HOOKS[args.agent]
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if not args.user and not base.is_dir():
        raise SetupError(f"--workspace {args.workspace}: not a directory")
    workspace = base.resolve()
    path, root = settings_path(agent, workspace, args.user, home)
    root_real = os.path.realpath(root)
    target = resolve_for_write(path, [root_real])  # refuses a symlink out of the folder: nothing read yet
    command, portable = hook_command(agent.id, shared=agent.shared and not args.user)
    before = read_settings(target, path)
    events = ", ".join(agent.events)
    try:
        old_text = _text(path, before)
        doc = parse(path, agent, old_text) if old_text is not None else None
    except SetupError:
        if args.dry_run and not args.remove:
            sys.stdout.write(f"# {path} cannot be merged automatically; add by hand:\n")
            sys.stdout.write(jsonc.render(_fresh(agent, command), "") + "\n")
        raise
    record = read_record(target)
    had_ours = doc is not None and bool(_ours(doc, agent, None))
    delete = False
    folders: list[Path] = []
    if args.remove:
        new_text = removed(path, agent, old_text) if old_text is not None else None
        if doc is None or new_text == old_text:
            drop_record(target)
            sys.stdout.write(f"{agent.name}: no Context Companion hooks in {path}; nothing changed\n")
            return 0
        assert new_text is not None
        # A file that held nothing but ours goes, unless a record says it was there before setup.
        delete = _only_what_setup_starts_with(jsonc.parse(new_text, comments=agent.comments), agent) and (
            record is None or record.get("createdFile") is not False
        )
    else:
        start = jsonc.render(dict(agent.file_fields), "") if old_text is None else old_text
        new_text = merged(path, agent, start, command)
        if old_text is None:
            new_text += "\n"
        if new_text == old_text:
            personal = _personal(agent, workspace, args)
            sys.stdout.write(f"{agent.name}: already set up ({events}) in {path}; nothing changed{personal}\n")
            portability_note(agent.id, path, command, portable, args.user, shared=agent.shared)
            return 0
    if args.dry_run:
        old_lines = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        new_lines = [] if delete else new_text.splitlines(keepends=True)
        to = "/dev/null" if delete else f"{path} (after setup)"
        sys.stdout.writelines(difflib.unified_diff(old_lines, new_lines, str(path), to))
    else:
        data = None if delete else new_text.encode("utf-8")
        folders = commit(path, target, root_real, before, data, record, had_ours, args.remove)
        if args.remove:
            drop_record(target)
    if args.remove:
        gone = ""
        if delete:
            why = "setup had created it" if record is not None else "it held nothing but these hooks"
            gone = f"; the file {'would go' if args.dry_run else 'is deleted'} ({why})"
            if folders:
                gone += f", and so {'are' if len(folders) > 1 else 'is'} {empty_folders(folders)}"
        verb = "would remove" if args.dry_run else "removed"
        sys.stdout.write(f"{agent.name}: {verb} the hooks {events} from {path}{gone}\n")
        return 0
    if had_ours:  # an older form of ours (an absolute path, a second copy) brought to today's
        verb = "would update" if args.dry_run else "updated"
        personal = _personal(agent, workspace, args)
        sys.stdout.write(f"{agent.name}: {verb} the hooks {events} in {path} (command: {command}){personal}\n")
    else:
        verb = "would add" if args.dry_run else "added"
        personal = _personal(agent, workspace, args)
        sys.stdout.write(f"{agent.name}: {verb} the hooks {events} to {path} (command: {command}){personal}\n")
    portability_note(agent.id, path, command, portable, args.user, shared=agent.shared)
    if agent.after_setup:
        sys.stdout.write(agent.after_setup + "\n")
    return 0


def _personal(agent: SettingsHooks, workspace: Path, args: argparse.Namespace) -> str:
    """For a project file teams do not commit (Claude Code's ``settings.local.json``): the end of setup's line,
    that it is personal and what keeps it out of git (:mod:`.personal_ignore`)."""
    if agent.shared or args.user:
        return ""
    from .personal_ignore import keep_out_of_git

    done = keep_out_of_git(workspace, agent.project_file, dry_run=args.dry_run)
    return "; the file is personal (it names paths of this machine)" + (f": {done}" if done else ", not for committing")


def _fresh(agent: SettingsHooks, command: str) -> dict[str, Any]:
    return {**dict(agent.file_fields), "hooks": {event: [agent.entry(command)] for event in agent.events}}


def _set_up_here(agent_id: str, args: argparse.Namespace, home: Path) -> Path | None:
    """The file that holds ``agent_id``'s hooks (or its plugin file) of ours, if any. Raises
    :class:`SetupError` for a file that cannot be read as its agent reads it."""
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if agent_id in PLUGIN_AGENTS:
        from .plugin import plugin_where

        plugin = PLUGIN_AGENTS[agent_id]
        path, root = plugin_where(plugin, base.resolve(), args.user, home)
        data = read_settings(resolve_for_write(path, [os.path.realpath(root)]), path)
        return path if data is not None and plugin.is_ours(data) else None
    agent = AGENT_HOOKS[agent_id]
    path, root = settings_path(agent, base.resolve(), args.user, home)
    text = _text(path, read_settings(resolve_for_write(path, [os.path.realpath(root)]), path))
    return path if text is not None and _ours(parse(path, agent, text), agent, None) else None


def remove_everywhere(args: argparse.Namespace, home: Path | None = None) -> int:
    """``setup --remove`` without ``--agent``: every agent's hooks set up here go, each said in its line. Every
    file is read first, so a file that cannot be read stops the command before anything changes."""
    import copy

    home = home if home is not None else Path.home()
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if not args.user and not base.is_dir():
        raise SetupError(f"--workspace {args.workspace}: not a directory")
    ids = tuple(registry.HOOK_AGENTS)
    found = [agent_id for agent_id in ids if _set_up_here(agent_id, args, home) is not None]
    if not found:
        where = "your user settings" if args.user else str(base.resolve())
        sys.stdout.write(
            f"No agent's Context Companion hooks are set up in {where} (none of {', '.join(ids)}); nothing changed\n"
        )
        return 0
    for agent_id in found:
        one = copy.copy(args)
        one.agent = agent_id
        run(one, home)
    return 0
