"""The file watcher, an I/O edge: batches of changed paths are posted onto the event loop.

Shared by every server that watches memory itself (the language server, a standalone MCP server).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..memory import MemoryWatcher
    from ..workspace.companion import Companion

log = logging.getLogger(__name__)


def _log_failure(done: asyncio.Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("rebuilding the file watches failed", exc_info=done.exception())


class Watch:
    """Owns the one :class:`~context_companion.memory.MemoryWatcher` of a server."""

    def __init__(self) -> None:
        self._watcher: MemoryWatcher | None = None
        self._rebuild_queued = False  # a rebuild waits to start: later changes need no other

    def start(self, companion: Companion, on_batch: Callable[[set[str]], None]) -> asyncio.Future[None]:
        """(Re)start watching the companion's memory roots; ``on_batch`` runs on the loop.

        Setting the watches walks the tree (watchdog does it in the thread that starts it), so it
        runs on a worker thread: a folder such as ``/`` never stalls the loop. The result is done
        once the watches are in place (or watching failed, logged); a stop meanwhile wins."""
        from ..memory import MemoryWatcher

        self.stop()
        loop = asyncio.get_running_loop()
        if not companion.snapshot.settings.memory.watch:
            done: asyncio.Future[None] = loop.create_future()
            done.set_result(None)
            return done
        memory = companion.memory

        def post(paths: set[str]) -> None:  # on the watcher thread
            loop.call_soon_threadsafe(on_batch, paths)

        watcher = MemoryWatcher(
            memory.watch_roots(),
            post,
            is_relevant=lambda path: companion.memory.is_relevant_path(path),  # the store in use, even after a swap
            descend=lambda path: companion.memory.descends_into(path),
            debounce_ms=companion.snapshot.settings.memory.debounce_ms,
            flat_roots=memory.flat_watch_roots(),
        )
        self._watcher = watcher
        return loop.run_in_executor(None, self._start, watcher, len(memory.watch_roots()))

    def _start(self, watcher: MemoryWatcher, roots: int) -> None:  # on a worker thread
        try:
            watcher.start()
        except Exception as exc:
            log.warning("file watching unavailable (%s); use contextCompanion.refreshMemory", exc)
            return
        if self._watcher is not watcher:  # stopped or replaced while it started
            watcher.stop()
            return
        log.info("watching %d folder(s) for memory changes (%s)", roots, watcher.mode)

    def reschedule(self, companion: Companion) -> None:
        """Rebuild the watches (on the loop). The walk runs on a worker thread, so the loop keeps
        serving however large the tree is; changes while a rebuild waits to start share it, and it
        reads the roots when it starts, so it never applies stale ones. A stop meanwhile waits for
        it; a later start replaces the watcher."""
        watcher = self._watcher
        if watcher is None or self._rebuild_queued:
            return
        self._rebuild_queued = True
        memory = companion.memory

        def roots_now() -> tuple[list[Path], list[Path]]:
            self._rebuild_queued = False  # from here on a change needs a rebuild of its own
            return memory.watch_roots(), memory.flat_watch_roots()

        done = asyncio.get_running_loop().run_in_executor(None, watcher.rebuild, roots_now)
        done.add_done_callback(_log_failure)

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
