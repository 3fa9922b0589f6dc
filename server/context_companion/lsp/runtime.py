"""The server type: :class:`CompanionServer`, the connection's runtime, which the handler modules
(:mod:`.lifecycle`, :mod:`.documents`, :mod:`.memory_files`, :mod:`.commands`, :mod:`.companions`)
take as their first argument, and :func:`off_loop`, the way they run slow work.

It holds the :class:`~context_companion.workspace.companion.Companion` once booted, the push
:class:`~.push.Publisher`, the :class:`~.diagnostics.Diagnostics`, the file
:class:`~context_companion.bridges.watch.Watch`, the bridges' endpoints and the events/lock that
order start-up and slow work. It imports no handler module; :mod:`.server` wires them on top.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

from ..bridges.watch import Watch
from .claude_code_endpoint import ClaudeCodeEndpoint
from .diagnostics import Diagnostics
from .gemini import GeminiLink
from .hook_endpoint import HookEndpoint
from .protocol import DID_CHANGE_CURSOR, LspWorkspace, Protocol
from .push import Publisher

if TYPE_CHECKING:
    from ..context.state import RawPosition
    from ..workspace.changes import MemoryChange
    from ..workspace.companion import Companion
    from .mcp_endpoint import McpEndpoint

log = logging.getLogger(__name__)

Cursor = tuple[str, "RawPosition", list[tuple["RawPosition", "RawPosition"]]]  # uri, position, selections

T = TypeVar("T")


class CompanionServer(LanguageServer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.companion: Companion | None = None
        self.booted = asyncio.Event()  # the companion exists (settings resolved)
        self.ready = asyncio.Event()  # memory and tokenizer loaded: commands may run
        self.lock = asyncio.Lock()  # one slow load (off the loop) at a time
        self.publisher = Publisher(self)
        self.diagnostics = Diagnostics(self)
        self.watch = Watch()
        self.mcp: McpEndpoint | None = None  # serve --mcp-endpoint
        self.gemini = GeminiLink(self)  # Gemini CLI's IDE companion for this editor
        self.claude_code = ClaudeCodeEndpoint()  # companion.claudeCode.enabled
        self.hooks = HookEndpoint()  # companion.agentHooks.enabled: `context-companion hook` asks here
        self.boot_task: asyncio.Task[None] | None = None
        self._early: list[Callable[[Companion], None]] = []  # notifications that arrived before the boot
        self._parse_cursor: Callable[[Any], Cursor] | None = None
        self._told_refusals: set[str] = set()  # settings values left out, each shown once

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Errors in notifications (bad cursor params, a failed watcher event) are logged, not
        # shown: the user did nothing wrong, and a popup per keystroke would be worse.
        log.warning("%s", error)

    def cancel_in_flight(self) -> None:
        protocol = self.protocol
        assert isinstance(protocol, Protocol)
        protocol.cancel_in_flight()

    def use_lsp_line_splitting(self) -> None:
        """Our workspace class: LSP line splitting, documents and folders under one URI spelling."""
        workspace = self.workspace
        workspace.__class__ = LspWorkspace
        cast(LspWorkspace, workspace).adopt()

    def attach(self, companion: Companion) -> None:
        """The companion exists: replay what arrived before it."""
        self.companion = companion
        for action in self._early:
            action(companion)
        self._early.clear()
        self.booted.set()

    def when_booted(self, action: Callable[[Companion], None]) -> None:
        if self.companion is None:
            self._early.append(action)
        else:
            action(self.companion)

    def show_error(self, message: str) -> None:
        self.window_show_message(t.ShowMessageParams(type=t.MessageType.Error, message=message))

    def show_refusals(self, lines: tuple[str, ...]) -> None:
        """Each workspace setting left out (a file outside the workspace, Restricted Mode), once per
        server: one warning line naming the key, the value and the reason."""
        for line in lines:
            if line not in self._told_refusals:
                self._told_refusals.add(line)
                log.warning("%s", line)
                self.window_show_message(t.ShowMessageParams(type=t.MessageType.Warning, message=line))

    def parse_cursor(self, raw: Any) -> Cursor:
        """The cursor notification's params, validated, as the domain takes them: (uri, position,
        selections). The parser is built once (the domain is imported by then): a hot path."""
        if self._parse_cursor is None:
            from ..context.state import RawPosition
            from ..uris import normalize_uri
            from ..workspace.params import DidChangeCursorParams, parse_object

            last = ["", ""]  # the last URI as sent and its one spelling: the cursor mostly stays in a file

            def parse(raw: Any) -> Cursor:
                p = parse_object(DidChangeCursorParams, raw, DID_CHANGE_CURSOR)
                selections = [
                    (RawPosition(r.start.line, r.start.character), RawPosition(r.end.line, r.end.character))
                    for r in p.selections
                ]
                uri = p.text_document.uri
                if uri != last[0]:
                    last[:] = uri, normalize_uri(uri)
                return last[1], RawPosition(p.position.line, p.position.character), selections

            self._parse_cursor = parse
        return self._parse_cursor(raw)

    def files_changed(self, paths: set[str]) -> None:
        """A debounced batch from the watcher (on the loop): apply it, then push what it changed."""
        if self.companion is None:
            return
        try:
            change = self.companion.apply_file_changes(paths)
        except Exception:
            log.exception("applying file changes failed")
            return
        self.files_applied(change)

    def files_applied(self, change: MemoryChange) -> None:
        assert self.companion is not None
        if change.watch_changed:
            self.watch.reschedule(self.companion)
        if change.reason is not None:
            self.diagnostics.recheck_open()
        self.publisher.memory_changed(change)
        if self.mcp is not None:
            self.mcp.changed(change)


async def off_loop(ls: CompanionServer, work: Callable[[], T]) -> T:
    """Run slow work on a worker thread, one at a time; file changes seen meanwhile are applied again after."""
    async with ls.lock:
        return await reloading(ls, work)


async def reloading(ls: CompanionServer, work: Callable[[], T]) -> T:
    """:func:`off_loop` for a caller that holds ``ls.lock`` already (a swap that also restarts the
    watcher before it lets commands through)."""
    companion = ls.companion
    assert companion is not None
    companion.begin_reload()
    try:
        return await asyncio.to_thread(work)
    finally:
        missed = companion.end_reload()
        if missed:
            asyncio.get_running_loop().call_soon(ls.files_changed, missed)
