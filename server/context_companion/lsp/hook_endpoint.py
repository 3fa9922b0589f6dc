"""Agent hooks' channel, hosted by the language server (``companion.agentHooks.enabled``, on by default).

:class:`HookEndpoint` starts the channel (:mod:`context_companion.bridges.hook_channel`) once the
workspace is loaded, announces it in a discovery file (``"transport": "agent-hook"``, the token,
the workspace folders; rewritten when the folders change), and withdraws it at shutdown and on
every way out (:func:`.lifecycle.close`; atexit as the last resort). ``context-companion hook``
finds the file, connects, and gets what the agent has not had yet, from the editor's open files.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
from typing import TYPE_CHECKING

from .mcp_endpoint import LiveState

if TYPE_CHECKING:
    from ..bridges.hook_channel import HookChannel
    from ..discovery import DiscoveryFile
    from ..workspace.companion import Companion
    from .host import Host

log = logging.getLogger(__name__)


class _Ready(LiveState):
    async def ready(self) -> Companion:
        companion = await super().ready()
        async with self._ls.lock:  # after a settings or folder swap already under way
            pass
        return companion


class HookEndpoint:
    def __init__(self) -> None:
        self._channel: HookChannel | None = None
        self._file: DiscoveryFile | None = None
        self._closed = False
        self._hooked = False
        self._reconciling = asyncio.Lock()

    @property
    def port(self) -> int | None:
        return self._channel.port if self._channel is not None else None

    async def reconcile(self, ls: Host) -> None:
        """Start or stop to match ``companion.agentHooks.enabled``; rewrite the folders announced."""
        async with self._reconciling:
            companion = ls.companion
            if companion is None or self._closed:
                return
            wanted = companion.snapshot.settings.companion.agent_hooks.enabled
            if wanted and self._channel is None:
                try:
                    await self._start(ls, companion)
                except Exception as exc:
                    log.exception("the agent hooks' channel could not start")
                    ls.show_error(f"Context Companion: the agent hooks' channel could not start: {exc}")
            elif not wanted and self._channel is not None:
                await self.stop()
            elif self._file is not None:
                self._announce(companion)

    async def _start(self, ls: Host, companion: Companion) -> None:
        from ..bridges.hook_channel import FILE_PREFIX, TRANSPORT, HookChannel
        from ..discovery import DiscoveryFile, private_dir, remove_stale, runtime_dir

        directory = runtime_dir()
        try:
            private_dir(directory)  # the socket's folder: only this user may enter it
        except OSError as exc:
            log.warning("agent hooks' channel: %s; a loopback port instead of a socket there", exc)
            folder = None
        else:
            folder = directory
        channel = HookChannel(_Ready(ls))
        port = channel.start(folder)
        self._channel = channel
        self._file = DiscoveryFile(
            port, TRANSPORT, channel.token, directory=directory, prefix=FILE_PREFIX, extra=channel.announcement()
        )
        await asyncio.to_thread(remove_stale, self._file.directory)
        if self._closed:
            await self.stop()
            return
        self._announce(companion)
        if not self._hooked:
            self._hooked = True
            atexit.register(self._withdraw)
        where = channel.socket_path or f"127.0.0.1:{port}"
        log.info("agent hooks' channel on %s (%s)", where, self._file.path)

    def _announce(self, companion: Companion) -> None:
        assert self._file is not None
        try:
            self._file.write([str(f) for f in companion.snapshot.folders])
        except OSError as exc:
            log.warning("cannot write the agent hooks' discovery file %s: %s", self._file.path, exc)

    def _withdraw(self) -> None:
        if self._file is not None:
            self._file.remove()

    def shutdown(self) -> None:
        """Withdraw the announcement now, never start again; the socket closes in :meth:`close`."""
        self._closed = True
        self._withdraw()

    async def stop(self) -> None:
        self._withdraw()
        self._file = None
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.stop()

    async def close(self) -> None:
        self.shutdown()
        await self.stop()
