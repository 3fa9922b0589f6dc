"""The channel between ``context-companion hook`` and the editor's language server.

The server listens (a :class:`~.listener.Listener`: bound and announced at start, served from the first
connection on) on a Unix domain socket in the user's 0700 runtime folder, ``hook-<pid>.sock`` (0600),
where the platform has them: another user cannot connect at all, so cannot crowd the channel; each
connection's peer must be this user (``SO_PEERCRED``/``LOCAL_PEERCRED``) as a second check. Where there is
no ``AF_UNIX`` (Windows), or the path would not fit ``sun_path``, a loopback port. The discovery file
announces it (``"transport": "agent-hook"``, ``"version": 2``, ``"socket"`` or ``"port"``, a per-start token
and the server's process start time, owner-only: :mod:`context_companion.discovery`). One connection
carries one exchange of lines of JSON (docs/protocol.md, "Agent hooks"):

1. hook → ``{"hello": "context-companion-hook", "version": 2, "nonce": N1}``
2. server → ``{"nonce": N2, "proof": HMAC(token, server label, N1, N2)}``: the server proves it holds
   the token before the hook reveals anything (a port left by a killed server may be anyone's now);
3. hook → ``{"proof": HMAC(token, client label, N2, N1), "budgetMs": B, "request": {"agent", "event",
   "sessionId", "source", "cwd"}}``;
4. server → ``{"text": "...", "delivery": ID}`` (``text`` empty when nothing is new) or
   ``{"error": "one line"}``; an answer the server cannot give within ``budgetMs`` is not given;
5. hook → ``{"ack": ID}`` once it has printed the text: only then is the delivery committed to the
   session's state, so a hook that gave up waiting never loses what was meant for it.

Lines are at most :data:`MAX_REQUEST` bytes and each must arrive within :data:`LINE_TIMEOUT` seconds;
at most :data:`MAX_UNPROVEN` connections may wait before step 3 (a new one closes the oldest); a wrong
proof is refused without a word about the state. No library beyond asyncio: nothing is loaded until a
hook connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import proofs
from ..agents import registry
from ..discovery import new_token
from ..procs import SocketPath, peer_credentials
from ..ratelimit import Sparse
from .listener import Listener

if TYPE_CHECKING:
    from ..workspace.companion import Companion
    from ..workspace.hooks import HookOutcome

log = logging.getLogger(__name__)

TRANSPORT = "agent-hook"
FILE_PREFIX = "hook"  # <runtime dir>/context-companion/hook-<pid>-<port>.json
HELLO = "context-companion-hook"
VERSION = 2
MAX_REQUEST = 64 * 1024
LINE_TIMEOUT = 1.0  # seconds for each line the hook sends
ANSWER_TIMEOUT = 5.0  # seconds for the server to be ready, when the hook gives no budget
MAX_BUDGET_MS = 60_000
MAX_UNPROVEN = 16  # connections that have not proved the token yet
ANNOUNCEMENT_VERSION = 2  # 1 (no "version"): "port" only; 2: "socket" (a Unix domain socket) or "port"
SOCKET_NAME = "hook-{pid}.sock"
AGENTS = tuple(registry.HOOK_AGENTS)
_FIELDS = ("agent", "event", "sessionId", "source", "cwd", "agentProcess")  # agentProcess: optional


def unix_socket_path(directory: str | os.PathLike[str] | None) -> str | None:
    """Where this server's Unix domain socket goes in ``directory``, or None to use a loopback port: no
    directory, no ``AF_UNIX`` (Windows), or a path too long for ``sun_path`` where no ``/proc/self/fd`` reaches
    it through its folder (:class:`~..procs.SocketPath`)."""
    if directory is None or not hasattr(socket, "AF_UNIX"):
        return None
    path = os.path.join(os.fspath(directory), SOCKET_NAME.format(pid=os.getpid()))
    if not SocketPath.reachable(path):
        log.info("agent hooks' channel: %s is too long for a Unix domain socket; a loopback port instead", path)
        return None
    return path


class HookSource(Protocol):
    """What the channel needs of the server: the companion once it is ready."""

    async def ready(self) -> Companion: ...


class RequestError(Exception):
    """A request the channel answers with ``{"error": ...}``."""


def _object(line: bytes, what: str) -> dict[str, Any]:
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        raise RequestError(f"the {what} is not a line of JSON") from None
    if not isinstance(raw, dict):
        raise RequestError(f"the {what} is not a JSON object")
    return raw


def parse_hello(line: bytes) -> str:
    """The hook's nonce, or :class:`RequestError`."""
    raw = _object(line, "greeting")
    if raw.get("hello") != HELLO or raw.get("version") != VERSION:
        if "token" in raw:
            raise RequestError(
                "this hook speaks an older protocol (it sends the token first): update context-companion"
            )
        raise RequestError(f'expected {{"hello": "{HELLO}", "version": {VERSION}, "nonce": ...}}')
    nonce = raw.get("nonce")
    if not proofs.valid_nonce(nonce):
        raise RequestError("nonce: expected 32 to 128 hexadecimal characters")
    assert isinstance(nonce, str)
    return nonce


def parse_request(line: bytes, token: str, hook_nonce: str, server_nonce: str) -> tuple[dict[str, str], float | None]:
    """The request's fields and its budget in seconds (None: none given), or :class:`RequestError`
    naming the field and the reason."""
    raw = _object(line, "request")
    if not proofs.check(raw.get("proof"), token, proofs.HOOK_CLIENT, server_nonce, hook_nonce):
        raise RequestError("proof: wrong or missing")
    budget = raw.get("budgetMs")
    if budget is not None and (
        not isinstance(budget, int) or isinstance(budget, bool) or not 0 <= budget <= MAX_BUDGET_MS
    ):
        raise RequestError(f"budgetMs: expected an integer from 0 to {MAX_BUDGET_MS}")
    request = raw.get("request")
    if not isinstance(request, dict):
        raise RequestError("request: expected an object")
    fields = {}
    for name in _FIELDS:
        value = request.get(name, "")
        if not isinstance(value, str) or len(value) > 4096:
            raise RequestError(f"request.{name}: expected a string of at most 4096 characters")
        fields[name] = value
    if fields["agent"] not in AGENTS:
        raise RequestError(f"request.agent: expected one of {', '.join(AGENTS)}")
    if not fields["sessionId"]:
        raise RequestError("request.sessionId: missing")
    return fields, None if budget is None else budget / 1000


class HookChannel:
    """The loopback endpoint ``context-companion hook`` asks (see the module docstring)."""

    def __init__(self, source: HookSource, token: str | None = None) -> None:
        self.source = source
        self.token = token or new_token()
        self._listener = Listener()
        self._server: asyncio.base_events.Server | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self._unproven: OrderedDict[object, asyncio.StreamWriter] = OrderedDict()  # not proved yet, oldest first
        self._refusals = Sparse(log)  # a flood of bad connections must not fill the editor's log
        self.port = 0
        self.socket_path: str | None = None

    def start(self, directory: str | os.PathLike[str] | None = None) -> int:
        """Bind and listen: on a Unix domain socket in ``directory`` (a private folder of this user's) where
        the platform has them and the path fits, else on 127.0.0.1. Returns the port (0 on a Unix domain
        socket: :attr:`socket_path` names it). Raises ``OSError``."""
        path = unix_socket_path(directory)
        if path is not None:
            self._listener.bind_unix(path)
            self.socket_path = path
        else:
            self.port = self._listener.bind()
        self._listener.on_first_connection(self._serve)
        return self.port

    def announcement(self) -> dict[str, Any]:
        """What the discovery file says of the endpoint besides the port."""
        extra: dict[str, Any] = {"version": ANNOUNCEMENT_VERSION}
        if self.socket_path is not None:
            extra["socket"] = self.socket_path
        return extra

    async def _serve(self) -> None:
        sock = self._listener.take()
        if sock is None:
            return
        if self.socket_path is not None:
            self._server = await asyncio.start_unix_server(self._handle, sock=sock, limit=MAX_REQUEST)
        else:
            self._server = await asyncio.start_server(self._handle, sock=sock, limit=MAX_REQUEST)

    def _foreign(self, writer: asyncio.StreamWriter) -> bool:
        """A peer on the Unix domain socket that is not this user (the folder's mode should have kept it out)."""
        if self.socket_path is None:
            return False
        _pid, uid = peer_credentials(writer.get_extra_info("socket"))
        return uid is not None and uid != os.getuid()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._foreign(writer):
            writer.transport.abort()
            self._refusals.warning("agent hooks' channel: refused a connection of another user")
            return
        if len(self._unproven) >= MAX_UNPROVEN:
            # The oldest waiting connection goes, not the new one: a real hook greets at once, so a crowd
            # of silent connections cannot keep it out (it would then get only the memory on disk).
            _task, oldest = self._unproven.popitem(last=False)
            oldest.transport.abort()
            self._refusals.warning(
                "agent hooks' channel: closed a connection: more than %d were waiting to prove the token",
                MAX_UNPROVEN,
            )
        task = asyncio.current_task()
        key = object()
        self._unproven[key] = writer
        if task is not None:
            self._handlers.add(task)

        def proven() -> None:
            self._unproven.pop(key, None)

        try:
            await self._exchange(reader, writer, proven)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the hook went away or stalled: nothing to tell
        finally:
            proven()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if task is not None:
                self._handlers.discard(task)

    async def _line(self, reader: asyncio.StreamReader, timeout: float = LINE_TIMEOUT) -> bytes:
        return await asyncio.wait_for(reader.readuntil(b"\n"), timeout)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
        await asyncio.wait_for(writer.drain(), LINE_TIMEOUT)

    async def _exchange(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proven: Callable[[], None]
    ) -> None:
        """One hook's exchange; ``proven()`` once it proved the token (it no longer counts as waiting)."""
        try:
            hook_nonce = parse_hello(await self._line(reader))
        except RequestError as exc:
            self._refusals.warning("agent hooks' channel: refused a connection: %s", exc)
            await self._send(writer, {"error": str(exc)})
            return
        server_nonce = proofs.new_nonce()
        mine = proofs.proof(self.token, proofs.HOOK_SERVER, hook_nonce, server_nonce)
        await self._send(writer, {"nonce": server_nonce, "proof": mine})
        try:
            fields, budget = parse_request(await self._line(reader), self.token, hook_nonce, server_nonce)
        except RequestError as exc:
            self._refusals.warning("agent hooks' channel: refused a connection: %s", exc)
            await self._send(writer, {"error": str(exc)})
            return
        proven()
        deadline = time.monotonic() + (ANSWER_TIMEOUT if budget is None else budget)
        answer, outcome, companion = await self._answer(fields, deadline)
        if outcome is None or companion is None or outcome.key is None:
            await self._send(writer, answer)  # an error, or nothing that needs the hook's word
            return
        delivery = secrets.token_hex(8)
        await self._send(writer, {**answer, "delivery": delivery})
        # Committed only when the hook says it has the text (it prints, then acknowledges).
        line = await self._line(reader, max(deadline - time.monotonic(), 0.0) + LINE_TIMEOUT)
        try:
            ack = json.loads(line)
        except ValueError:
            return
        if isinstance(ack, dict) and ack.get("ack") == delivery:
            companion.hooks.commit(outcome)

    async def _answer(
        self, fields: dict[str, str], deadline: float
    ) -> tuple[dict[str, Any], HookOutcome | None, Companion | None]:
        from ..workspace.hooks import HookRequest

        def expired() -> dict[str, Any]:
            return {"error": "the editor's server could not answer within the hook's deadline"}

        try:
            companion = await asyncio.wait_for(self.source.ready(), max(deadline - time.monotonic(), 0.0))
            if time.monotonic() >= deadline:
                return expired(), None, None
            request = HookRequest(
                fields["agent"],
                fields["event"],
                fields["sessionId"],
                fields["source"],
                fields["cwd"],
                fields["agentProcess"],
            )
            outcome = companion.hook_outcome(request)
        except asyncio.TimeoutError:
            return expired(), None, None
        except Exception as exc:
            log.exception("agent hook request failed")
            return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}, None, None
        if time.monotonic() >= deadline:
            return expired(), None, None  # the hook has given up: dropped, nothing committed
        return {"text": outcome.delivery.text}, outcome, companion

    async def stop(self) -> None:
        """Stop listening and end the connections in progress (idempotent)."""
        self._listener.close()
        if self.socket_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=1.0)
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
