"""Gemini CLI's IDE companion, seen from the language server.

:class:`GeminiLink` owns the companion (:mod:`context_companion.bridges.gemini`) for this
connection: it starts it once the workspace is loaded (``companion.geminiCli.enabled``), restarts
it when its settings change, tells the editor the terminal environment
(``contextCompanion/companionStarted``), forwards diffs to the editor
(``contextCompanion/showDiff`` / ``closeDiff``, server → client requests) and answers
``contextCompanion.companionStatus`` (registered by :mod:`.companions`). The handlers in
:mod:`.documents` call :meth:`GeminiLink.schedule_update` when the editor state changes.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..workspace.commands import CLOSE_DIFF, COMPANION_STARTED, SHOW_DIFF

if TYPE_CHECKING:
    from ..bridges.gemini.companion import DiffAnswer, GeminiCompanion
    from ..settings import GeminiCliSettings
    from ..workspace.companion import Companion
    from .host import Host

log = logging.getLogger(__name__)

COMPANION_STATUS = "contextCompanion.companionStatus"
_BRIDGE = "context_companion.bridges.gemini.companion"


def _plain(value: Any) -> Any:
    """pygls may hand a custom result over as a namedtuple: back to JSON-like data."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    return value


class LspEditor:
    """The editor side of a diff, over this LSP connection."""

    def __init__(self, ls: Host, can_show_diff: bool) -> None:
        self._ls = ls
        self._can_show_diff = can_show_diff

    @property
    def can_show_diff(self) -> bool:
        return self._can_show_diff

    async def show_diff(self, uri: str, new_text: str, title: str) -> DiffAnswer:
        from ..bridges.gemini.companion import DiffAnswer

        raw = _plain(
            await self._ls.protocol.send_request_async(SHOW_DIFF, {"uri": uri, "newText": new_text, "title": title})
        )
        outcome = raw.get("outcome") if isinstance(raw, Mapping) else None
        text = raw.get("text") if isinstance(raw, Mapping) else None
        if outcome not in ("accepted", "rejected", "closed"):
            log.warning("%s: the editor answered %.200r; expected an outcome accepted|rejected|closed", SHOW_DIFF, raw)
            return DiffAnswer("rejected")
        return DiffAnswer(outcome, text if isinstance(text, str) else None)

    async def close_diff(self, uri: str) -> str | None:
        raw = _plain(await self._ls.protocol.send_request_async(CLOSE_DIFF, {"uri": uri}))
        text = raw.get("text") if isinstance(raw, Mapping) else None
        return text if isinstance(text, str) else None


class GeminiLink:
    """The Gemini CLI companion of this connection (at most one), and what the client announced."""

    def __init__(self, ls: Host) -> None:
        self._ls = ls
        self.process_id: int | None = None
        self.client_name: str | None = None
        self.can_show_diff = False
        self.bridge: GeminiCompanion | None = None
        self._settings: GeminiCliSettings | None = None  # those the running bridge was started with
        self._lock = asyncio.Lock()
        self._stopping: asyncio.Task[None] | None = None
        self._closed = False  # after shutdown: never started again
        self.listen_on_request = False  # the client asks for the listeners (contextCompanion.openListeners)
        self.opened = False  # ... and has asked
        self.settled = asyncio.Event()  # the first reconcile is done: status answers are true

    def initialize(self, process_id: int | None, client_name: str | None, options: Any) -> Any:
        """Record who the client is; returns ``initializationOptions`` without ``capabilities``
        (client capabilities of our protocol, not settings)."""
        self.process_id = process_id
        self.client_name = client_name
        if isinstance(options, dict) and "capabilities" in options:
            options = dict(options)
            caps = options.pop("capabilities")
            self.can_show_diff = isinstance(caps, dict) and caps.get("showDiff") is True
            self.listen_on_request = isinstance(caps, dict) and caps.get("listenOnRequest") is True
        return options

    async def reconcile(self, companion: Companion) -> None:
        """Start, restart or stop the companion so it matches ``companion.geminiCli``."""
        async with self._lock:
            wanted = companion.snapshot.settings.companion.gemini_cli
            if self._closed:
                self.settled.set()
                return
            if wanted == self._settings and (self.bridge is not None) == wanted.enabled:
                self.settled.set()
                return
            if self.bridge is not None:
                await self._stop()
            self._settings = wanted
            try:
                if wanted.enabled:
                    await self._start(companion, wanted)
            except Exception:
                # The editor features do not depend on the companion: log it, keep serving.
                log.exception("the Gemini CLI companion could not start")
            finally:
                self.settled.set()

    async def _start(self, companion: Companion, settings: GeminiCliSettings) -> None:
        await asyncio.to_thread(importlib.import_module, _BRIDGE)
        from ..bridges.gemini.companion import GeminiCompanion
        from ..bridges.gemini.discovery import ide_info, ide_pid
        from .texts import OpenTexts

        bridge = GeminiCompanion(
            companion,
            OpenTexts(self._ls),
            LspEditor(self._ls, self.can_show_diff),
            ide_pid=await asyncio.to_thread(ide_pid, self.process_id),
            ide=ide_info(self.client_name),
            port=settings.port,
        )
        try:
            await bridge.start(listen=self.opened or not self.listen_on_request)
        except OSError as exc:
            self._ls.show_error(
                f"Context Companion: cannot start the Gemini CLI companion on port {settings.port}: {exc}"
            )
            return
        if self._closed:  # a shutdown came while it started: it withdrew nothing of this one's
            await bridge.stop()
            return
        self.bridge = bridge
        if self.opened:  # asked while it started
            bridge.open()
        self._announce()

    def open(self) -> None:
        """``contextCompanion.openListeners``: listen (and write the discovery file) now, and from
        now on at every (re)start."""
        self.opened = True
        if self.bridge is not None:
            self.bridge.open()

    async def _stop(self) -> None:
        bridge, self.bridge = self.bridge, None
        if bridge is not None:
            await bridge.stop()
            self._ls.protocol.notify(COMPANION_STARTED, {"geminiCli": None})

    def _announce(self) -> None:
        if self.bridge is not None:
            params = {"geminiCli": {"port": self.bridge.port, "env": self.bridge.env()}}
            self._ls.protocol.notify(COMPANION_STARTED, params)

    async def after_swap(self, companion: Companion, folders_changed: bool) -> None:
        """A new settings/folders snapshot is in force."""
        await self.reconcile(companion)
        if folders_changed:
            self.folders_changed()

    def folders_changed(self) -> None:
        if self.bridge is not None:
            self.bridge.folders_changed()
            self._announce()  # GEMINI_CLI_IDE_WORKSPACE_PATH changed

    def schedule_update(self) -> None:
        if self.bridge is not None:
            self.bridge.schedule_update()

    def shutdown(self) -> None:
        """Remove the discovery file at once; stop listening in the background; never start again."""
        self._closed = True
        bridge, self.bridge = self.bridge, None
        if bridge is not None:
            bridge.remove_discovery_file()
            self._stopping = asyncio.get_running_loop().create_task(bridge.stop())

    async def exit(self) -> None:
        """Before the process ends: the endpoint is closed, its sessions ended."""
        self.shutdown()
        async with self._lock:  # a start in progress finishes first (and stops itself, seeing _closed)
            pass
        stopping, self._stopping = self._stopping, None
        if stopping is not None:
            try:
                await asyncio.wait_for(stopping, 10)
            except Exception:
                log.exception("the Gemini CLI companion did not stop cleanly")

    def status(self) -> dict[str, Any]:
        if self.bridge is None:
            return {
                "geminiCli": {
                    "running": False,
                    "port": None,
                    "discoveryFile": None,
                    "connectedClients": 0,
                    "listening": False,
                }
            }
        return {"geminiCli": self.bridge.status()}
