"""``context-companion hook --agent AGENT``: what an agent's hook runs.

The agent runs it before every prompt (its per-prompt event, or our plugin's call) and, where the agent has it, at
``SessionStart``, with its hook input as JSON on stdin (``hook_event_name``, ``session_id``, ``cwd``, ``source``,
...; an agent whose input has another shape says how to read it: its module's ``hook_input``). It prints the
agent's hook output (its module's ``answer``: ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext":
...}}`` for most, another shape where the agent reads another one; an agent may fail a hook whose output has a key
it does not know), or nothing when nothing is new, and always exits 0 (exit 2 would block the user's prompt): on any
failure it prints nothing on stdout and one line on stderr. The agents, their short names and their modules are
:mod:`..agents.registry`'s; this path imports the registry and the one module of the agent it runs for.

An agent may run another agent's hooks too (:data:`..agents.registry.HOOK_RUNNERS`: its variable is set in their
environment; its module's ``runs_hooks_of`` tells it by the input's shape). The hook then answers as the runner's
own hook of the same session: a project set up for both agents gives it each text once (whichever hook runs first
delivers it, the other has nothing new), in its shape.

The text comes from the editor's language server for the folder (:func:`ask_servers`, over the
channel its discovery file announces: a Unix domain socket in the user's 0700 runtime folder whose
listener must be the announced process of this user (loopback TCP where there is no ``AF_UNIX``), a token
the server proves it holds before the hook reveals anything; see :mod:`..bridges.hook_channel` and docs/protocol.md,
"Agent hooks"), so the memory of the editor's open files is there; with no server it is composed from disk
(:mod:`.disk`) and per-session state is kept in a small owner-only file.

Bounds: the hook input is read until a whole JSON object has arrived (:data:`STDIN_TIMEOUT_S`), the
servers get :data:`SERVERS_BUDGET_S` in all, whatever they do (at most :data:`MAX_SERVERS` are
tried), then the memory comes from disk, where at most 500 rule files are read and the reading stops at
:data:`DISK_CPU_S` of this process's work or :data:`DISK_WALL_S` (:mod:`..memory.rule_budget`). A delivery counts only
once this hook has printed it: the server commits it when the hook acknowledges, the disk state is written after the
print.

VS Code 1.139's own agent (GitHub Copilot Chat) runs the hooks of ``.claude/settings*.json`` too (with
``chat.useClaudeHooks`` on) and the ``.github/hooks`` files: :func:`hook_runner` tells it by what it sends, and
it then gets only what VS Code's chat lacks (:func:`run`): nothing while our VS Code extension serves the folder
(its chat instructions deliver that memory), else the memory on disk VS Code does not read itself.

This path runs before every prompt: it imports only ``json``, ``os``, ``socket``, ``stat``, ``struct``,
``sys``, ``time``, ``select``, ``importlib``, the light :mod:`..procs` and :mod:`..proofs`, the registry and one
agent's module, and without an editor :mod:`.disk` and :mod:`.quiet`, unless it has to compose from disk
(``tests/lsp/test_lazy_imports.py``, ``tests/lsp/test_agent_hooks.py``).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time

from .. import proofs
from ..agents import registry
from ..procs import (
    SocketPath,
    agent_process,
    ancestors,
    is_own_process,
    peer_credentials,
    read_private_json,
    runtime_folder,
)

AGENTS = tuple(registry.HOOK_AGENTS)
ALIASES = registry.SHORT_NAMES  # the short names users type
hook_agent = registry.hook_agent


TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any

    from .disk import DiskAnswer

TRANSPORT = "agent-hook"
HELLO = "context-companion-hook"  # bridges.hook_channel.HELLO / VERSION (not imported: this path stays light)
VERSION = 2
MAX_INPUT = 8 * 1024 * 1024  # the hook input holds the prompt; only a few fields are used
MAX_ANSWER = 1024 * 1024
MAX_LINE = 4096  # the server's greeting
STDIN_TIMEOUT_S = 3.0  # for the whole hook input (agents write it at once)
SERVERS_BUDGET_S = 1.0  # for the editors' servers, all of them, whatever they do
MAX_SERVERS = 2
# Reading rule files from disk stops once this process has used DISK_CPU_S of processor time in all (its start and
# imports included: about 0.4 s) or DISK_WALL_S have passed since the hook began (the servers' second included; a
# slow disk, a machine so loaded that its own second of work takes many).
DISK_CPU_S = 1.0
DISK_WALL_S = 4.0


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
    agent = None if agent is None else hook_agent(agent)
    if agent not in AGENTS:
        raise HookFailure(f"--agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
    return agent


def _read_stdin(stream: Any, timeout: float = STDIN_TIMEOUT_S) -> Any:
    """The JSON value on ``stream``: read until it ends or a whole object has arrived (an agent may
    keep stdin open), within ``timeout`` seconds."""
    if isinstance(stream, _Parsed):
        return stream.value
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None  # not a real file (a test's BytesIO): read it whole
    if fd is None:
        data = stream.read(MAX_INPUT + 1)
        if len(data) > MAX_INPUT:
            raise HookFailure(f"the hook input is larger than {MAX_INPUT // (1024 * 1024)} MiB")
        return _parse_input(data)
    import select

    end = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while True:
        left = end - time.monotonic()
        if left <= 0:
            raise HookFailure(f"the hook input did not arrive whole within {timeout:g} s")
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):
            ready = [fd]  # cannot wait on it (Windows pipes): plain reads
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return _parse_input(b"".join(chunks))
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_INPUT:
            raise HookFailure(f"the hook input is larger than {MAX_INPUT // (1024 * 1024)} MiB")
        if chunk.rstrip().endswith(b"}"):  # perhaps the whole object: stop reading if it is
            try:
                return json.loads(b"".join(chunks))
            except ValueError:
                continue


class _Parsed:
    """A hook input already read and parsed (:func:`_read_stdin` takes it as it is)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _parse_input(data: bytes) -> Any:
    try:
        return json.loads(data or b"null")
    except ValueError as exc:
        raise HookFailure(f"the hook input on stdin is not JSON ({exc})") from None


def runner_of(agent: str, raw: dict[str, Any], environ: Any = None) -> str:
    """The agent that runs this hook of ``agent``: another agent that runs ``agent``'s hooks too (its variable is
    set and its module's ``runs_hooks_of`` recognises the input), else ``agent``."""
    environ = os.environ if environ is None else environ
    for runner, variable in registry.HOOK_RUNNERS.items():
        if runner != agent and environ.get(variable) and registry.load(runner).runs_hooks_of(agent, raw, environ):
            return runner
    return agent


def _events(module: ModuleType) -> frozenset[str]:
    """The events the hook answers for the agent: its own names and ours."""
    events: dict[str, str] = module.EVENTS
    return frozenset(events) | frozenset(events.values())


def read_input(stream: Any, agent: str = "claude-code") -> dict[str, str]:
    """The fields of the agent's hook input this command uses; ``agent`` is the agent whose hook runs
    (the runner when another agent runs this hook: :func:`runner_of`)."""
    raw = _read_stdin(stream)
    if not isinstance(raw, dict):
        raise HookFailure("the hook input on stdin is not a JSON object")
    module = registry.load(agent)
    session_key = getattr(module, "SESSION_KEY", "session_id")
    if hasattr(module, "hook_input"):
        try:
            raw = module.hook_input(raw)
        except ValueError as exc:
            raise HookFailure(str(exc)) from None
    fields = {}
    for key, name in (("hook_event_name", "event"), ("session_id", "sessionId"), ("cwd", "cwd"), ("source", "source")):
        value = raw.get(key, "")
        if not isinstance(value, str):
            shown = session_key if key == "session_id" and session_key in raw else key
            raise HookFailure(f"{shown}: expected a string in the hook input")
        fields[name] = value
    if not fields["event"]:
        raise HookFailure("hook_event_name: missing in the hook input")
    if fields["event"] in _events(module) and not fields["sessionId"]:
        raise HookFailure(f"{session_key}: missing in the hook input")
    # The real path: an agent started through a symlink still finds the editor's server (whose folders
    # are real paths), and the server judges what the agent read in the folder it is really in.
    fields["cwd"] = os.path.realpath(os.path.abspath(fields["cwd"] or os.getcwd()))
    fields["runner"] = hook_runner(raw)
    return fields


# VS Code's own agent (GitHub Copilot Chat 0.67 in VS Code 1.139.1, measured) sends a hook
# {"timestamp": "<ISO 8601>", "hook_event_name", "session_id", "transcript_path": "<workspace storage>/
# GitHub.copilot-chat/transcripts/<session>.jsonl", "prompt" | "source": "new", "model", "cwd"} and runs it from its
# extension host, whose environment names the host's entry point; a VS Code terminal's environment has that
# removed. Claude Code sends no timestamp; an agent that runs other agents' hooks sets its variable for them
# (registry.HOOK_RUNNERS).
VSCODE = "vscode"
COPILOT_CHAT_STORAGE = "github.copilot-chat"  # the extension id, as its storage folder is named (lower case)
EXTENSION_HOST_ENTRY = "vs/workbench/api/node/extensionHostProcess"
_ENTRY_VARIABLES = ("VSCODE_ESM_ENTRYPOINT", "VSCODE_AMD_ENTRYPOINT")


def hook_runner(raw: dict[str, Any], environ: Any = None) -> str:
    """Who runs this hook when it is not the agent it was set up for: ``"vscode"`` for VS Code's own agent, else
    ``""``. VS Code's input has an ISO 8601 ``timestamp`` (Claude Code's has none) and a ``transcript_path``
    in Copilot Chat's storage; without a transcript (a window with no folder) the environment tells: an
    extension host's, not another agent's that runs hooks (its variable of :data:`..agents.registry.HOOK_RUNNERS`)
    nor a terminal's (where Claude Code started in a VS Code terminal runs, with ``TERM_PROGRAM=vscode`` and other
    ``VSCODE_*`` variables)."""
    environ = os.environ if environ is None else environ
    stamp = raw.get("timestamp")
    if not isinstance(stamp, str) or len(stamp) < 11 or stamp[4] != "-" or stamp[10] != "T":
        return ""
    transcript = raw.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        parts = transcript.replace("\\", "/").lower().split("/")
        return VSCODE if COPILOT_CHAT_STORAGE in parts else ""
    if any(environ.get(variable) for variable in registry.HOOK_RUNNERS.values()):
        return ""
    return VSCODE if any(environ.get(name) == EXTENSION_HOST_ENTRY for name in _ENTRY_VARIABLES) else ""


def _extension_host(pid: int) -> bool:
    """Whether ``pid`` runs with an extension host's environment (VS Code's extension host, or a process it
    started without changing it; never a terminal's), read from ``/proc/<pid>/environ``."""
    wanted = {f"{name}={EXTENSION_HOST_ENTRY}".encode() for name in _ENTRY_VARIABLES}
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:
        return False
    return any(entry in wanted for entry in data.split(b"\0"))


def runner_has_editor(cwd: str, directory: str | None = None) -> bool:
    """Whether the editor that runs this hook serves ``cwd`` with our language server: VS Code's agent runs it
    from the extension host that also started our extension's server, so the nearest process both descend
    from has the extension host's environment (a server of another editor, even one started in a VS Code
    terminal, meets this hook only further up). Where processes cannot be read, any server of the folder
    counts (the chat may then lack what the extension would give, never get it twice)."""
    mine = ancestors(os.getpid())
    chain = set(mine)
    for server in servers(cwd, directory):
        if not mine:
            return True
        common = next((p for p in ancestors(server["pid"]) if p in chain), None)
        if common is not None and _extension_host(common):
            return True
    return False


def _contains(folder: str, path: str) -> int:
    """Depth of ``folder`` when it is ``path`` or one of its parents, else -1."""
    folder = os.path.normpath(folder)
    if path == folder or path.startswith(folder.rstrip(os.sep) + os.sep):
        return folder.count(os.sep)
    return -1


def servers(cwd: str, directory: str | None = None) -> list[dict[str, Any]]:
    """The editors' servers whose workspace folders hold ``cwd``, best first: the one that shares the
    nearest ancestor process with this hook (the editor whose terminal runs the agent), then the
    deepest folder, then the newest announcement. Only announcements of a live process of this user
    that started when the announcement says count (a file left by a killed server names a pid and a
    port that may be anyone's now)."""
    if directory is None:
        directory = runtime_folder()
        if directory is None:
            return []
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
        if raw.get("socket") is not None and not _own_socket(raw["socket"]):
            continue  # not a socket of this user's where it says (or no AF_UNIX here): not the server announced
        depth = max((_contains(f, cwd) for f in folders if isinstance(f, str)), default=-1)
        if depth < 0 or not is_own_process(pid, raw.get("startTime")):
            continue
        near = min((rank[p] for p in ancestors(pid) if p in rank), default=len(mine) + 1)
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue
        found.append(((near, -depth, -mtime), raw))
    found.sort(key=lambda item: item[0])
    return [raw for _key, raw in found]


def _own_socket(path: Any) -> bool:
    """Whether ``path`` (an announcement's ``socket``) is a Unix domain socket of this user's."""
    if not isinstance(path, str) or not os.path.isabs(path) or not hasattr(socket, "AF_UNIX"):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


class _Connection:
    """One connection to a server, every wait bounded by one deadline (a peer that stalls, or sends a
    byte now and then, costs no more than the time left). The server's Unix domain socket when it announces
    one (version 2), else its loopback port (a server without ``AF_UNIX``, or of an older version)."""

    def __init__(self, server: dict[str, Any], deadline: float) -> None:
        self.deadline = deadline
        path = server.get("socket")
        if isinstance(path, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                while True:
                    self.sock.settimeout(self._left())
                    try:
                        with SocketPath(path) as usable:  # a path longer than sun_path: through its folder
                            self.sock.connect(usable)
                        break
                    except BlockingIOError:  # the listener's backlog is full (EAGAIN): wait for room
                        time.sleep(min(0.01, self._left()))
                pid, uid = peer_credentials(self.sock)
                if (uid is not None and uid != os.getuid()) or (pid is not None and pid != server.get("pid")):
                    raise OSError("the socket's listener is not the server announced")
            except BaseException:
                self.sock.close()
                raise
        else:
            self.sock = socket.create_connection(("127.0.0.1", server["port"]), timeout=self._left())
        self._buffer = b""

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise OSError("the editor's server did not answer in time")
        return left

    def send(self, message: dict[str, Any]) -> None:
        self.sock.settimeout(self._left())
        self.sock.sendall(json.dumps(message).encode("utf-8") + b"\n")

    def receive(self, limit: int) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            if len(self._buffer) > limit:
                raise OSError("the server's answer is too long")
            self.sock.settimeout(self._left())
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("the server closed the connection")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            raise OSError("the server's answer is not JSON") from None
        if not isinstance(answer, dict):
            raise OSError("the server's answer is not a JSON object")
        return answer

    def acknowledge(self, delivery: Any) -> None:
        """Tell the server the text was printed (it commits the delivery then); best effort."""
        try:
            self.sock.settimeout(0.2)
            self.sock.sendall(json.dumps({"ack": delivery}).encode("utf-8") + b"\n")
        except OSError:
            pass  # not committed: the next prompt gets it again, nothing is lost
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Answer:
    """A server's text, to acknowledge once printed."""

    def __init__(self, text: str, connection: _Connection | None = None, delivery: Any = None) -> None:
        self.text = text
        self._connection = connection
        self._delivery = delivery

    def printed(self) -> None:
        if self._connection is not None:
            if self._delivery is not None:
                self._connection.acknowledge(self._delivery)
            else:
                self._connection.close()


def ask(server: dict[str, Any], request: dict[str, str], deadline: float) -> Answer:
    """What ``server`` answers for ``request`` before ``deadline`` (``time.monotonic()``). The server
    proves it holds the token before this hook sends anything of the user's (its own proof, the
    request). Raises ``OSError`` when it cannot be reached, does not answer in time or fails the
    proof; :class:`HookFailure` when it answers an error."""
    token = server["token"]
    connection = _Connection(server, deadline)
    try:
        mine = proofs.new_nonce()
        connection.send({"hello": HELLO, "version": VERSION, "nonce": mine})
        greeting = connection.receive(MAX_LINE)
        theirs = greeting.get("nonce")
        if (
            not isinstance(theirs, str)
            or not proofs.valid_nonce(theirs)
            or not proofs.check(greeting.get("proof"), token, proofs.HOOK_SERVER, mine, theirs)
        ):
            if isinstance(greeting.get("error"), str):
                raise OSError(f"the editor's server refused the greeting: {greeting['error']}")
            raise OSError("the peer on the announced port does not hold the server's token")
        budget = max(int((deadline - time.monotonic()) * 1000) - 50, 0)
        connection.send(
            {
                "proof": proofs.proof(token, proofs.HOOK_CLIENT, theirs, mine),
                "budgetMs": budget,
                "request": request,
            }
        )
        answer = connection.receive(MAX_ANSWER)
    except BaseException:
        connection.close()
        raise
    if isinstance(answer.get("error"), str):
        connection.close()
        raise HookFailure(f"the editor's server: {answer['error']}")
    text = answer.get("text")
    return Answer(text if isinstance(text, str) else "", connection, answer.get("delivery"))


def ask_servers(
    request: dict[str, str], budget: float = SERVERS_BUDGET_S, problems: list[str] | None = None
) -> Answer | None:
    """The answer of the editor's server for the folder, or None when none serves it or none answers
    within ``budget`` seconds in all (at most :data:`MAX_SERVERS` are tried). An error a server
    answers (it could not answer in time, say) is added to ``problems``, and the next one is asked."""
    deadline = time.monotonic() + budget
    for server in servers(request["cwd"])[:MAX_SERVERS]:
        try:
            return ask(server, request, deadline)
        except OSError:
            continue  # gone, stalled, or not the server it claims to be: the next one, or the disk
        except HookFailure as exc:
            if problems is not None:
                problems.append(str(exc))
    return None


def _disk_budget(started: float) -> Callable[[], bool]:
    """Whether the disk path's time is up (:data:`DISK_CPU_S` of this process's own work, :data:`DISK_WALL_S` since
    ``started``, the hook's start)."""
    cpu_end = DISK_CPU_S
    wall_end = started + DISK_WALL_S

    def expired() -> bool:
        return time.process_time() >= cpu_end or time.monotonic() >= wall_end

    return expired


def _quiet_logging() -> list[str]:
    """Warnings of the composition are kept for the one stderr line, not printed each."""
    import logging

    kept: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if len(kept) < 100:
                kept.append(record.getMessage().splitlines()[0][:300] if record.getMessage() else "")

    logging.getLogger().addHandler(Keep(logging.WARNING))
    logging.captureWarnings(True)  # a library's warnings.warn too: through the handler, not on stderr
    return kept


def output(agent: str, event: str, text: str) -> dict[str, Any]:
    """The hook output ``agent`` reads (its module's ``answer``); VS Code's own agent, which runs another agent's
    hook, reads ``hookSpecificOutput``."""
    if agent in registry.HOOK_AGENTS:
        answer: dict[str, Any] = registry.load(agent).answer(event, text)
        return answer
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def run(argv: Sequence[str], stdin: Any = None, stdout: Any = None) -> int:
    """The whole command; always 0. At most one line on stderr: the failure, else the first warning."""
    started = time.monotonic()
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    warnings: list[str] = []
    problems: list[str] = []
    try:
        agent = parse_args(argv)
        if any(os.environ.get(v) for r, v in registry.HOOK_RUNNERS.items() if r != agent):
            raw = _read_stdin(stdin)
            if isinstance(raw, dict):
                agent = runner_of(agent, raw)  # another agent runs this one's hooks too: answer as its own hook
            stdin = _Parsed(raw)
        fields = read_input(stdin, agent)
        if fields["event"] not in _events(registry.load(agent)):
            return 0
        runner = fields.pop("runner", "")
        # The agent's process: a new one (an agent that starts a new process each turn) has read its own files afresh.
        request = {"agent": runner or agent, **fields, "agentProcess": agent_process()}
        answer: Answer | DiskAnswer | None
        if runner == VSCODE:
            # VS Code's own agent: our extension's chat instructions give its chat what it lacks; the editor's
            # server answers for the agent the hook was set up for, whose memory VS Code reads in part itself.
            # Its SessionStart ("source": "new") opens a chat with a new session id: nothing to forget or say.
            quiet = fields["event"] == "SessionStart" or runner_has_editor(fields["cwd"])
            answer = Answer("") if quiet else None
        else:
            answer = ask_servers(request, problems=problems)
        if answer is None:
            expired = _disk_budget(started)  # the rule files' reading stops then, whatever the tree
            from .disk import DiskFailure, compose_from_disk, quiet_answer

            answer = quiet_answer(request)  # nothing moved since this session was given everything
            if answer is None:
                warnings = _quiet_logging()
                try:
                    answer = compose_from_disk(request, expired)
                except DiskFailure as exc:
                    raise HookFailure(str(exc)) from None
        if answer.text:
            stdout.write(json.dumps(output(request["agent"], fields["event"], answer.text), ensure_ascii=False) + "\n")
            stdout.flush()
        answer.printed()
        said = problems + warnings
        if said:
            more = f" (and {len(said) - 1} more)" if len(said) > 1 else ""
            _fail_line(f"warning: {said[0]}{more}")
    except HookFailure as exc:
        _fail_line(str(exc))
    except Exception as exc:  # never a traceback, never a blocked prompt
        _fail_line(f"{type(exc).__name__}: {exc}".splitlines()[0][:500])
    return 0
