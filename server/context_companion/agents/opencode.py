"""OpenCode: what it loads itself and how it keeps it, and how our plugin reaches it.

Measured with opencode-ai 1.18.33 (https://opencode.ai/docs/rules): the first of ``AGENTS.md``, ``CLAUDE.md``,
``CONTEXT.md`` found from the working folder up to the worktree root (every copy of that name on the way),
``~/.config/opencode/AGENTS.md`` (else ``~/.claude/CLAUDE.md``), and a sub-folder's file when its read tool reads a
file there. It reads them again for every request (an edit of ``AGENTS.md`` is in the next request's system
message). No rule formats of other tools. ``one_per_folder`` approximates "the first name found on the way up" (they
differ only when folders on that way hold different names).

It has no command hooks: it loads JavaScript plugins from ``<project>/.opencode/plugins/`` and
``~/.config/opencode/plugins/`` (``$XDG_CONFIG_HOME/opencode/plugins/``). Setup writes one small file of ours
there, ``context-companion.js`` (:func:`plugin_text`): on ``chat.message`` (a user message, before it goes to the
model) it runs ``context-companion hook --agent opencode`` with the session id and folder as the other agents'
hooks send them, and adds the text the hook prints as one more part of that user message, never to the system
prompt (OpenCode's cached prefix stays byte-identical). It needs nothing but Node's ``child_process`` (Bun provides
it); a hook that fails, prints nothing, prints too much or takes longer than its time bound adds nothing. When
OpenCode compacts a session it tells the hook, which then sends the memory again on the next message. The file is
ours when its first line is :data:`MARKER` (:mod:`..setup.plugin` writes, replaces and removes it; the function that runs
the hook is every plugin's: :mod:`.plugin_script`). 1.18.33 took
300,000 characters whole; 30,000 is our own bound on what one prompt adds.
"""

from __future__ import annotations

from .registry import hook_specific_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .model import AgentRules, PluginFile

ID = "opencode"
NAME = "OpenCode"
CHECKED = "1.18.33"
EVENTS = {"UserPromptSubmit": "UserPromptSubmit", "SessionStart": "SessionStart"}  # what our plugin sends
LIMIT = 30_000
UNIT = "characters"
answer = hook_specific_output  # the hook output it reads: the common shape
GLOBAL_FILES = ((".config/opencode", "AGENTS.md"),)
GLOBAL_RANK = 30  # its global files' place among the agents' (lower first; later reads as more specific)
SOURCE_FAMILY = "opencode"

FILE_NAME = "context-companion.js"
PROJECT_FOLDER = ".opencode/plugins"
MARKER = (
    "// Context Companion's plugin for OpenCode, written by `context-companion setup --agent opencode` "
    "(`--remove` deletes it)."
)

_TEMPLATE = """__MARKER__
// Before each user message goes to the model, it runs the command below with the session's id and folder and
// adds what it prints (the project memory OpenCode does not read itself) as one more part of that message. It
// never touches the system prompt, so OpenCode's cached prefix stays the same. A command that fails, prints
// nothing or takes longer than TIMEOUT_MS adds nothing. When a session is compacted it tells the command, so
// the memory comes again with the next message. No dependencies: node:child_process, as Bun provides it.
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT__;
const MAX_OUTPUT = __MAX_OUTPUT__;
const ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
let lastTime = 0;
let sameTime = 0;

__RUNNER__
// A part id as OpenCode makes them ("prt_", 12 hex digits of time, 14 random characters): ascending, so the
// part sorts after the user's own text.
function partId() {
  const now = Date.now();
  sameTime = now === lastTime ? sameTime + 1 : 1;
  lastTime = now;
  const time = (BigInt(now) * 4096n + BigInt(sameTime)).toString(16).padStart(12, "0").slice(-12);
  let tail = "";
  for (let i = 0; i < 14; i++) tail += ID_CHARS[Math.floor(Math.random() * ID_CHARS.length)];
  return "prt_" + time + tail;
}

export const ContextCompanion = async ({ directory }) => ({
  "chat.message": async (input, output) => {
    try {
      const text = await hook({ hook_event_name: "UserPromptSubmit", session_id: input.sessionID, cwd: directory });
      if (!text) return;
      output.parts.push({
        id: partId(),
        sessionID: input.sessionID,
        messageID: output.message.id,
        type: "text",
        text,
        synthetic: true,
      });
    } catch {}
  },
  event: async ({ event }) => {
    const session = event?.type === "session.compacted" ? event.properties?.sessionID : undefined;
    if (session) hook({ hook_event_name: "SessionStart", source: "compact", session_id: session, cwd: directory });
  },
});
"""


def plugin_text(command: str) -> str:
    """The plugin file for ``command`` (setup's hook command, a shell word list)."""
    from .plugin_script import fill

    return fill(_TEMPLATE, MARKER, command)


def rules() -> AgentRules:
    from .model import AgentRules

    return AgentRules(
        ID,
        NAME,
        ("https://opencode.ai/docs/rules",),
        names=("AGENTS.md", "CLAUDE.md", "CONTEXT.md"),
        upward=True,
        one_per_folder=True,
        subfolders="when-open",
        globals=("~/.config/opencode/AGENTS.md", "~/.claude/CLAUDE.md"),
        keeps="tracked",
        checked=CHECKED,
    )


def setup_file() -> PluginFile:
    from .model import PluginFile

    return PluginFile(
        ID,
        NAME,
        f"{PROJECT_FOLDER}/{FILE_NAME}",
        "XDG_CONFIG_HOME",
        ".config",
        "opencode",
        f"plugins/{FILE_NAME}",
        MARKER,
        plugin_text,
        "it runs `{command}` before each message and adds what it prints to that message",
    )
