"""The floor for the LSP figures: a bare pygls 2 stdio server, as little as a useful server needs.

* initialize / text sync: pygls' built-in handlers store didOpen/didChange in its workspace;
* ``contextCompanion/didChangeCursor``: a custom notification whose raw params (a dict) are stored;
* ``bare.echo``: one executeCommand that answers with its argument. When the argument holds
  ``"probe": true`` the answer also carries the stored state (a document's text length, the last
  cursor params), so a benchmark can check that a burst was really processed.

Run: ``python bench/bare_server.py`` (stdio, pygls' stock reader). Logs stay on stderr.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

CURSOR = "contextCompanion/didChangeCursor"


@attrs.define
class RawNotification:
    method: str
    jsonrpc: str
    params: Any = None  # left as the decoded JSON dict: no per-message namedtuple


class BareProtocol(LanguageServerProtocol):
    def get_message_type(self, method: str) -> Any:
        return RawNotification if method == CURSOR else super().get_message_type(method)


server = LanguageServer("bare-pygls", "1", protocol_cls=BareProtocol)
state: dict[str, Any] = {"cursor": None}


@server.feature(CURSOR)
def did_change_cursor(ls: LanguageServer, params: Any) -> None:
    state["cursor"] = params


@server.command("bare.echo")
def echo(ls: LanguageServer, arg: Any = None) -> Any:
    if isinstance(arg, dict) and arg.get("probe"):
        out: dict[str, Any] = {"echo": arg, "cursor": state["cursor"]}
        uri = arg.get("uri")
        if isinstance(uri, str):
            out["length"] = len(ls.workspace.get_text_document(uri).source)
        return out
    return {"echo": arg}


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    server.start_io()
