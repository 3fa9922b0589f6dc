"""The typed rows an agent's module builds: what it loads (:class:`AgentRules`), the rule formats it reads
(:class:`FormatSpec`), where ``setup`` writes its hooks (:class:`SettingsHooks`) or its plugin file
(:class:`PluginFile`).

Pure: stdlib only. An agent's module imports this inside the functions that build its rows, never at its module
level: the hook imports that module before every prompt, and ``dataclasses`` costs it ~6 ms.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# A rule format's name ("cursor", "claude", ...): :mod:`..memory.formats` lists every one and says where it lives
# (an agent's own formats come from its module's ``formats()``), :mod:`..memory.rules` what its frontmatter means.
# A plain string, so an agent's module brings its formats without an edit here; tests/test_layout.py checks that
# every format an agent's row names is one memory knows.
RuleFormat = str
Subfolders = Literal["never", "when-open", "always"]
Keeps = Literal["tracked", "start", ""]  # re-read on change, read once at start, not known (no hooks)


@dataclass(frozen=True, slots=True)
class AgentRules:
    """What an agent loads by itself, from its public documentation (and, for an agent with hooks, measured with
    the real executable). How it keeps what it loads (``keeps``) decides what ``context-companion hook``
    delivers: a file it reads and *tracks* (re-reads on change) is never delivered; one it reads *once at
    start* is delivered only when it changes; one it does not read, or reads only just in time (a sub-folder
    file when its own tools touch that folder), is delivered while it applies."""

    id: str
    name: str
    docs: tuple[str, ...]
    names: tuple[str, ...] = ()  # project memory file names, in the agent's order
    upward: bool = False  # also in folders above the workspace folder (up to the repository root)
    subfolders: Subfolders = "never"  # memory files in sub-folders: never, while a file there is open, always
    root_only: tuple[str, ...] = ()  # names read only in the workspace folder itself
    one_per_folder: bool = False  # the first name of ``names`` found in a folder, no other
    fallback_names: bool = False  # names added to memory.fileNames count as extra names (after ``names``)
    globals: tuple[str, ...] = ()  # global memory files ("~/..."), in order
    rules: tuple[RuleFormat, ...] = ()  # rule formats read, in order
    fallback_rules: tuple[RuleFormat, ...] = ()  # read only when none of ``rules`` exists
    first_of: tuple[str, ...] = ()  # only the first of these files in the workspace folder
    above_root: bool = False  # ``names`` also in every folder above the repository root, up to /
    above_root_depth: int = 0  # with ``above_root``: only this many folders above the root (0: up to /)
    stand_in: tuple[str, str] | None = None  # (name, instead of): read at start when no ``instead of`` is found
    expands_imports: bool = False  # inlines ``@path`` imports; otherwise the line is read as written
    expands_imports_in: tuple[str, ...] = ()  # only these memory file names' imports are expanded (empty: every file's)
    project_max_bytes: int = 0  # the project memory files together are cut at this many bytes (0: no cut)
    keeps: Keeps = ""  # how the files it loads at start stay current (see the class docstring)
    checked: str = ""  # the version its loading was checked against with the real executable
    untrusted: str = ""  # why it reads none of the project's files here (a folder it does not trust), or ""
    # Rule formats loaded only for files attached to the request (VS Code: the active file, when it has a selection).
    attached_rules: tuple[RuleFormat, ...] = ()
    # Rule formats it loads whole, every file, whatever its frontmatter says (an agent that ignores ``paths``).
    whole_rules: tuple[RuleFormat, ...] = ()


@dataclass(frozen=True, slots=True)
class FormatSpec:
    """Where one rule format's files live and which ``memory.sources`` family turns them off."""

    format: RuleFormat
    family: str  # the memory.sources entry that turns it off
    path: str  # posix, relative to the folder (or to home for ``home`` rows)
    kind: Literal["dir", "file", "either"]  # "either": a file, or a directory of rule files
    suffixes: tuple[str, ...] = (".md",)
    recursive: bool = False  # files in sub-directories of the rule directory count too
    nested: bool = False  # also found below sub-directories of the folder, scoped to that sub-directory
    frontmatter: bool = True  # plain files (.cursorrules, .rules ...) are taken whole
    anchored: bool = False  # a glob without "/" matches top-level files only (picomatch-style tools)


def _user_folder(env: str | None, default: str, home: Path, environ: Mapping[str, str]) -> Path:
    """An agent's user config folder: ``$env`` when set, else ``default`` under ``home``."""
    moved = environ.get(env) if env else None
    return Path(moved).expanduser() if moved else home / default


@dataclass(frozen=True)
class SettingsHooks:
    """An agent whose hooks are commands in a JSON settings file: where ``setup`` writes them, and their shape."""

    id: str
    name: str
    events: tuple[str, ...]  # the events setup writes our hook into, in its own names
    project_file: str  # relative to the project folder
    user_dir_env: str | None  # the variable that moves its config folder
    user_dir: str  # its default config folder, under home
    user_file: str  # the file name in that folder
    comments: bool  # the agent reads // and /* */ comments in this file
    shared: bool  # teams commit the project file (a machine's path in it would reach teammates)
    reads: str  # how the agent reads the file, said when one is refused
    # The shape of its hooks: Claude Code's (``hooks.<event>`` is a list of groups, each with a
    # ``hooks`` list of handlers) or flat (``hooks.<event>`` is the list of handlers).
    grouped: bool = True
    command_key: str = "command"  # the handler's field that holds the command
    handler_fields: tuple[tuple[str, Any], ...] = (("type", "command"),)  # the rest of a new handler
    file_fields: tuple[tuple[str, Any], ...] = ()  # what a file setup creates holds besides ``hooks``
    after_setup: str = ""  # a line setup prints once it added or updated the hooks (what the user must do next)

    def handler(self, command: str) -> dict[str, Any]:
        """A new handler: the first field (``type``), the command, then the rest."""
        fields = list(self.handler_fields)
        return dict([*fields[:1], (self.command_key, command), *fields[1:]])

    def entry(self, command: str) -> dict[str, Any]:
        """What setup adds to an event's list."""
        return {"hooks": [self.handler(command)]} if self.grouped else self.handler(command)

    def where(
        self, workspace: Path, user: bool, home: Path, environ: Mapping[str, str] | None = None
    ) -> tuple[Path, Path]:
        """(the settings file, the folder it must stay in): the project's, or the user's."""
        if not user:
            return workspace / self.project_file, workspace
        folder = _user_folder(self.user_dir_env, self.user_dir, home, os.environ if environ is None else environ)
        return folder / self.user_file, folder

    def shown(self) -> tuple[str, str]:
        """(the project's file, the user file under its default folder, ``~/...``), as users are told."""
        return self.project_file, f"~/{self.user_dir}/{self.user_file}"


@dataclass(frozen=True)
class PluginFile:
    """An agent without command hooks that loads plugin files: the one file of ours ``setup`` writes there. The
    file is ours when its first line is ``marker``; ``text(command)`` is the whole file for setup's hook command."""

    id: str
    name: str
    project_file: str  # relative to the project folder
    user_base_env: str | None  # a variable whose absolute value replaces ``user_base`` (XDG_CONFIG_HOME)
    user_base: str  # under home: where the agent's user config folder lives ("" for home itself)
    user_dir: str  # the agent's user config folder in that base (the folder the file must stay in)
    user_file: str  # relative to that folder
    marker: str
    text: Callable[[str], str]
    does: str  # what the plugin does, the end of setup's line ("it runs `{command}` before each message ...")
    # A variable naming the agent's user config folder itself (its value replaces base and folder); a relative value
    # is refused (ValueError): the folder would depend on where the agent starts.
    user_dir_env: str | None = None

    def where(
        self, workspace: Path, user: bool, home: Path, environ: Mapping[str, str] | None = None
    ) -> tuple[Path, Path]:
        """(the plugin file, the folder it must stay in): the project's, or the agent's user config folder."""
        if not user:
            return workspace / self.project_file, workspace
        env = os.environ if environ is None else environ
        moved = env.get(self.user_dir_env, "").strip() if self.user_dir_env else ""
        if moved:
            if not os.path.isabs(os.path.expanduser(moved)):
                raise ValueError(
                    f"{self.user_dir_env}={moved}: not an absolute path, so {self.name}'s folder depends on where it "
                    "starts"
                )
            folder = Path(os.path.expanduser(moved))
            return folder / self.user_file, folder
        value = env.get(self.user_base_env) if self.user_base_env else None
        base = Path(value) if value and os.path.isabs(value) else home / self.user_base
        folder = base / self.user_dir
        return folder / self.user_file, folder

    def shown(self) -> tuple[str, str]:
        """(the project's file, the user file under its default folder, ``~/...``), as users are told."""
        return self.project_file, "/".join(p for p in ("~", self.user_base, self.user_dir, self.user_file) if p)

    def is_ours(self, data: bytes) -> bool:
        """Whether a file at the plugin's path is one setup wrote: its first line is :attr:`marker`."""
        return data.split(b"\n", 1)[0].rstrip(b"\r") == self.marker.encode("utf-8")
