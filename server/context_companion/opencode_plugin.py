"""``context-companion setup --agent opencode``: write (or remove) Context Companion's OpenCode plugin.

OpenCode has no command hooks: it loads JavaScript plugins from ``<project>/.opencode/plugins/`` and
``~/.config/opencode/plugins/`` (``$XDG_CONFIG_HOME/opencode/plugins/``). Setup writes one small file of
ours there, ``context-companion.js`` (:func:`plugin_text`): on ``chat.message`` (a user message, before it
goes to the model) it runs ``context-companion hook --agent opencode`` with the session id and folder as
the other agents' hooks send them, and adds the text the hook prints as one more part of that user message,
never to the system prompt (OpenCode's cached prefix stays byte-identical). It needs nothing but Node's
``child_process`` (Bun provides it); a hook that fails, prints nothing, prints too much or takes longer than
its time bound adds nothing. When OpenCode compacts a session it tells the hook, which then sends the
memory again on the next message.

The file is ours when its first line is :data:`MARKER`: setup replaces such a file with today's text,
``--remove`` deletes it (and the folders setup created for it, when empty); any other file at that path is
the user's and is refused, untouched, with exit status 2. Writes are atomic, only inside the project or
OpenCode's config folder (:mod:`.fileio`).
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fileio import resolve_for_write
from .setup_files import (
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

ID = "opencode"
NAME = "OpenCode"
FILE_NAME = "context-companion.js"
PROJECT_FOLDER = ".opencode/plugins"
MARKER = (
    "// Context Companion's plugin for OpenCode, written by `context-companion setup --agent opencode` "
    "(`--remove` deletes it)."
)
TIMEOUT_MS = 10_000
MAX_OUTPUT = 4 * 1024 * 1024

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


# The function every plugin of ours shares (``__RUNNER__`` in a plugin's template): ``hook(input)`` runs COMMAND with
# ``input`` as JSON on stdin in ``input.cwd`` and resolves to the ``additionalContext`` it printed, or "" when it
# failed, printed nothing or more than MAX_OUTPUT, or took longer than TIMEOUT_MS.
RUNNER = """function hook(input) {
  return new Promise((resolve) => {
    let child = null;
    let done = false;
    let size = 0;
    const chunks = [];
    const finish = (text) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(text);
    };
    const stop = () => {
      try {
        if (child) child.kill("SIGKILL");
      } catch {}
    };
    const timer = setTimeout(() => {
      stop();
      finish("");
    }, TIMEOUT_MS);
    try {
      child = spawn(COMMAND[0], COMMAND.slice(1), { cwd: input.cwd, stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      finish("");
      return;
    }
    child.on("error", () => finish(""));
    child.stdin.on("error", () => {});
    child.stdout.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_OUTPUT) {
        stop();
        finish("");
      } else {
        chunks.push(chunk);
      }
    });
    child.on("close", (code) => {
      let text = "";
      try {
        const out = Buffer.concat(chunks).toString("utf8").trim();
        const context = out && code === 0 ? JSON.parse(out)?.hookSpecificOutput?.additionalContext : undefined;
        if (typeof context === "string") text = context;
      } catch {}
      finish(text);
    });
    child.stdin.end(JSON.stringify(input));
  });
}
"""
PLUGIN_TEMPLATE = _TEMPLATE
PLUGIN_DOES = "it runs `{command}` before each message and adds what it prints to that message"


def plugin_text(command: str, template: str = _TEMPLATE, marker: str = MARKER) -> str:
    """The plugin file for ``command`` (setup's hook command, a shell word list): ``template`` (an agent's plugin,
    OpenCode's by default) with its marker, the command, the bounds and the shared :data:`RUNNER` filled in."""
    argv = shlex.split(command)
    return (
        template.replace("__RUNNER__", RUNNER)
        .replace("__MARKER__", marker)
        .replace("__COMMAND__", json.dumps(argv, ensure_ascii=False))
        .replace("__TIMEOUT__", str(TIMEOUT_MS))
        .replace("__MAX_OUTPUT__", f"{MAX_OUTPUT // (1024 * 1024)} * 1024 * 1024")
    )


def is_ours(data: bytes, marker: str = MARKER) -> bool:
    """Whether a file at the plugin's path is one setup wrote: its first line is ``marker``."""
    return data.split(b"\n", 1)[0].rstrip(b"\r") == marker.encode("utf-8")


def shown_files() -> tuple[str, str]:
    """The plugin's project file (relative to the project) and user file (default folder, under ``~``), as
    users are told where setup writes."""
    return f"{PROJECT_FOLDER}/{FILE_NAME}", f"~/.config/opencode/plugins/{FILE_NAME}"


def plugin_path(workspace: Path, user: bool, home: Path) -> tuple[Path, Path]:
    """(the plugin file, the folder it must stay in): the project's ``.opencode/plugins``, or OpenCode's
    user config folder (``$XDG_CONFIG_HOME/opencode``, default ``~/.config/opencode``)."""
    if not user:
        return workspace / PROJECT_FOLDER / FILE_NAME, workspace
    config = os.environ.get("XDG_CONFIG_HOME")
    base = Path(config) if config and os.path.isabs(config) else home / ".config"
    folder = base / "opencode"
    return folder / "plugins" / FILE_NAME, folder


def agent_plugin_path(agent: Any, workspace: Path, user: bool, home: Path) -> tuple[Path, Path]:
    """``agent.plugin_path`` (an agent that writes a plugin: OpenCode's is this module), its refusal a
    :class:`SetupError`."""
    try:
        found: tuple[Path, Path] = agent.plugin_path(workspace, user, home)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    return found


def run(args: argparse.Namespace, home: Path, agent: Any = None) -> int:
    """Write, update or remove ``agent``'s plugin: a module with ``ID``, ``NAME``, ``MARKER``, ``PLUGIN_TEMPLATE``,
    ``PLUGIN_DOES`` and ``plugin_path(workspace, user, home)`` (OpenCode's, this module, by default)."""
    agent = agent if agent is not None else sys.modules[__name__]
    name, marker = agent.NAME, agent.MARKER
    base = Path(args.workspace if args.workspace is not None else ".").expanduser()
    if not args.user and not base.is_dir():
        raise SetupError(f"--workspace {args.workspace}: not a directory")
    path, root = agent_plugin_path(agent, base.resolve(), args.user, home)
    root_real = os.path.realpath(root)
    target = resolve_for_write(path, [root_real])
    command, portable = hook_command(agent.ID, shared=not args.user)
    before = read_settings(target, path)
    if before is not None and not is_ours(before, marker):
        raise SetupError(
            f"{path}: a file that Context Companion did not write (its first line is not our marker); left untouched"
        )
    record = read_record(target)
    old_lines = (before or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    if args.remove:
        if before is None:
            drop_record(target)
            sys.stdout.write(f"{name}: no Context Companion plugin at {path}; nothing changed\n")
            return 0
        if args.dry_run:
            sys.stdout.writelines(difflib.unified_diff(old_lines, [], str(path), "/dev/null"))
            sys.stdout.write(f"{name}: would delete the plugin {path}\n")
            return 0
        folders = commit(path, target, root_real, before, None, record, True, True)
        drop_record(target)
        gone = f" and {empty_folders(folders)}" if folders else ""
        sys.stdout.write(f"{name}: deleted the plugin {path}{gone}\n")
        return 0
    text = plugin_text(command, agent.PLUGIN_TEMPLATE, marker)
    data = text.encode("utf-8")
    if before == data:
        sys.stdout.write(f"{name}: already set up in {path}; nothing changed\n")
        portability_note(agent.ID, path, command, portable, args.user, shared=True)
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
    sys.stdout.write(f"{name}: {verb} the plugin {path}: {agent.PLUGIN_DOES.format(command=command)}\n")
    portability_note(agent.ID, path, command, portable, args.user, shared=True)
    return 0
