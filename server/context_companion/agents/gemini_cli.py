"""Gemini CLI: what it loads itself and how it keeps it, and how its hooks reach it.

``~/.gemini/GEMINI.md``, then ``GEMINI.md`` from the working directory up to the project root; a sub-folder's
``GEMINI.md`` just in time, when a tool touches a file there; other names with ``context.fileName``
(https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/gemini-md.md). Measured with 0.61.0: project
memory is frozen into the chat's first user turn (an edit is seen after /clear only), ``@`` imports expanded.

Its settings (``context.fileName``, folder trust: read by :mod:`.gemini_settings` with the data below):
``.gemini/settings.json`` of the project or ``~/.gemini/settings.json`` (the project's wins), comments allowed,
trailing commas not (0.61 stops at start on one), ``$VAR``, ``${VAR}`` and ``${VAR:-default}`` expanded. With
``security.folderTrust.enabled`` (0.61: on unless the user settings turn it off) a folder ``~/.gemini/
trustedFolders.json`` does not trust (the longest matching key wins) is loaded without its project settings and
memory; ``GEMINI_CLI_TRUST_WORKSPACE`` (``true``/``false``) and ``GEMINI_RESTRICTED_MODE=true`` decide first.

Its hooks: ``SessionStart`` and ``BeforeAgent`` (its per-prompt event) in ``<project>/.gemini/settings.json`` or
``~/.gemini/settings.json``, Claude Code's shape; it reads ``hookSpecificOutput.additionalContext`` as a part
after the prompt (``<`` and ``>`` escaped). 0.61.0 took 30,000 characters whole.
"""

from __future__ import annotations

import os

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .model import AgentRules, SettingsHooks

ID = "gemini-cli"
NAME = "Gemini CLI"
CHECKED = "0.61.0"
EVENTS = {"SessionStart": "SessionStart", "BeforeAgent": "UserPromptSubmit"}
LIMIT = 30_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".gemini", "GEMINI.md"),)
GLOBAL_RANK = 10  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "gemini"
MEMORY_FILE_NAMES = ("GEMINI.md",)

# What :mod:`.gemini_settings` reads: its settings file (relative to the project and to home), the names it reads
# without ``context.fileName``, what it does with a settings file it cannot parse, and its folder trust.
SETTINGS_FILE = os.path.join(".gemini", "settings.json")
DEFAULT_FILE_NAMES = ("GEMINI.md",)
ON_BAD_SETTINGS = "stops at start on it"
TRUST_FILE = os.path.join(".gemini", "trustedFolders.json")  # relative to home
TRUST_FILE_ENV = "GEMINI_CLI_TRUSTED_FOLDERS_PATH"  # the variable that moves it
TRUST_DEFAULT_ON = True  # security.folderTrust.enabled when the user settings do not say
TRUST_DEEPEST_WINS = False  # the longest matching key decides


def expand_vars(value: str, environ: Mapping[str, str]) -> str:
    """``value`` with ``$VAR``, ``${VAR}`` and ``${VAR:-default}`` replaced as 0.61's resolveEnvVarsInString does (a
    variable that is not set stays as written)."""
    import re

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or ""
        if not name:
            return m.group(0)
        if name in environ:
            return environ[name]
        return m.group(3) if m.group(3) is not None else m.group(0)

    return re.sub(r"\$(?:(\w+)|\{([^}]+?)(?::-([^}]*))?\})", one, value)


def trust_from_environment(environ: Mapping[str, str]) -> tuple[bool | None, str | None]:
    """(whether the environment decides the folder is trusted, None when it does not say; why not)."""
    if environ.get("GEMINI_RESTRICTED_MODE") == "true" or environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return False, "the environment says it is not trusted (GEMINI_RESTRICTED_MODE, GEMINI_CLI_TRUST_WORKSPACE)"
    if environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True, None
    return None, None


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/gemini-md.md",),
        names=("GEMINI.md",),
        upward=True,
        subfolders="when-open",
        globals=("~/.gemini/GEMINI.md",),
        expands_imports=True,
        keeps="start",
        checked=CHECKED,
    )


def setup_file() -> SettingsHooks:
    from .model import SettingsHooks

    return SettingsHooks(
        ID,
        NAME,
        ("SessionStart", "BeforeAgent"),
        ".gemini/settings.json",
        None,
        ".gemini",
        "settings.json",
        comments=True,
        shared=True,
        reads="Gemini CLI 0.61 reads comments here but stops at start on a trailing comma",
    )
