"""Cline CLI (npm ``cline``; its linux-x64 binary package ``@cline/cli-linux-x64``): what it loads itself, and how
the memory it does not load reaches it. Measured with 3.0.65 against a recording model stub (tests/agents/
test_cline_cli_agent.py) and read in its shipped bundle.

What it reads: the workspace root's ``AGENTS.md``, the rule files of ``.cline/rules/`` and, only when that folder
does not exist, those of ``.clinerules/`` (its older folder), ``~/.agents/AGENTS.md`` and its global rule folders
(``$CLINE_DIR/rules``, ``~/Documents/Cline/Rules``), into the system message, again before every prompt (measured:
an edit of ``AGENTS.md`` or ``.cline/rules`` is in the next prompt's system message, in its TUI too). It reads
every ``.md`` and ``.txt`` file directly in ``.cline/rules`` whole, a rule with ``paths`` too (measured: one for
``src/**`` was in the system message with no such file in sight); not ``.mdc`` files nor sub-folders. Not read:
``CLAUDE.md``, ``GEMINI.md``, a sub-folder's ``AGENTS.md``, other vendors' rule folders (``.cursor/rules``,
``.claude/rules``, …). ``cline --json "…"`` is one turn per process; its TUI (``cline``, ``cline --id SESSION`` to
resume) keeps one process for the session.

How we reach it: its hook files (``.clinerules/hooks/``, ``.cline/hooks/``, ``~/.cline/hooks/``) cannot add
context in the CLI (``TaskStart`` runs detached and its output is dropped; ``UserPromptSubmit`` never fires), so
setup writes a plugin instead: ``context-companion.js`` in ``<project>/.cline/plugins/`` or ``$CLINE_DIR/plugins/``
(default ``~/.cline/plugins/``). Cline loads the ``.js`` and ``.ts`` files of those folders (and of
``~/Documents/Cline/Plugins``) whose default export is ``{name, manifest: {capabilities: ["hooks"]}, hooks}``;
``setup(api, ctx)`` gets ``ctx.session.sessionId`` (the session's folder name, the same when the session is
resumed; ``/clear`` in the TUI starts a new session and calls ``setup`` again with its id) and
``ctx.workspaceInfo.rootPath``; ``hooks.beforeRun({snapshot})`` runs before each prompt (its
``snapshot.conversationId`` is new in every process: not a session id), and the ``appendContext`` it returns is
added as a user message ``<hook_context source="RunStart">…</hook_context>`` after the prompt, never to the system
message, every turn, and kept in the session's history until Cline compacts it (``/compact``, or near its context
limit: the older turns become a "Context summary" message in what goes to the model, while ``snapshot.messages``
keeps them all; no plugin event says so, so our plugin's ``beforeModel`` looks for the texts this process added in
``request.messages`` and, when one is gone, tells the hook ``SessionStart`` ``compact``: the next prompt gets
everything again; texts another process added (``cline --id`` is a new process) it cannot know of).
100,000 characters arrived whole; our own bound per prompt is 30,000, as for the other agents.

This module is read by the hook before every prompt: constants and functions only, stdlib imports only.
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .model import AgentRules, FormatSpec, PluginFile

ID = "cline-cli"
NAME = "Cline CLI"
CHECKED = "3.0.65"
# Our plugin calls the hook with our own event names (Cline's own hook events never reach it): SessionStart only with
# ``source: "compact"``, when the session's history lost a text it added.
EVENTS: dict[str, str] = {"UserPromptSubmit": "UserPromptSubmit", "SessionStart": "SessionStart"}
LIMIT = 30_000  # 100,000 characters arrived whole (3.0.65); 30,000 is our bound on what one prompt adds
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape

# Its project rule folder (since 3.0; ``.clinerules`` is read only without it): a rule format of its own, whose
# frontmatter keys are those of ``.clinerules`` (:mod:`..memory.rules`).
RULES_FOLDER = ".cline/rules"
RULE_KEYS = {"cline-rules": ("paths", "description")}
GLOB_KEYS = {"cline-rules": "paths"}

# The plugin file setup writes.
PLUGIN_FILE = "context-companion.js"
PLUGIN_PROJECT_FOLDER = ".cline/plugins"
HOME_ENV = "CLINE_DIR"  # moves ~/.cline (its data, rules, hooks and plugins)
HOME_FOLDER = ".cline"
MARKER = (
    "// Context Companion's plugin for Cline CLI, written by `context-companion setup --agent cline` "
    "(`--remove` deletes it)."
)
PLUGIN_DOES = "it runs `{command}` before each prompt and adds what it prints to that turn"

# __RUNNER__ is the shared function that runs the hook command (setup fills it in): ``hook(input)`` resolves to
# the text the command printed, or "" when it failed, printed nothing or too much, or took too long.
PLUGIN_TEMPLATE = """__MARKER__
// Before each prompt, Cline CLI calls beforeRun; this plugin then runs the command below with the session's id and
// folder and returns what it prints (the project memory Cline does not read itself) as appendContext, which Cline
// adds to that turn as a message of its own. The system prompt is never touched, so Cline's cached prefix stays the
// same. A command that fails, prints nothing or takes longer than TIMEOUT_MS adds nothing. When a text it added is
// no longer in what goes to the model (Cline compacted it into a summary), it tells the command, so the memory comes
// again with the next prompt.
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT__;
const MAX_OUTPUT = __MAX_OUTPUT__;
let session = "";
let folder = "";
const added = new Map(); // session id -> the texts this process added to it

__RUNNER__
export default {
  name: "context-companion",
  manifest: { capabilities: ["hooks"] },
  setup(_api, ctx) {
    // The session id stays the same when the session is resumed (a run's conversationId does not).
    if (typeof ctx?.session?.sessionId === "string") session = ctx.session.sessionId;
    if (typeof ctx?.workspaceInfo?.rootPath === "string") folder = ctx.workspaceInfo.rootPath;
  },
  hooks: {
    beforeRun: async ({ snapshot } = {}) => {
      try {
        const id = session || snapshot?.conversationId;
        if (!id) return undefined;
        const text = await hook({ hook_event_name: "UserPromptSubmit", session_id: id, cwd: folder || process.cwd() });
        if (!text) return undefined;
        added.set(id, [...(added.get(id) ?? []), text]);
        return { appendContext: text };
      } catch {
        return undefined;
      }
    },
    // The request's messages are the session's history as the model gets it: compacted, they hold a summary in
    // place of the older turns. A text this process added that is gone from them makes the next prompt's call get
    // everything again.
    beforeModel: async ({ request } = {}) => {
      try {
        const id = session;
        const given = added.get(id);
        if (!id || !given?.length || !Array.isArray(request?.messages)) return undefined;
        const sent = JSON.stringify(request.messages);
        if (given.every((text) => sent.includes(JSON.stringify(text.trim()).slice(1, -1)))) return undefined;
        added.delete(id);
        await hook({ hook_event_name: "SessionStart", source: "compact", session_id: id, cwd: folder || process.cwd() });
      } catch {}
      return undefined;
    },
  },
};
"""


def plugin_text(command: str) -> str:
    """The plugin file for ``command`` (setup's hook command, a shell word list)."""
    from .plugin_script import fill

    return fill(PLUGIN_TEMPLATE, MARKER, command)


def setup_file() -> PluginFile:
    """Where ``setup --agent cline`` writes: ``<project>/.cline/plugins/`` or the ``plugins`` folder of Cline's own
    (``$CLINE_DIR``, absolute only: Cline would take a relative one from the folder it starts in; default
    ``~/.cline``)."""
    from .model import PluginFile

    return PluginFile(
        ID,
        NAME,
        f"{PLUGIN_PROJECT_FOLDER}/{PLUGIN_FILE}",
        None,
        "",
        HOME_FOLDER,
        f"plugins/{PLUGIN_FILE}",
        MARKER,
        plugin_text,
        PLUGIN_DOES,
        user_dir_env=HOME_ENV,
    )


def formats() -> tuple[FormatSpec, ...]:
    """The rule format only it reads: ``.cline/rules`` (``.md`` and ``.txt`` files, ``paths`` as in
    ``.clinerules``)."""
    from .model import FormatSpec

    return (FormatSpec("cline-rules", "cline", RULES_FOLDER, "dir", (".md", ".txt"), anchored=True),)


def rules() -> AgentRules:
    """What it loads itself (see the module docstring), as measured with :data:`CHECKED`."""
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://docs.cline.bot/features/cline-rules/overview", "https://docs.cline.bot/cline-cli/overview"),
        names=("AGENTS.md",),
        root_only=("AGENTS.md",),
        globals=("~/.agents/AGENTS.md",),
        rules=("cline-rules",),
        fallback_rules=("cline",),
        whole_rules=("cline-rules", "cline"),
        keeps="tracked",
        checked=CHECKED,
    )
