"""What the Claude Code bridge's listener (:mod:`.claude_code`) and its MCP side
(:mod:`.claude_code_mcp`, loaded when the first client connects) share: the editor they describe,
the connections and what was last told. No MCP SDK here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..context.state import EditorSelection
    from ..workspace.companion import Companion

DiffOutcome = Literal["accepted", "rejected", "closed"]


class EditorSource(Protocol):
    """The editor the bridge describes (the language server's live state)."""

    async def ready(self) -> Companion: ...

    def texts(self) -> Mapping[str, str]:
        """URI → text of the documents the editor has open."""
        ...

    def language_id(self, uri: str) -> str | None: ...

    async def show_diff(self, uri: str, new_text: str, title: str) -> tuple[DiffOutcome, str | None]:
        """Show ``new_text`` against ``uri``; the user's decision and the view's final text.
        Raises ``ContextCompanionError`` when the editor cannot show diffs."""
        ...


def selection_params(sel: EditorSelection) -> dict[str, Any]:
    """The ``selection_changed`` params (and the selection tools' fields) for a selection."""
    url = sel.uri if sel.uri.startswith("file:") else Path(sel.path).as_uri() if sel.path.startswith("/") else sel.uri
    return {
        "text": sel.text,
        "filePath": sel.path,
        "fileUrl": url,
        "selection": {
            "start": {"line": sel.start[0], "character": sel.start[1]},
            "end": {"line": sel.end[0], "character": sel.end[1]},
            "isEmpty": sel.is_empty,
        },
    }


@dataclass(eq=False)
class Connection:
    write: Any  # the SDK session's write stream
    initialized: bool = False
    retelling: bool = False  # the state is told again after the client's first tools/list


@dataclass
class BridgeState:
    last_sent: dict[str, Any] | None = None
    latest: dict[str, Any] | None = None  # the last selection that selected text
    connections: set[Connection] = field(default_factory=set)
