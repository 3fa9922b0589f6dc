"""``context-companion setup --agent AGENT`` for an agent that loads plugin files instead of running command
hooks: write (or remove) the one plugin file of ours its module describes (``setup_file()``, a
:class:`~..agents.model.PluginFile`: where it goes, project and user, its marker and its text for the hook command).

The file is ours when its first line is the agent's marker: setup replaces such a file with today's text,
``--remove`` deletes it (and the folders setup created for it, when empty); any other file at that path is the
user's and is refused, untouched, with exit status 2. Writes are atomic, only inside the project or the agent's
config folder (:mod:`..fileio`).
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..fileio import resolve_for_write
from .files import (
    SetupError,
    commit,
    drop_record,
    empty_folders,
    hook_command,
    portability_note,
    read_record,
    read_settings,
)

if TYPE_CHECKING:
    import argparse

    from ..agents.model import PluginFile


def plugin_where(plugin: PluginFile, workspace: Path, user: bool, home: Path) -> tuple[Path, Path]:
    """:meth:`~..agents.model.PluginFile.where`, its refusal (a folder variable that is not absolute) a
    :class:`SetupError`."""
    try:
        return plugin.where(workspace, user, home)
    except ValueError as exc:
        raise SetupError(str(exc)) from None


def run(plugin: PluginFile, args: argparse.Namespace, home: Path) -> int:
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if not args.user and not base.is_dir():
        raise SetupError(f"--workspace {args.workspace}: not a directory")
    path, root = plugin_where(plugin, base.resolve(), args.user, home)
    root_real = os.path.realpath(root)
    target = resolve_for_write(path, [root_real])
    command, portable = hook_command(plugin.id, shared=not args.user)
    before = read_settings(target, path)
    if before is not None and not plugin.is_ours(before):
        raise SetupError(
            f"{path}: a file that Context Companion did not write (its first line is not our marker); left untouched"
        )
    record = read_record(target)
    old_lines = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    if args.remove:
        if before is None:
            drop_record(target)
            sys.stdout.write(f"{plugin.name}: no Context Companion plugin at {path}; nothing changed\n")
            return 0
        if args.dry_run:
            sys.stdout.writelines(difflib.unified_diff(old_lines, [], str(path), "/dev/null"))
            sys.stdout.write(f"{plugin.name}: would delete the plugin {path}\n")
            return 0
        folders = commit(path, target, root_real, before, None, record, True, True)
        drop_record(target)
        gone = f" and {empty_folders(folders)}" if folders else ""
        sys.stdout.write(f"{plugin.name}: deleted the plugin {path}{gone}\n")
        return 0
    text = plugin.text(command)
    data = text.encode("utf-8")
    if before == data:
        sys.stdout.write(f"{plugin.name}: already set up in {path}; nothing changed\n")
        portability_note(plugin.id, path, command, portable, args.user, shared=True)
        return 0
    if args.dry_run:
        shown = f"{path} (after setup)"
        sys.stdout.writelines(difflib.unified_diff(old_lines, text.splitlines(keepends=True), str(path), shown))
    else:
        commit(path, target, root_real, before, data, record, before is not None, False)
    verb = (
        ("would update" if args.dry_run else "updated")
        if before is not None
        else ("would add" if args.dry_run else "added")
    )
    sys.stdout.write(f"{plugin.name}: {verb} the plugin {path}: {plugin.does.format(command=command)}\n")
    portability_note(plugin.id, path, command, portable, args.user, shared=True)
    return 0
