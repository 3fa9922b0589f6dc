"""The floor for the LSP figures: a bare pygls 2 stdio server, as little as a useful server needs.

* initialize / text sync: pygls' built-in handlers store didOpen/didChange in its workspace;
* ``contextCompanion/didChangeCursor``: a custom notification whose raw params (a dict) are stored;
* ``bare.echo``: one executeCommand that answers with its argument. When the argument holds
  ``"probe": true`` the answer also carries the stored state (a document's text length, the last
  cursor params), so a benchmark can check that a burst was really processed.

Run: ``python bench/bare_server.py`` (stdio, pygls' stock reader). Logs stay on stderr.

``python bench/bare_server.py --stack RANKS_FILE`` is the floor of the memory figure: the same
server, which also imports the libraries ours is built on (pydantic, tiktoken, watchdog, PyYAML,
pathspec), loads the same token encoding (o200k_base's pattern and special tokens, the ranks of
``RANKS_FILE``) and builds and validates one pydantic model, as any user of the library does (the
lead's decision on issue 34: the first model loads pydantic's schema machinery), before it serves.
Otherwise it does nothing with them: what they cost, on their own.
"""

from __future__ import annotations

import base64
import logging
import sys
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


def validated_model() -> Any:
    """One pydantic model, built and used once: what any program that uses pydantic pays for."""
    from pydantic import BaseModel, Field

    class Options(BaseModel):
        name: str
        limit: int = Field(default=10, ge=0)
        tags: list[str] = Field(default_factory=list)
        weights: dict[str, float] = Field(default_factory=dict)

    return Options.model_validate({"name": "floor", "limit": 3, "tags": ["a", "b"], "weights": {"x": 1.5}})


def load_stack(ranks_file: str) -> Any:
    """Import the libraries our server uses, build and validate one pydantic model, and load its
    token encoding the least costly way (the ranks dict tiktoken keeps only for pickling is emptied,
    as ours does); the encoding."""
    import pathspec  # noqa: F401
    import tiktoken
    import tiktoken_ext.openai_public as public  # type: ignore[import-untyped]
    import watchdog.events
    import watchdog.observers
    import watchdog.observers.polling  # noqa: F401
    import yaml  # noqa: F401

    state["model"] = validated_model()

    ranks: dict[bytes, int] = {}
    with open(ranks_file, "rb") as fh:
        for line in fh:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    public.load_tiktoken_bpe = lambda *args, **kwargs: ranks  # the file, never the network
    encoding = tiktoken.Encoding(**public.ENCODING_CONSTRUCTORS["o200k_base"]())
    ranks.clear()
    encoding.encode_ordinary("loaded")
    return encoding


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    if sys.argv[1:2] == ["--stack"]:
        state["encoding"] = load_stack(sys.argv[2])
    server.start_io()
