"""A recording model stub: one small HTTP server on 127.0.0.1 that real agents are pointed at
through their own base-URL settings. It records every request (method, path, headers, body) for
the test to read and answers through per-API route modules:

- ``stub_gemini``: Gemini's ``generateContent`` / ``streamGenerateContent`` / ``countTokens``;
- ``stub_anthropic``: Anthropic's Messages API (``/v1/messages``, SSE) and ``count_tokens``;
- ``stub_openai``: OpenAI's chat completions (``/v1/chat/completions``, SSE), the Responses API
  (``/v1/responses``, SSE; what Codex CLI calls) and ``/v1/models``.

Each module has ``install(stub)``, which registers its routes. The stub is a test fixture for the
other side's real code, not a mock of ours: nothing here knows our server. Nothing leaves the
machine: it binds the loopback address only.

Run alone for a look: ``python tests/agents/model_stub.py`` prints its URL and every request.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class Recorded:
    """One request as the agent sent it."""

    seq: int
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


@dataclass
class Reply:
    """What a route answers: a status, headers and either a whole body or a stream of chunks
    (each chunk is written and flushed as it comes; the connection closes at the end)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: Iterable[bytes] | None = None


Handler = Callable[[Recorded], Reply]


def json_reply(obj: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, json.dumps(obj).encode())


def sse_reply(events: Iterable[tuple[str | None, Any]], delay: float = 0.0) -> Reply:
    """Server-sent events: ``(event name or None, data)``; data that is not a str is sent as JSON."""

    def chunks() -> Iterator[bytes]:
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            yield (head + "".join(f"data: {line}\n" for line in payload.split("\n")) + "\n").encode()
            if delay:
                time.sleep(delay)

    return Reply(200, {"content-type": "text/event-stream", "cache-control": "no-cache"}, stream=chunks())


class ModelStub:
    """Routes are tried in the order registered; the first whose method and path pattern match
    answers. An unmatched request is still recorded and gets a 404 JSON error naming it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, echo: bool = False) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._records: list[Recorded] = []
        self._cond = threading.Condition()
        self._echo = echo
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- set-up -------------------------------------------------------------------------------
    def route(self, method: str, pattern: str, handler: Handler) -> None:
        """``pattern`` is a regular expression matched in full against the path (no query)."""
        self._routes.append((method.upper(), re.compile(pattern), handler))

    def start(self) -> ModelStub:
        self._thread = threading.Thread(target=self._server.serve_forever, name="model-stub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ModelStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what was recorded --------------------------------------------------------------------
    @property
    def requests(self) -> list[Recorded]:
        with self._cond:
            return list(self._records)

    def matching(self, method: str, pattern: str) -> list[Recorded]:
        rx = re.compile(pattern)
        return [r for r in self.requests if r.method == method.upper() and rx.fullmatch(r.path)]

    def wait_for(self, predicate: Callable[[Recorded], bool], timeout: float = 60, after: int = 0) -> Recorded:
        """The first request with ``seq >= after`` for which ``predicate`` holds; waits for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for r in self._records:
                    if r.seq >= after and predicate(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = ", ".join(f"{r.method} {r.path}" for r in self._records[-10:]) or "none"
                    raise TimeoutError(f"no matching request within {timeout:g}s (last seen: {seen})")
                self._cond.wait(left)

    @property
    def next_seq(self) -> int:
        """The sequence number the next request will get: pass it as ``after`` to wait for new ones."""
        with self._cond:
            return len(self._records)

    # -- the HTTP side ------------------------------------------------------------------------
    def _record(self, method: str, target: str, headers: dict[str, str], body: bytes) -> Recorded:
        parts = urlsplit(target)
        with self._cond:
            rec = Recorded(len(self._records), method, parts.path, parse_qs(parts.query), headers, body, time.time())
            self._records.append(rec)
            self._cond.notify_all()
        if self._echo:
            print(f"[stub] {method} {target} {len(body)} bytes", file=sys.stderr, flush=True)
        return rec

    def _dispatch(self, rec: Recorded) -> Reply:
        for method, rx, handler in self._routes:
            if method == rec.method and rx.fullmatch(rec.path):
                return handler(rec)
        print(f"[stub] no route for {rec.method} {rec.path}", file=sys.stderr, flush=True)
        return json_reply({"error": {"code": 404, "message": f"model stub: no route for {rec.method} {rec.path}"}}, 404)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads records
                pass

            def _body(self) -> bytes:
                if self.headers.get("transfer-encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        out += self.rfile.read(size)
                        self.rfile.readline()
                        if len(out) > MAX_BODY:
                            raise ValueError("body too large")
                    raw = bytes(out)
                else:
                    length = int(self.headers.get("content-length") or 0)
                    if length > MAX_BODY:
                        raise ValueError("body too large")
                    raw = self.rfile.read(length) if length else b""
                enc = self.headers.get("content-encoding", "").lower()
                if enc == "gzip":
                    raw = gzip.decompress(raw)
                elif enc == "deflate":
                    raw = zlib.decompress(raw)
                return raw

            def _serve(self) -> None:
                try:
                    body = self._body()
                except ValueError as exc:
                    self.send_error(413, str(exc))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                rec = stub._record(self.command, self.path, headers, body)
                try:
                    reply = stub._dispatch(rec)
                except Exception as exc:  # a broken route must show in the test's output, not hang it
                    print(f"[stub] route for {rec.path} failed: {exc!r}", file=sys.stderr, flush=True)
                    reply = json_reply({"error": {"code": 500, "message": f"model stub route failed: {exc}"}}, 500)
                self.send_response(reply.status)
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                if reply.stream is None:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header("connection", "close")
                self.close_connection = True
                self.end_headers()
                for chunk in reply.stream:
                    self.wfile.write(chunk)
                    self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

        return _Handler


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes two recorded request parts share (the identical, cacheable prefix)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    import importlib

    stub = ModelStub(echo=True)
    for name in ("stub_gemini", "stub_anthropic", "stub_openai"):
        try:
            importlib.import_module(name).install(stub)
        except ModuleNotFoundError:
            pass
    stub.start()
    print(stub.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        stub.stop()


if __name__ == "__main__":
    main()
