"""``context-companion hook --agent claude-code|gemini-cli|codex``: what an agent's hook runs.

The agent runs it before every prompt (``UserPromptSubmit``; Gemini CLI: ``BeforeAgent``) and at
``SessionStart``, with its hook input as JSON on stdin (``hook_event_name``, ``session_id``,
``cwd``, ``source``, ...). It prints the agent's hook output,
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``, or nothing when
nothing is new, and always exits 0 (exit 2 would block the user's prompt): on any failure it prints
nothing on stdout and one line on stderr.

The text comes from the editor's language server for the folder (:func:`ask_server`, over the
channel its discovery file announces: loopback, a token; see docs/protocol.md, "Agent hooks"), so
the memory of the editor's open files is there; with no server it is composed from disk
(:func:`compose_from_disk`) and per-session state is kept in a small owner-only file.

This path runs before every prompt: it imports only ``json``, ``os``, ``socket``, ``sys`` and
:mod:`.procs` unless it has to compose from disk (``tests/lsp/test_lazy_imports.py``).
"""

from __future__ import annotations

import json
import os
import socket
import sys

from .procs import ancestors, pid_alive, read_private_json, runtime_dir_fast

AGENTS = ("claude-code", "gemini-cli", "codex")
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "BeforeAgent"})
TRANSPORT = "agent-hook"
MAX_INPUT = 8 * 1024 * 1024  # the hook input holds the prompt; only a few fields are used
MAX_ANSWER = 1024 * 1024
TIMEOUT_S = 3.0  # connecting to and hearing from the editor's server
STATE_FILE = "hook-sessions.json"


class HookFailure(Exception):
    """One line for stderr; the hook still exits 0."""


def _fail_line(message: str) -> None:
    sys.stderr.write(f"context-companion hook: {message}\n")


def parse_args(argv: Sequence[str]) -> str:
    """The agent of ``--agent AGENT`` / ``--agent=AGENT`` (the only argument)."""
    args = list(argv)
    agent = None
    while args:
        arg = args.pop(0)
        if arg == "--agent" and args:
            agent = args.pop(0)
        elif arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        else:
            raise HookFailure(f"unexpected argument {arg!r}; usage: context-companion hook --agent {'|'.join(AGENTS)}")
    if agent not in AGENTS:
        raise HookFailure(f"--agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
    return agent


def read_input(stream: Any) -> dict[str, str]:
    """The fields of the agent's hook input this command uses."""
    data = stream.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise HookFailure(f"the hook input is larger than {MAX_INPUT // (1024 * 1024)} MiB")
    try:
        raw = json.loads(data or b"null")
    except ValueError as exc:
        raise HookFailure(f"the hook input on stdin is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise HookFailure("the hook input on stdin is not a JSON object")
    fields = {}
    for key, name in (("hook_event_name", "event"), ("session_id", "sessionId"), ("cwd", "cwd"), ("source", "source")):
        value = raw.get(key, "")
        if not isinstance(value, str):
            raise HookFailure(f"{key}: expected a string in the hook input")
        fields[name] = value
    if not fields["event"]:
        raise HookFailure("hook_event_name: missing in the hook input")
    if fields["event"] in EVENTS and not fields["sessionId"]:
        raise HookFailure("session_id: missing in the hook input")
    fields["cwd"] = os.path.abspath(fields["cwd"] or os.getcwd())
    return fields


def _contains(folder: str, path: str) -> int:
    """Depth of ``folder`` when it is ``path`` or one of its parents, else -1."""
    folder = os.path.normpath(folder)
    if path == folder or path.startswith(folder.rstrip(os.sep) + os.sep):
        return folder.count(os.sep)
    return -1


def servers(cwd: str, directory: str | None = None) -> list[dict[str, Any]]:
    """The live editors' servers whose workspace folders hold ``cwd``, best first: the one that
    shares the nearest ancestor process with this hook (the editor whose terminal runs the agent),
    then the deepest folder, then the newest announcement."""
    if directory is None:
        directory = runtime_dir_fast()
        if directory is None:
            from .discovery import runtime_dir

            directory = str(runtime_dir())
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    mine = ancestors(os.getpid())
    rank = {pid: i for i, pid in enumerate(mine)}
    found: list[tuple[tuple[int, int, float], dict[str, Any]]] = []
    for name in names:
        if not (name.startswith("hook-") and name.endswith(".json")):
            continue
        path = os.path.join(directory, name)
        raw = read_private_json(path)
        if not isinstance(raw, dict) or raw.get("transport") != TRANSPORT:
            continue
        pid, port, token, folders = raw.get("pid"), raw.get("port"), raw.get("token"), raw.get("workspaceFolders")
        if not (
            isinstance(pid, int) and isinstance(port, int) and isinstance(token, str) and isinstance(folders, list)
        ):
            continue
        depth = max((_contains(f, cwd) for f in folders if isinstance(f, str)), default=-1)
        if depth < 0 or not pid_alive(pid):
            continue
        near = min((rank[p] for p in ancestors(pid) if p in rank), default=len(mine) + 1)
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue
        found.append(((near, -depth, -mtime), raw))
    found.sort(key=lambda item: item[0])
    return [raw for _key, raw in found]


def ask(server: dict[str, Any], request: dict[str, str], timeout: float = TIMEOUT_S) -> str:
    """The text ``server`` answers for ``request``. Raises ``OSError`` when it cannot be reached,
    :class:`HookFailure` when it answers an error."""
    with socket.create_connection(("127.0.0.1", server["port"]), timeout=timeout) as sock:
        sock.sendall(json.dumps({"token": server["token"], "request": request}).encode("utf-8") + b"\n")
        chunks = []
        size = 0
        while size <= MAX_ANSWER:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if chunk.endswith(b"\n"):
                break
    try:
        answer = json.loads(b"".join(chunks))
    except ValueError:
        raise OSError("the server's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise OSError("the server's answer is not a JSON object")
    if isinstance(answer.get("error"), str):
        raise HookFailure(f"the editor's server: {answer['error']}")
    text = answer.get("text")
    return text if isinstance(text, str) else ""


def ask_server(request: dict[str, str]) -> str | None:
    """The editor's server's answer, or None when no server serves the folder (or none answers)."""
    for server in servers(request["cwd"]):
        try:
            return ask(server, request)
        except OSError:
            continue  # gone since it was announced: the next one, or the disk
    return None


def project_root(cwd: str) -> str:
    """The repository holding ``cwd`` (the nearest folder above with ``.git``), else ``cwd``."""
    current = cwd
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return cwd
        current = parent


def compose_from_disk(request: dict[str, str]) -> str:
    """The delivery without an editor: the project's memory on disk (root memory, rules that need
    no open file), with per-session state in ``<runtime dir>/context-companion/hook-sessions.json``."""
    import fcntl
    from pathlib import Path

    from .discovery import private_dir, runtime_dir, write_private
    from .tokens import ESTIMATE, Tokenizer
    from .workspace.companion import Companion
    from .workspace.hooks import HookRequest, HookSessions
    from .workspace.snapshot import WorkspaceSnapshot

    if not os.path.isdir(request["cwd"]):
        raise HookFailure(f"cwd: {request['cwd']} is not a directory")
    folder = Path(project_root(request["cwd"]))
    companion = Companion(WorkspaceSnapshot.resolve([folder]), tokenizer=Tokenizer(ESTIMATE))
    directory = private_dir(runtime_dir())
    path = directory / STATE_FILE
    lock_fd = os.open(directory / (STATE_FILE + ".lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(lock_fd, "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # hooks of two agents at once: one state file, updated in turn
        companion.hooks = HookSessions.from_json(read_private_json(path))
        before = json.dumps(companion.hooks.to_json()).encode("utf-8")
        delivery = companion.agent_hook(
            HookRequest(request["agent"], request["event"], request["sessionId"], request["source"], request["cwd"]),
            from_disk=True,
        )
        after = json.dumps(companion.hooks.to_json()).encode("utf-8")
        if after != before or not os.path.exists(path):  # an unchanged prompt writes nothing
            write_private(path, after)
    return delivery.text


def run(argv: Sequence[str], stdin: Any = None, stdout: Any = None) -> int:
    """The whole command; always 0."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    try:
        agent = parse_args(argv)
        fields = read_input(stdin)
        if fields["event"] not in EVENTS:
            return 0
        request = {"agent": agent, **fields}
        text = ask_server(request)
        if text is None:
            text = compose_from_disk(request)
        if text:
            output = {"hookSpecificOutput": {"hookEventName": fields["event"], "additionalContext": text}}
            stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            stdout.flush()
    except HookFailure as exc:
        _fail_line(str(exc))
    except Exception as exc:  # never a traceback, never a blocked prompt
        _fail_line(f"{type(exc).__name__}: {exc}".splitlines()[0][:500])
    return 0
