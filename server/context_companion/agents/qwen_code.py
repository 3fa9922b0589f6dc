"""Qwen Code: what it loads itself and how it keeps it, and how its hooks reach it.

Measured with @qwen-code/qwen-code 0.24.4 (its bundled docs: features/memory.md): ``QWEN.md`` and ``AGENTS.md``
(or the names of ``context.fileName`` in ``.qwen/settings.json`` or ``~/.qwen/settings.json``) from the working
folder up to the repository root, ``~/.qwen/QWEN.md`` and ``~/.qwen/AGENTS.md``, and ``.qwen/QWEN.local.md`` at the
root, with ``@`` imports expanded, in the system message; read at start (a Gemini CLI fork: the session keeps them).
Not read: sub-folder memory below the working folder, ``CLAUDE.md``, ``GEMINI.md``. Its own rules (read in its
shipped code, memory/rulesLoader): ``.qwen/rules/**/*.md`` at the repository root and ``~/.qwen/rules``, those
without ``paths`` (picomatch from the project root; none: always) in the system message at start, those with
``paths`` when its tools touch a matching file. ``qwen -p`` starts a new process each turn.

Its settings are Gemini CLI's (:mod:`.gemini_settings` reads them with the data below): comments allowed, a
trailing comma makes 0.24 ignore the whole file, ``$VAR`` and ``${VAR}`` expanded (its core envVarResolver keeps
a few of its own tokens as written). Folder trust: with ``security.folderTrust.enabled`` (0.24: off unless the
user settings turn it on) a folder ``~/.qwen/trustedFolders.json`` does not trust (the deepest matching rule; a
tie: untrusted) is loaded with its global files only.

Its hooks: ``SessionStart`` and ``UserPromptSubmit`` in ``<project>/.qwen/settings.json`` (loaded only in a
trusted folder) or ``$QWEN_HOME/settings.json`` (default ``~/.qwen``), Claude Code's shape; the text arrives as a
part ``<qwen:user-prompt-submit-context>…</qwen:user-prompt-submit-context>`` after the prompt. 0.24.4 took
300,000 characters whole; 30,000 is our own bound on what one prompt adds.
"""

from __future__ import annotations

import os

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .model import AgentRules, FormatSpec, SettingsHooks

ID = "qwen-code"
NAME = "Qwen Code"
CHECKED = "0.24.4"
EVENTS = {"SessionStart": "SessionStart", "UserPromptSubmit": "UserPromptSubmit"}
LIMIT = 30_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".qwen", "QWEN.md"), (".qwen", "AGENTS.md"))
GLOBAL_RANK = 20  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "qwen"
MEMORY_FILE_NAMES = ("QWEN.md",)
HOME_RULE_DIRS = ((".qwen/rules", "qwen"),)  # user-level rule directories under home, with their format
# The frontmatter keys of its rule format, and the one that holds its globs (:mod:`..memory.rules`).
RULE_KEYS = {"qwen": ("paths", "description")}
GLOB_KEYS = {"qwen": "paths"}

# What :mod:`.gemini_settings` reads (see the module docstring).
SETTINGS_FILE = os.path.join(".qwen", "settings.json")
DEFAULT_FILE_NAMES = ("QWEN.md", "AGENTS.md")
ON_BAD_SETTINGS = "ignores the whole file"
TRUST_FILE = os.path.join(".qwen", "trustedFolders.json")
TRUST_FILE_ENV = "QWEN_CODE_TRUSTED_FOLDERS_PATH"
TRUST_DEFAULT_ON = False
TRUST_DEEPEST_WINS = True
_KEPT = frozenset({"SESSION_ID", "QWEN_CODE_SESSION_ID", "QWEN_SERVER_TOKEN", "QWEN_DAEMON_TOKEN"})
_KEPT_PREFIX = "QWEN_CODE_EXTERNAL_TOOL_GUARD_TOKEN"


def expand_vars(value: str, environ: Mapping[str, str]) -> str:
    """``value`` with ``$VAR`` and ``${VAR}`` replaced as 0.24's core envVarResolver does (its own tokens and a
    variable that is not set stay as written)."""
    import re

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name.upper() in _KEPT or name.upper() == _KEPT_PREFIX:
            return m.group(0)
        return environ.get(name, m.group(0))

    return re.sub(r"\$(?:(\w+)|\{([^}]+)\})", one, value)


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://github.com/QwenLM/qwen-code (docs/users/features/memory.md, bundled with the package)",),
        names=("QWEN.md", "AGENTS.md"),
        upward=True,
        globals=("~/.qwen/QWEN.md", "~/.qwen/AGENTS.md"),
        rules=("qwen", "qwen-local"),
        above_root=True,  # measured: the folder just above the repository root too (its walk stops past the root)
        above_root_depth=1,
        expands_imports=True,
        keeps="start",
        checked=CHECKED,
    )


def formats() -> tuple[FormatSpec, ...]:
    """Its rule formats, read only by it: ``.qwen/rules/**/*.md`` with ``paths``, and ``.qwen/QWEN.local.md``."""
    from .model import FormatSpec

    return (
        FormatSpec("qwen", "qwen", ".qwen/rules", "dir", recursive=True, anchored=True),
        FormatSpec("qwen-local", "qwen", ".qwen/QWEN.local.md", "file", frontmatter=False),
    )


def setup_file() -> SettingsHooks:
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        ("SessionStart", "UserPromptSubmit"),
        ".qwen/settings.json",
        "QWEN_HOME",
        ".qwen",
        "settings.json",
        comments=True,
        shared=True,
        reads="Qwen Code 0.24 reads comments here but ignores the whole file on a trailing comma",
    )
