"""Claude Code's IDE integration, hosted by the language server (``companion.claudeCode.enabled``).

:class:`ClaudeCodeEndpoint` starts the bridge (:mod:`context_companion.bridges.claude_code`) on
the server's loop once the workspace is loaded, writes the lock file (and rewrites it when the
folders change), tells the editor the terminal environment in
``contextCompanion/companionStarted``, sends ``selection_changed`` 50 ms after the cursor
settles, forwards ``openDiff`` as ``contextCompanion/showDiff``, and removes the lock file at
shutdown and on every way out (:func:`.lifecycle.close`; atexit as the last resort). Before it
writes its lock file it removes those of Context Companion servers that are gone.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..workspace.commands import COMPANION_STARTED, SHOW_DIFF
from .mcp_endpoint import LiveState

if TYPE_CHECKING:
    from ..bridges.claude_code import ClaudeCodeBridge, DiffOutcome, LockFile
    from ..workspace.companion import Companion
    from .host import Host

log = logging.getLogger(__name__)

CLOSE_WAIT_S = 5.0
SELECTION_DELAY = 0.05  # seconds: a drag or a burst of keys sends one selection_changed


class _LspEditor(LiveState):
    """The Claude Code bridge's view of the language server: its live state, plus what only an
    editor knows (language ids, diffs)."""

    def language_id(self, uri: str) -> str | None:
        with contextlib.suppress(Exception):
            language: str | None = self._ls.workspace.get_text_document(uri).language_id
            return language
        return None

    async def show_diff(self, uri: str, new_text: str, title: str) -> tuple[DiffOutcome, str | None]:
        from ..errors import ContextCompanionError

        try:
            raw = await self._ls.protocol.send_request_async(
                SHOW_DIFF, {"uri": uri, "newText": new_text, "title": title}
            )
        except Exception as exc:
            raise ContextCompanionError(f"openDiff: the editor cannot show the diff ({exc})") from None
        if hasattr(raw, "_asdict"):  # pygls hands untyped results over as namedtuples
            raw = raw._asdict()
        outcome = raw.get("outcome") if isinstance(raw, Mapping) else None
        text = raw.get("text") if isinstance(raw, Mapping) else None
        if outcome not in ("accepted", "rejected", "closed"):
            log.warning("%s: the editor answered %.200r; taken as rejected", SHOW_DIFF, raw)
            return "rejected", None
        return outcome, text if isinstance(text, str) else None


class ClaudeCodeEndpoint:
    def __init__(self) -> None:
        self._bridge: ClaudeCodeBridge | None = None
        self._lock: LockFile | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._hooked = False  # the atexit hook is installed once per process
        self._closed = False  # the process is ending: never started again
        self._reconciling = asyncio.Lock()  # the boot and a settings change may reconcile at once
        self.settled = asyncio.Event()  # the first reconcile is done: status answers are true
        self.listen_on_request = False  # the client asks for the listener (contextCompanion.openListeners)
        self.opened = False  # ... and has asked

    @property
    def running(self) -> bool:
        return self._bridge is not None

    def status(self) -> dict[str, Any]:
        """``companionStatus``'s ``claudeCode``: listening port, lock file, connected Claude Codes."""
        bridge, lock = self._bridge, self._lock
        if bridge is None:
            return {"running": False, "port": None, "lockFile": None, "connectedClients": 0, "listening": False}
        return {
            "running": True,
            "port": bridge.port,
            "lockFile": str(lock.path) if lock is not None and lock.written else None,
            "connectedClients": bridge.connected_clients(),
            "listening": bridge.listening,
        }

    async def reconcile(self, ls: Host) -> None:
        """Start or stop to match ``companion.claudeCode.enabled``; rewrite the lock file's folders.
        One at a time: two starts racing would leave two bridges and two lock files."""
        async with self._reconciling:
            try:
                await self._reconcile(ls)
            finally:
                self.settled.set()

    async def _reconcile(self, ls: Host) -> None:
        companion = ls.companion
        if companion is None or self._closed:
            return
        wanted = companion.snapshot.settings.companion.claude_code.enabled
        if wanted and self._bridge is None:
            try:
                await self._start(ls, companion)
            except Exception as exc:
                log.exception("the Claude Code integration could not start")
                ls.show_error(f"Context Companion: the Claude Code integration could not start: {exc}")
        elif not wanted and self._bridge is not None:
            self.stop()
            ls.protocol.notify(COMPANION_STARTED, {"claudeCode": None})
        elif self._lock is not None and self._bridge is not None and self._bridge.listening:
            self._write_lock(companion)

    async def _start(self, ls: Host, companion: Companion) -> None:
        from ..bridges.announcements import remove_stale_claude
        from ..bridges.claude_code import ClaudeCodeBridge, LockFile, terminal_env
        from ..settings import allowed_origins

        bridge = ClaudeCodeBridge(_LspEditor(ls), allowed_origins=allowed_origins())
        port = await bridge.start(listen=False)
        self._bridge = bridge
        lock = self._lock = LockFile(port, bridge.token, "Context Companion")
        await asyncio.to_thread(remove_stale_claude, lock.path.parent)
        if self._closed:  # shut down while starting
            self.stop()
            return
        if self.opened or not self.listen_on_request:
            self._open(companion)
        if not self._hooked:
            self._hooked = True
            atexit.register(self._remove_lock)
        ls.protocol.notify(COMPANION_STARTED, {"claudeCode": {"port": port, "env": terminal_env(port)}})
        log.info("Claude Code integration on ws://127.0.0.1:%d (lock file %s)", port, lock.path)

    def open(self, ls: Host) -> None:
        """``contextCompanion.openListeners``: listen (and write the lock file) now, and from now on
        at every (re)start."""
        self.opened = True
        if ls.companion is not None:
            self._open(ls.companion)

    def _open(self, companion: Companion) -> None:
        bridge = self._bridge
        if bridge is None or self._lock is None or bridge.listening:
            return
        bridge.open()
        self._write_lock(companion)

    def _write_lock(self, companion: Companion) -> None:
        assert self._lock is not None
        try:
            self._lock.write([str(f) for f in companion.snapshot.folders])
        except OSError as exc:
            log.warning("cannot write the Claude Code lock file %s: %s", self._lock.path, exc)

    def _remove_lock(self) -> None:
        if self._lock is not None:
            self._lock.remove()

    def cursor_moved(self) -> None:
        """The cursor or selection moved (on the loop): send selection_changed once it settles.
        Nothing at all (no timer) until a Claude Code has connected."""
        if self._bridge is None or not self._bridge.wants_selection:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(SELECTION_DELAY, self._flush)

    def _flush(self) -> None:
        self._timer = None
        if self._bridge is not None:
            self._spawn(self._bridge.selection_changed())

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self) -> None:
        """Withdraw the lock file now; the socket closes on the loop."""
        self._remove_lock()
        self._lock = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._bridge is not None:
            bridge, self._bridge = self._bridge, None
            self._spawn(bridge.stop())

    def shutdown(self) -> None:
        """``shutdown`` (or the end of the connection): stop, and never start again, even from a
        boot or settings change still under way."""
        self._closed = True
        self.stop()

    async def close(self) -> None:
        """The process is ending: shut down, and wait until the socket is closed and no task is left."""
        self.shutdown()
        tasks = list(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)
