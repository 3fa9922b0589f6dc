"""The bridges' port (bridges/listener.py): announced at start, served from the first connection.

An agent that connects while the server library is still loading must be served, not refused; a
bridge switched off before anyone connected must leave no port open; one switched off while the
library loads must not start serving afterwards."""

from __future__ import annotations

import asyncio
import socket

from context_companion.bridges.listener import Listener


async def _echo_start(listener: Listener, started: list[int], delay: float = 0.0) -> None:
    """What a bridge does at its first connection: load (here: sleep), take the socket, serve."""
    started.append(1)
    await asyncio.sleep(delay)
    sock = listener.take()
    if sock is None:
        return

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"served:" + await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, sock=sock)
    listener.server = server  # type: ignore[attr-defined]


async def test_a_connection_made_before_the_server_loads_is_served() -> None:
    listener = Listener()
    port = listener.bind()
    started: list[int] = []
    listener.on_first_connection(lambda: _echo_start(listener, started, delay=0.3))
    await asyncio.sleep(0.05)
    assert started == [], "nothing is loaded before a connection waits"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello\n")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 5) == b"served:hello\n"
    writer.close()
    # a second client goes straight to the server; the start ran once
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"again\n")
    assert await asyncio.wait_for(reader.read(), 5) == b"served:again\n"
    writer.close()
    assert started == [1]
    listener.server.close()  # type: ignore[attr-defined]
    await listener.server.wait_closed()  # type: ignore[attr-defined]


async def assert_dropped(reader: asyncio.StreamReader) -> None:
    """The client waiting on the port is dropped (reset or end of file), not left hanging."""
    data = b""
    try:
        data = await asyncio.wait_for(reader.read(), 5)
    except ConnectionError:
        pass
    assert data == b""


def assert_port_closed(port: int) -> None:
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0, "the port still accepts connections"


async def test_closed_before_any_connection_leaves_no_port_open() -> None:
    listener = Listener()
    port = listener.bind()
    started: list[int] = []
    listener.on_first_connection(lambda: _echo_start(listener, started))
    listener.close()
    await listener.wait()
    assert_port_closed(port)
    assert started == []


async def test_closed_while_loading_never_serves() -> None:
    listener = Listener()
    port = listener.bind()
    started: list[int] = []
    listener.on_first_connection(lambda: _echo_start(listener, started, delay=0.3))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await asyncio.sleep(0.05)
    assert started == [1]
    listener.close()
    await listener.wait()
    assert not hasattr(listener, "server"), "a server started after the bridge was switched off"
    await assert_dropped(reader)
    writer.close()
    assert_port_closed(port)


async def test_an_http_host_whose_server_fails_to_start_drops_the_client_and_stops(monkeypatch, caplog) -> None:
    """The lazy HTTP host (the Gemini companion's): uvicorn failing at the first connection must not
    hang (its stop used to wait for the very task that was stopping it), must drop the waiting
    client and leave nothing serving; the failure is logged."""
    from context_companion.bridges import http_host

    class _Broken:
        started = False
        should_exit = False
        force_exit = False

        async def serve(self, sockets: object = None) -> None:
            raise RuntimeError("uvicorn could not start")

    async def app(scope: object, receive: object, send: object) -> None:  # never reached
        raise AssertionError("served")

    monkeypatch.setattr(http_host, "_embedded_server", lambda config: _Broken())
    host = http_host.LocalHttpHost(app, token="t" * 40, lifespan="off")
    port = await host.listen()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await assert_dropped(reader)
    writer.close()
    for _ in range(100):
        if not host.serving():
            break
        await asyncio.sleep(0.02)
    assert not host.serving()
    assert "could not start serving" in caplog.text
    await asyncio.wait_for(host.stop(), 5)
    assert_port_closed(port)
