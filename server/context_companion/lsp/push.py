"""Server → client pushes of ``contextCompanion/systemInstructionChanged``.

The :class:`Publisher` owns the debounce timer and the reasons and files gathered since the last
push. It asks the domain to rebuild (:meth:`~context_companion.workspace.companion.Companion.rebuild_sessions`)
and sends what comes back; it never decides what changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..workspace.changes import MemoryChange
    from .host import Host

SYSTEM_INSTRUCTION_CHANGED = "contextCompanion/systemInstructionChanged"
MEMORY_CHANGED = "contextCompanion/memoryChanged"


class Publisher:
    def __init__(self, server: Host) -> None:
        self._server = server
        self._reasons: set[str] = set()
        self._files: set[str] = set()
        self._timer: asyncio.TimerHandle | None = None
        # The client asked for contextCompanion/memoryChanged (initializationOptions.capabilities.memoryChanged).
        self.memory_changed_wanted = False

    def schedule(self, reason: str, files: Iterable[str] = ()) -> None:
        """Push after ``memory.debounceMs`` of quiet, so a burst of opens pushes once."""
        self._reasons.add(reason)
        self._files.update(files)
        companion = self._server.companion
        if self._timer is not None or companion is None:
            return
        delay = companion.snapshot.settings.memory.debounce_ms / 1000
        self._timer = asyncio.get_running_loop().call_later(delay, self.flush)

    def memory_changed(self, change: MemoryChange) -> None:
        """Memory changed on disk (the watcher already debounced): push now. (The server has the
        open documents' diagnostics rechecked first.)"""
        if change.reason is None:
            return
        self._reasons.add(change.reason)
        self._files.update(change.files)
        self.flush()

    def forget(self) -> None:
        """Drop what is pending: no session has been given an instruction yet."""
        self._reasons.clear()
        self._files.clear()

    def flush(self) -> None:
        self.cancel()
        companion = self._server.companion
        if not self._reasons or companion is None or not self._server.ready.is_set():
            return  # kept: pushed once the first load is done
        reasons, files = self._reasons, self._files
        self._reasons, self._files = set(), set()
        for changed in companion.rebuild_sessions():
            companion.export(changed.instruction)
            self._server.protocol.notify(SYSTEM_INSTRUCTION_CHANGED, changed.to_wire(reasons, files))
        if self.memory_changed_wanted:  # also when no session's instruction changed (a sub-folder file, a glob rule)
            from ..workspace.changes import first_reason

            self._server.protocol.notify(
                MEMORY_CHANGED, {"reason": first_reason(reasons), "changedFiles": sorted(files)}
            )
        if self._server.mcp is not None:  # its resources follow the same debounce
            self._server.mcp.changed()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
