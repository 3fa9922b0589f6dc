"""The language server's wiring: :func:`create_server` builds the server type
(:class:`~.runtime.CompanionServer` with the :class:`~.protocol.Protocol`) and registers the
handler tables of :mod:`.lifecycle`, :mod:`.documents`, :mod:`.memory_files`, the command table
(:mod:`.commands`) and :mod:`.companions`. Nothing in ``lsp/`` imports this module.
"""

from __future__ import annotations

from lsprotocol import types as t

from .. import __version__
from ..workspace.commands import COMMANDS as COMMAND_TABLE
from . import commands, companions, documents, lifecycle, memory_files
from .protocol import Protocol
from .runtime import CompanionServer

COMMANDS = tuple(c.name for c in COMMAND_TABLE)  # what initialize advertises


def create_server() -> CompanionServer:
    server = CompanionServer(
        "context-companion",
        __version__,
        protocol_cls=Protocol,
        text_document_sync_kind=t.TextDocumentSyncKind.Incremental,
    )
    for method, handler in (*lifecycle.HANDLERS, *documents.HANDLERS, *memory_files.HANDLERS):
        server.feature(method)(handler)
    commands.register(server)
    companions.register(server)
    return server
