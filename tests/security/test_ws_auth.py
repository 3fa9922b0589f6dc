"""Attacks on the --ws socket: a page in a browser (DNS rebinding, a foreign Origin) or a local
process without the token is refused over plain HTTP, never upgraded, and the server stays up."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from lsp_harness import ws_execute
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus


def _handshake(port: int, headers: dict[str, str], path: str = "/") -> tuple[int, bytes]:
    """A raw HTTP upgrade request (as a browser or script would send it): (status, whole reply)."""
    lines = [
        f"GET {path} HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            if b"\r\n\r\n" in data and not data.startswith(b"HTTP/1.1 101"):
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
                )
                if len(body) >= length:
                    break
            if data.startswith(b"HTTP/1.1 101") and b"\r\n\r\n" in data:
                break
    return int(data.split(b" ", 2)[1]), data


async def _session(port: int, token: str, folder, **kwargs) -> dict:
    async with connect(
        f"ws://127.0.0.1:{port}/?token={token}" if kwargs.pop("query", False) else f"ws://127.0.0.1:{port}", **kwargs
    ) as ws:
        return (await ws_execute(ws, folder, "contextCompanion.showMemory"))[1]


@pytest.fixture
def ws_server(start, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "AGENTS.md").write_text("Workspace secret: use tabs.\n")

    def run(*extra: str, env: dict[str, str] | None = None):
        server = start("--ws", "--port", "0", *extra, env=env)
        info = server.wait_discovery()
        assert info["transport"] == "ws"
        return server, info, folder

    return run


def test_handshakes_without_the_right_token_host_or_origin_are_refused(ws_server):
    server, info, _folder = ws_server()
    port, token = info["port"], info["token"]
    good = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}"}
    cases = [
        ({"Host": f"127.0.0.1:{port}"}, 401),  # no token
        ({"Host": f"127.0.0.1:{port}", "Authorization": "Bearer wrong"}, 401),
        ({"Host": f"127.0.0.1:{port}", "Authorization": f"Basic {token}"}, 401),
        # DNS rebinding: the page's own host name reaches 127.0.0.1, even with a stolen token.
        ({**good, "Host": f"attacker.example:{port}"}, 403),
        ({**good, "Host": "127.0.0.1:1"}, 403),
        ({**good, "Origin": "http://attacker.example"}, 403),
        ({**good, "Origin": "null"}, 403),
    ]
    for headers, status in cases:
        got, reply = _handshake(port, headers)
        assert got == status, (headers, reply)
        assert b"use tabs" not in reply
    assert server.proc.poll() is None
    got, reply = _handshake(port, {"Host": f"[::1]:{port}"}, path=f"/?token={token}")
    assert got == 101, reply


def test_the_editor_gets_in_with_a_bearer_token_after_refused_attempts(ws_server):
    _server, info, folder = ws_server()
    port, token = info["port"], info["token"]
    for bad in ({}, {"Authorization": "Bearer nope"}):
        with pytest.raises(InvalidStatus) as refused:
            asyncio.run(_session(port, token, folder, additional_headers=bad))
        assert refused.value.response.status_code == 401
    reply = asyncio.run(_session(port, token, folder, additional_headers={"Authorization": f"Bearer {token}"}))
    assert "use tabs" in reply["result"]["text"]


def test_a_token_in_the_query_works_for_clients_that_cannot_set_headers(ws_server):
    _server, info, folder = ws_server()
    reply = asyncio.run(_session(info["port"], info["token"], folder, query=True))
    assert "use tabs" in reply["result"]["text"]


def test_an_origin_in_server_allowed_origins_may_connect(ws_server):
    env = {"CONTEXT_COMPANION_SERVER__ALLOWED_ORIGINS": '["http://localhost:3000"]'}
    _server, info, _folder = ws_server(env=env)
    port, token = info["port"], info["token"]
    base = {"Host": f"localhost:{port}", "Authorization": f"Bearer {token}"}
    assert _handshake(port, {**base, "Origin": "http://localhost:3001"})[0] == 403
    assert _handshake(port, {**base, "Origin": "http://localhost:3000"})[0] == 101


def test_ws_no_auth_accepts_a_client_without_a_token(start, tmp_path):
    from sockets_support import free_port

    port = free_port()
    server = start("--ws", "--port", str(port), "--no-auth")
    server.wait_listening(port)
    assert server.discovery_files() == []
    reply = asyncio.run(_session(port, "", tmp_path))
    assert "result" in reply


def test_a_document_over_a_megabyte_opens_over_websocket(ws_server):
    """The WebSocket transport takes messages as large as TCP does (websockets alone stops at 1 MiB)."""
    _server, info, folder = ws_server()
    port, token = info["port"], info["token"]
    big = folder / "big.py"

    async def talk() -> dict:
        auth = {"Authorization": f"Bearer {token}"}
        async with connect(f"ws://127.0.0.1:{port}", additional_headers=auth) as ws:
            opened = {
                "textDocument": {"uri": big.as_uri(), "languageId": "python", "version": 1, "text": "x = 1\n" * 300_000}
            }
            init = {"capabilities": {}, "workspaceFolders": [{"uri": folder.as_uri(), "name": "p"}]}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened}))
            call = {"command": "contextCompanion.getTurnContext", "arguments": [{}]}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": call}))
            while True:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if reply.get("id") == 2:
                    return reply

    reply = asyncio.run(talk())
    assert str(big) in json.dumps(reply["result"])
