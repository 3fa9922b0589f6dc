"""Kilo CLI (``@kilocode/cli``, an OpenCode fork): what it loads itself, how it keeps it, and how our plugin reaches
it. Measured with the linux-x64 binary package 7.7.9 (``tests/agents/test_kilo_cli_agent.py``) and read in the code it
ships:

- Memory: the first of ``$KILO_CONFIG_DIR/AGENTS.md``, ``~/.config/kilo/AGENTS.md`` and ``~/.claude/CLAUDE.md``;
  then the first name of ``AGENTS.md``, ``CLAUDE.md``, ``CONTEXT.md`` found from the working folder up to the
  worktree root (every copy of that name on the way): a project with a root ``AGENTS.md`` never has its
  ``CLAUDE.md`` read. A sub-folder's file only when its read tool reads a file there (OpenCode's code).
  ``one_per_folder`` approximates "the first name found on the way up", as for OpenCode.
- Its own rules, as config instructions: ``.kilo/rules/*.md``, then ``.kilocode/rules/*.md`` whose name is not
  in ``.kilo/rules/`` (the older folder's file of the same name is left out), ``.kilocoderules``, the per-mode
  ``.kilo/rules-<mode>/``, ``.kilocode/rules-<mode>/`` and ``.kilocoderules-<mode>``, all at the working folder;
  ``~/.kilo/rules`` and ``~/.kilocode/rules`` globally. Whole files, no frontmatter. No rules of other tools.
- Each ``kilo run`` (``kilo run -c`` continues the session) is a new process that reads all of it again for
  every request, into the system message: an edit is in its own next request (``keeps`` "tracked").

How we reach it: no command hooks; it loads JavaScript plugins from ``.kilo/plugins/`` (and ``.kilocode/plugins/``)
of every folder from the working folder up to the worktree, ``~/.config/kilo/plugins/`` (``$XDG_CONFIG_HOME``;
``$KILO_CONFIG_DIR`` adds a folder and is then its config folder) and ``~/.kilo/plugins/``. ``setup --agent kilo``
writes OpenCode's plugin of ours there (:mod:`.opencode`'s template with this agent's name and marker; the same
events: ``chat.message`` adds a part to the user's message, which needs ``id``, ``sessionID`` and ``messageID``;
``session.compacted``), running ``context-companion hook --agent kilo-cli``; the text is never put in the system
part. A plugin part of 100,000 characters arrived whole; 30,000 is our own bound on what one prompt adds.
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .model import AgentRules, FormatSpec, PluginFile

ID = "kilo-cli"
NAME = "Kilo CLI"
CHECKED = "7.7.9"
# Our plugin calls the hook with the common event names (chat.message → UserPromptSubmit, session.compacted →
# SessionStart with source "compact").
EVENTS = {"UserPromptSubmit": "UserPromptSubmit", "SessionStart": "SessionStart"}
LIMIT = 30_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".config/kilo", "AGENTS.md"),)
GLOBAL_RANK = 35  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "kilo"  # its own rule files and global AGENTS.md
HOME_RULE_DIRS = ((".kilo/rules", "kilo"), (".kilocode/rules", "kilocode"))  # user-level rule directories

FILE_NAME = "context-companion.js"
PROJECT_FOLDER = ".kilo/plugins"
MARKER = (
    "// Context Companion's plugin for Kilo CLI, written by `context-companion setup --agent kilo` "
    "(`--remove` deletes it)."
)


def plugin_text(command: str) -> str:
    """The plugin file for ``command`` (setup's hook command, a shell word list): OpenCode's, which Kilo CLI runs
    as it is, saying Kilo CLI where it names its agent, under this agent's marker."""
    from . import opencode
    from .plugin_script import fill

    return fill(opencode._TEMPLATE.replace(opencode.NAME, NAME), MARKER, command)


def rules() -> AgentRules:
    """What it loads itself (see the module's docstring)."""
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://kilo.ai/docs/customize/custom-rules", "https://kilo.ai/docs/agent-behavior/agents-md"),
        names=("AGENTS.md", "CLAUDE.md", "CONTEXT.md"),
        upward=True,
        one_per_folder=True,
        subfolders="when-open",
        globals=("~/.config/kilo/AGENTS.md", "~/.claude/CLAUDE.md"),
        # A .kilocode/rules file whose name is also in .kilo/rules is not read by it, yet counted as read here:
        # such a file is never delivered to it.
        rules=("kilo", "kilocode", "kilo-legacy"),
        keeps="tracked",
        checked=CHECKED,
    )


def formats() -> tuple[FormatSpec, ...]:
    """Its own rule formats: the ``*.md`` files of ``.kilo/rules`` and ``.kilocode/rules`` (not their sub-folders)
    and ``.kilocoderules``, at the working folder, each read whole."""
    from .model import FormatSpec

    return (
        FormatSpec("kilo", SOURCE_FAMILY, ".kilo/rules", "dir", frontmatter=False),
        FormatSpec("kilocode", SOURCE_FAMILY, ".kilocode/rules", "dir", frontmatter=False),
        FormatSpec("kilo-legacy", SOURCE_FAMILY, ".kilocoderules", "file", frontmatter=False),
    )


def setup_file() -> PluginFile:
    """Where ``setup --agent kilo`` writes: the project's ``.kilo/plugins/`` or its config folder's ``plugins/``
    (``$KILO_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/kilo``, default ``~/.config/kilo``)."""
    from .model import PluginFile

    return PluginFile(
        ID,
        NAME,
        f"{PROJECT_FOLDER}/{FILE_NAME}",
        "XDG_CONFIG_HOME",
        ".config",
        "kilo",
        f"plugins/{FILE_NAME}",
        MARKER,
        plugin_text,
        "it runs `{command}` before each message and adds what it prints to that message",
        user_dir_env="KILO_CONFIG_DIR",
    )
