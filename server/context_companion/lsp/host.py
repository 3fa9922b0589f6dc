"""What the parts of the language server need of it, as a protocol: the type the parts
(:mod:`.push`, :mod:`.diagnostics`, :mod:`.texts`, :mod:`.gemini`, :mod:`.claude_code_endpoint`,
:mod:`.mcp_endpoint`) name their server by. :class:`~.runtime.CompanionServer` owns those parts and
satisfies it; naming it here instead of the server type keeps the parts below the server type,
with no import circle between them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from ..workspace.changes import MemoryChange
    from ..workspace.companion import Companion


class Follower(Protocol):
    """A part that follows state changes (the MCP endpoint)."""

    def changed(self, change: MemoryChange | None = None) -> None: ...


class Host(Protocol):
    @property
    def companion(self) -> Companion | None: ...

    @property
    def ready(self) -> asyncio.Event: ...

    @property
    def lock(self) -> asyncio.Lock: ...  # held while a slow load or a swap is under way

    @property
    def protocol(self) -> Any: ...  # pygls' LanguageServerProtocol: notify, send_request_async

    @property
    def workspace(self) -> Any: ...  # pygls' Workspace: the open documents

    @property
    def mcp(self) -> Follower | None: ...

    def show_error(self, message: str) -> None: ...

    def files_applied(self, change: MemoryChange) -> None: ...

    def text_document_publish_diagnostics(self, params: Any) -> None: ...
