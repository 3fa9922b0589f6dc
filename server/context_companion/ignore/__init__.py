"""Gitignore-aware walking of a workspace folder, with git's whole chain of ignore sources.

The package holds, bottom up: :mod:`.patterns` (one ignore file: parsing, matching, loading),
:mod:`.git` (the repository and git's sources outside the tree), :mod:`.rules` (the chain in force
in a directory) and :mod:`.walk`.

One walker serves the memory index and the folder tree of the environment context, so both
agree on what is ignored. The verdict for a path is git's, without running git:

* the sources, highest precedence first: ``.gitignore`` (and ``.context-companion-ignore``, same
  syntax, read right after it) in the path's own directory, then in each directory above it up to
  the repository root, even above the workspace folder; then ``$GIT_DIR/info/exclude``; then the
  user's global excludes file (``core.excludesFile`` from git's config files, by default
  ``$XDG_CONFIG_HOME/git/ignore``). Within one file the last matching pattern wins;
* a file or directory inside an ignored directory is ignored, whatever a later negation says;
* the workspace folder itself and its ancestors are never judged: the user opened the folder, so
  it is walked even when git ignores it (as ripgrep treats a path it is given), but the patterns
  of every ancestor ignore file apply to what lies inside it;
* symlinked directories are never entered (so a symlink loop cannot trap the walk, and the
  walk never leaves the folder), and a symlinked ignore file inside the tree is not read (git
  does not follow those either);
* each ignore file contributes at most ``max_patterns`` patterns (``memory.maxIgnorePatterns``):
  the rest is dropped with a warning naming the file, so a huge file cannot stall the start;
* a walk given a :class:`WalkBudget` (the memory index: ``memory.maxWalkDirectories`` and
  ``memory.maxWalkFiles``) stops when it is spent and says which directories it left out; the walk
  is breadth first, so such a cut leaves out the deepest directories, not whole sub-trees;
* only directories are matched during the walk (to prune); callers match the few files they
  care about with :meth:`IgnoreRules.is_ignored`, which keeps the walk close to a bare
  ``os.scandir`` loop.

Patterns are compiled once per file version (cached by path and stat). Literal patterns
(``name``, ``/dir/file``, ``*.ext``) are looked up in dicts; the others are regular expressions
tried in chunks, so thousands of patterns cost little per path.
"""

from __future__ import annotations

from .git import GitRepo, find_repo, git_config_files, global_excludes_path, ignore_sources, read_core_excludes_file
from .patterns import (
    ALWAYS_PRUNED,
    DEFAULT_MAX_PATTERNS,
    IGNORE_FILE_NAMES,
    MAX_IGNORE_FILE_BYTES,
    SETTING_NAME,
    IgnoreFile,
    load_ignore_file,
)
from .rules import IgnoreRules, ignore_warnings, is_ignored_below
from .walk import DirListing, WalkBudget, walk

__all__ = [
    "ALWAYS_PRUNED",
    "DEFAULT_MAX_PATTERNS",
    "IGNORE_FILE_NAMES",
    "MAX_IGNORE_FILE_BYTES",
    "SETTING_NAME",
    "DirListing",
    "GitRepo",
    "IgnoreFile",
    "IgnoreRules",
    "WalkBudget",
    "find_repo",
    "git_config_files",
    "global_excludes_path",
    "ignore_sources",
    "ignore_warnings",
    "is_ignored_below",
    "load_ignore_file",
    "read_core_excludes_file",
    "walk",
]
