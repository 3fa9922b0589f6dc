"""An MCP endpoint inside the language server, over its live companion (``serve --mcp-endpoint``).

It serves the same tools and resources as ``context-companion mcp``, but from the editor's state
(open files, cursor, selection), on 127.0.0.1 with a bearer token, and announces itself in a
discovery file (``"transport": "mcp-http"``); ``context-companion mcp`` finds it there and relays.
Started after the boot, on the server's own loop; stopped at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..discovery import DiscoveryFile
    from ..workspace.changes import MemoryChange
    from ..workspace.companion import Companion
    from .host import Host

log = logging.getLogger(__name__)

MODE = (
    "Context Companion, attached to the editor's language server: the instruction, memory and the "
    "editor context (open files, active file, cursor, selection) are the editor's own, live. Call "
    "get_system_instruction for the instruction to run with (pass ifNoneMatch with the last etag), "
    "get_turn_context before each turn, or subscribe to context-companion://instruction."
)


class LiveState:
    """A bridge's view of the language server's live state (the editor's companion and open texts)."""

    def __init__(self, ls: Host) -> None:
        self._ls = ls

    async def ready(self) -> Companion:
        await self._ls.ready.wait()
        assert self._ls.companion is not None
        return self._ls.companion

    def texts(self) -> Mapping[str, str]:
        from .texts import OpenTexts

        return OpenTexts(self._ls)

    def applied(self, change: MemoryChange) -> None:
        self._ls.files_applied(change)


class McpEndpoint:
    def __init__(self) -> None:
        self._bridge: Any = None
        self._host: Any = None
        self._file: DiscoveryFile | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()
        self._stopped = False

    @property
    def listening(self) -> bool:
        return self._host is not None

    async def start(self, ls: Host) -> None:
        """Listen and write the discovery file; once (a second call waits for the first, then
        returns). Never after :meth:`stop`. A failure is logged."""
        async with self._starting:
            if self._host is None and not self._stopped:
                try:
                    await self._start(ls)
                except Exception:  # the editor features do not depend on it: log it, keep serving
                    log.exception("the MCP endpoint could not start")

    async def _start(self, ls: Host) -> None:
        from ..bridges.http_host import LocalHttpHost
        from ..bridges.mcp_main import announcement
        from ..bridges.mcp_server import McpBridge
        from ..discovery import new_token

        assert ls.companion is not None
        bridge = McpBridge(LiveState(ls), mode=MODE)
        app = bridge.server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        host = LocalHttpHost(app, token=new_token(), sessions=bridge.server.session_manager)
        await bridge.prime()
        port = await host.start()
        self._bridge, self._host = bridge, host
        self._file = announcement(port, host.url(), host.token)
        self._file.write(ls.companion.snapshot.folders)
        log.info("MCP endpoint at %s", host.url())

    def changed(self, change: MemoryChange | None = None) -> None:
        """State changed (on the loop): the bridge announces what really changed (it compares etags)."""
        if self._bridge is not None:
            task = asyncio.get_running_loop().create_task(self._bridge.changed(change))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        """Withdraw the discovery file now; the HTTP server stops on the loop."""
        self._stopped = True
        if self._file is not None:
            self._file.remove()
            self._file = None
        if self._host is not None:
            host, self._host, self._bridge = self._host, None, None
            task = asyncio.get_running_loop().create_task(host.stop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """The process is ending: stop, and wait until the HTTP server is down and no task is left."""
        self.stop()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=5.0)
