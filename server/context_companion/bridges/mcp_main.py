"""``context-companion mcp``: the MCP server, standalone over stdio or Streamable HTTP, or attached.

Standalone, it reads the workspace, watches its memory files and serves the workspace core.
Attached, it relays stdio to the MCP endpoint a running language server for the same workspace
announced in its discovery file, so the agent sees the editor's open files, cursor and selection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import discovery, procs
from ..errors import ContextCompanionError
from ..workspace.changes import MemoryChange
from ..workspace.companion import Companion
from .watch import Watch

log = logging.getLogger(__name__)

TRANSPORT = "mcp-http"


def standalone_mode(workspace: Path, read_only: bool) -> str:
    access = " Read-only: add_memory is refused." if read_only else ""
    return (
        f"Context Companion, standalone on {workspace}: it reads the workspace's memory files "
        "(AGENTS.md, CLAUDE.md, GEMINI.md, rules) and watches them; no editor is connected, so open "
        "files, cursor and selection are empty. Call get_system_instruction for the instruction to run "
        "with (pass ifNoneMatch with the last etag), get_turn_context before each turn, or subscribe to "
        f"{'context-companion://instruction'} to hear when it changes.{access}"
    )


class Standalone:
    """The state source of a standalone server: its own companion and file watcher."""

    def __init__(self, companion: Companion) -> None:
        from .mcp_server import McpBridge

        self.companion = companion
        self.bridge: McpBridge | None = None
        self._watch = Watch()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def ready(self) -> Companion:
        return self.companion

    def texts(self) -> Mapping[str, str]:
        return {}

    def applied(self, change: MemoryChange) -> None:
        if change.watch_changed:
            self._watch.reschedule(self.companion)

    async def watch(self) -> None:
        """Start the memory watcher; its batches are applied on this loop. Done once the watches are in place (set
        off the loop), so a file written after the first answer is never missed, as in the language server."""
        self._loop = asyncio.get_running_loop()
        await self._watch.start(self.companion, self._files_changed)

    def stop(self) -> None:
        self._watch.stop()

    def _files_changed(self, paths: set[str]) -> None:
        try:
            change = self.companion.apply_file_changes(paths)
        except Exception:
            log.exception("applying file changes failed")
            return
        self.applied(change)
        if change.matters and self.bridge is not None and self._loop is not None:
            self._loop.create_task(self.bridge.changed(change))


# How long --server-pid waits for a live language server to announce its MCP endpoint.
ANNOUNCEMENT_WAIT_S = 5.0


def matching_servers(workspace: Path) -> list[discovery.Entry]:
    """Live MCP endpoints hosted for this workspace (or a folder above it), other than this process."""
    return [
        entry
        for entry in discovery.find(workspace, transports=(TRANSPORT,))
        if entry.url is not None and entry.pid != os.getpid() and entry.workspace_folders
    ]


def _choose(args: argparse.Namespace, workspace: Path) -> discovery.Entry | None:
    pid = getattr(args, "server_pid", None)
    if pid is not None:
        return _by_pid(args, workspace, pid)
    if args.attach is False or args.http is not None:
        return None
    servers = matching_servers(workspace)
    if args.attach is True and len(servers) != 1:
        what = "no language server" if not servers else f"{len(servers)} language servers"
        raise ContextCompanionError(f"--attach: {what} with an MCP endpoint found for {workspace}")
    return servers[0] if len(servers) == 1 else None


def _proven(entry: discovery.Entry) -> bool:
    """The endpoint proves it holds the announced token before the relay sends it (see http_host)."""
    from .http_host import proves_token

    return entry.url is not None and entry.token is not None and proves_token(entry.url, entry.token)


def _by_pid(args: argparse.Namespace, workspace: Path, pid: int) -> discovery.Entry:
    """The language server ``--server-pid`` names (two editor windows may serve the same folder)."""
    if pid <= 0:
        raise ContextCompanionError(f"--server-pid {pid}: must be a positive process id")
    if args.attach is False or args.http is not None:
        flag = "--no-attach" if args.attach is False else "--http"
        raise ContextCompanionError(f"--server-pid: cannot be combined with {flag}")
    # The editor may start us the moment its language server opened the endpoint, before the announcement file is
    # on disk: while that process lives, look again for a few seconds (bounded), then say why not.
    deadline = time.monotonic() + ANNOUNCEMENT_WAIT_S
    while True:
        for entry in matching_servers(workspace):
            if entry.pid == pid:
                return entry
        if time.monotonic() >= deadline or not procs.pid_alive(pid):
            break
        time.sleep(0.1)
    raise ContextCompanionError(
        f"--server-pid {pid}: no language server with that process id has an MCP endpoint for {workspace}"
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="context-companion: %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise ContextCompanionError(f"--workspace {args.workspace}: not a directory")
    workspace = workspace.resolve()
    target = _choose(args, workspace)
    if target is not None and not _proven(target):
        why = (
            f"the MCP endpoint announced by process {target.pid} at {target.url} did not prove it holds the "
            "token (a file left by a server that is gone?)"
        )
        if args.attach is True or getattr(args, "server_pid", None) is not None:
            raise ContextCompanionError(f"--attach: {why}")
        log.warning("%s: reading the workspace itself", why)
        target = None
    if target is not None:
        assert target.url is not None  # matching_servers keeps only entries with a URL
        log.info("attached to the language server (pid %s) at %s", target.pid, target.url)
        asyncio.run(relay(target.url, target.token or "", memory_elsewhere=args.memory_elsewhere))
        return 0
    companion = Companion.open([workspace])
    source = Standalone(companion)
    from .mcp_server import McpBridge

    bridge = McpBridge(
        source,
        mode=standalone_mode(workspace, args.read_only),
        read_only=args.read_only,
        memory_elsewhere=args.memory_elsewhere,
    )
    source.bridge = bridge
    try:
        if args.http is None:
            asyncio.run(_serve_stdio(source, bridge))
        else:
            asyncio.run(_serve_http(source, bridge, args.http, workspace))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve_stdio(source: Standalone, bridge: Any) -> None:
    from mcp.server.stdio import stdio_server

    await bridge.prime()
    await source.watch()
    try:
        async with stdio_server() as (read, write):
            await bridge.server.run(read, write, bridge.initialization_options())
    finally:
        source.stop()


async def _serve_http(source: Standalone, bridge: Any, port: int, workspace: Path) -> None:
    from ..discovery import new_token
    from .http_host import LocalHttpHost

    app = bridge.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    host = LocalHttpHost(app, token=new_token(), port=port)
    await bridge.prime()
    await source.watch()
    try:
        port = await host.start()
    except OSError as exc:
        raise ContextCompanionError(f"--http {port}: cannot listen: {exc.strerror or exc}") from None
    announce = announcement(port, host.url(), host.token)
    path = announce.write([workspace])
    sys.stderr.write(f"context-companion: MCP over Streamable HTTP at {host.url()} (token in {path})\n")
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows' default loop
            loop.add_signal_handler(sig, host.request_stop)
    try:
        await host.wait()
    finally:
        announce.remove()
        source.stop()


def announcement(port: int, url: str, token: str) -> discovery.DiscoveryFile:
    """The discovery file that lets ``mcp --attach`` (and other clients) find an MCP endpoint."""
    discovery.remove_stale()
    return discovery.DiscoveryFile(port, TRANSPORT, token, url=url)


async def relay(url: str, token: str, *, memory_elsewhere: bool = False) -> None:
    """Pass MCP messages between this process's stdio and the endpoint at ``url``, unchanged.
    ``memory_elsewhere``: tell the endpoint (a header on every request) that this agent gets the memory
    files another way."""
    import anyio
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.stdio import stdio_server
    from mcp.shared._httpx_utils import create_mcp_http_client

    from .mcp_server import MEMORY_ELSEWHERE, MEMORY_HEADER

    headers = {"Authorization": f"Bearer {token}"}
    if memory_elsewhere:
        headers[MEMORY_HEADER] = MEMORY_ELSEWHERE
    http = create_mcp_http_client(headers=headers)
    async with (
        http,
        streamable_http_client(url, http_client=http) as (remote_read, remote_write),
        stdio_server() as (local_read, local_write),
        anyio.create_task_group() as tasks,
    ):

        async def pump(source: Any, sink: Any, stop: bool) -> None:
            async for message in source:
                if isinstance(message, Exception):
                    log.warning("relay: %s", message)
                    continue
                await sink.send(message)
            if stop:  # the agent closed stdin: end the relay
                tasks.cancel_scope.cancel()

        tasks.start_soon(pump, local_read, remote_write, True)
        tasks.start_soon(pump, remote_read, local_write, True)
