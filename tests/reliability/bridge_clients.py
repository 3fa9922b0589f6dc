"""Clients that hold a live session on each bridge of a running server, the way the agents do:
Gemini CLI and ``context-companion mcp --attach`` over MCP Streamable HTTP (an initialized session
with its listening GET stream open), Claude Code over its WebSocket (an initialized MCP session).
Synchronous, for the pipe-client tests; each is closed by the test after the server went away."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "reliability-test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class HttpSession:
    """An MCP Streamable HTTP session: initialize, initialized, then the GET stream left open."""

    def __init__(self, port: int, token: str, path: str = "/mcp") -> None:
        self.port, self.path = port, path
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        status, headers, body = self._post(INITIALIZE)
        assert status == 200, (status, body)
        self.session_id = headers["mcp-session-id"]
        assert b'"serverInfo"' in body, body
        self.headers["mcp-session-id"] = self.session_id
        self.headers["mcp-protocol-version"] = "2025-06-18"
        status, _, body = self._post(INITIALIZED)
        assert status == 202, (status, body)
        self.stream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.stream.request("GET", path, headers={**self.headers, "Accept": "text/event-stream"})
        response = self.stream.getresponse()
        assert response.status == 200, response.status
        self.events = response  # open: the server holds a listening stream for this session

    def _post(self, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("POST", self.path, body=json.dumps(message), headers=self.headers)
            response = conn.getresponse()
            headers = {k.lower(): v for k, v in response.getheaders()}
            if headers.get("content-type", "").startswith("text/event-stream"):
                body = response.readline() + response.readline() + response.readline()  # one event
            else:
                body = response.read()
            return response.status, headers, body
        finally:
            conn.close()

    def close(self) -> None:
        self.stream.close()


class ClaudeSession:
    """Claude Code's connection: a WebSocket with the token header, an initialized MCP session."""

    def __init__(self, port: int, token: str) -> None:
        self.ws: ClientConnection = connect(
            f"ws://127.0.0.1:{port}",
            additional_headers={"x-claude-code-ide-authorization": token},
            subprotocols=["mcp"],  # type: ignore[list-item]
            open_timeout=10,
        ).__enter__()  # closed by close(); a `with` block would not outlive this constructor
        self.ws.send(json.dumps(INITIALIZE))
        answer = json.loads(self.ws.recv(timeout=10))
        assert answer.get("id") == 1 and "result" in answer, answer
        self.ws.send(json.dumps(INITIALIZED))

    def close(self) -> None:
        self.ws.__exit__(None, None, None)


def read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
