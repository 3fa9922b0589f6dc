"""The channel between ``context-companion hook`` and the editor's language server.

The server listens on a loopback port (a :class:`~.listener.Listener`: bound and announced at
start, served from the first connection on) and announces it in a discovery file
(``"transport": "agent-hook"``, with a per-start token, owner-only: :mod:`context_companion.discovery`).
One connection carries one request: a line of JSON ``{"token", "request": {"agent", "event",
"sessionId", "source", "cwd"}}``, answered by one line ``{"text": "..."}`` (empty when nothing is
new) or ``{"error": "one line"}``, then closed. A request is at most :data:`MAX_REQUEST` bytes
and must arrive within :data:`READ_TIMEOUT` seconds; a wrong token is refused without a word
about the state. No library beyond asyncio: nothing is loaded until a hook connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..discovery import new_token
from .listener import Listener

if TYPE_CHECKING:
    from ..workspace.companion import Companion

log = logging.getLogger(__name__)

TRANSPORT = "agent-hook"
FILE_PREFIX = "hook"  # <runtime dir>/context-companion/hook-<pid>-<port>.json
MAX_REQUEST = 64 * 1024
READ_TIMEOUT = 2.0  # seconds for the request line
ANSWER_TIMEOUT = 5.0  # seconds for the server to be ready and answer
AGENTS = ("claude-code", "gemini-cli", "codex")
_FIELDS = ("agent", "event", "sessionId", "source", "cwd")


class HookSource(Protocol):
    """What the channel needs of the server: the companion once it is ready."""

    async def ready(self) -> Companion: ...


class RequestError(Exception):
    """A request the channel answers with ``{"error": ...}``."""


def parse_request(line: bytes, token: str) -> dict[str, str]:
    """The request's fields, or :class:`RequestError` naming the field and the reason."""
    try:
        raw = json.loads(line)
    except ValueError:
        raise RequestError("the request is not a line of JSON") from None
    if not isinstance(raw, dict):
        raise RequestError("the request is not a JSON object")
    given = raw.get("token")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8")):
        raise RequestError("token: wrong or missing")
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
    return fields


class HookChannel:
    """The loopback endpoint ``context-companion hook`` asks (see the module docstring)."""

    def __init__(self, source: HookSource, token: str | None = None) -> None:
        self.source = source
        self.token = token or new_token()
        self._listener = Listener()
        self._server: asyncio.base_events.Server | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self.port = 0

    def start(self) -> int:
        """Bind and listen on 127.0.0.1; returns the port. Raises ``OSError``."""
        self.port = self._listener.bind()
        self._listener.on_first_connection(self._serve)
        return self.port

    async def _serve(self) -> None:
        sock = self._listener.take()
        if sock is None:
            return
        self._server = await asyncio.start_server(self._handle, sock=sock, limit=MAX_REQUEST)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            answer = await self._answer(reader)
            writer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
            await asyncio.wait_for(writer.drain(), READ_TIMEOUT)
        except (OSError, asyncio.TimeoutError):
            pass  # the hook went away: nothing to tell
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if task is not None:
                self._handlers.discard(task)

    async def _answer(self, reader: asyncio.StreamReader) -> dict[str, Any]:
        try:
            line = await asyncio.wait_for(reader.readuntil(b"\n"), READ_TIMEOUT)
        except asyncio.TimeoutError:
            return {"error": f"no request line within {READ_TIMEOUT:g} s"}
        except asyncio.LimitOverrunError:
            return {"error": f"the request is larger than {MAX_REQUEST // 1024} KiB"}
        except asyncio.IncompleteReadError:
            return {"error": "the request line has no end"}
        try:
            fields = parse_request(line, self.token)
        except RequestError as exc:
            return {"error": str(exc)}
        from ..workspace.hooks import HookRequest

        try:
            companion = await asyncio.wait_for(self.source.ready(), ANSWER_TIMEOUT)
            request = HookRequest(
                fields["agent"], fields["event"], fields["sessionId"], fields["source"], fields["cwd"]
            )
            delivery = companion.agent_hook(request)
        except asyncio.TimeoutError:
            return {"error": f"the editor's server was not ready within {ANSWER_TIMEOUT:g} s"}
        except Exception as exc:
            log.exception("agent hook request failed")
            return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
        return {"text": delivery.text}

    async def stop(self) -> None:
        """Stop listening and end the connections in progress (idempotent)."""
        self._listener.close()
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
