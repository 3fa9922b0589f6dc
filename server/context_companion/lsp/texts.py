"""The text of the documents the editor has open, as the command table and the bridges read it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from .host import Host


class OpenTexts(Mapping[str, str]):
    """The text of each document the editor has open, read when asked."""

    def __init__(self, ls: Host) -> None:
        self._ls = ls

    def __getitem__(self, uri: str) -> str:
        # Open documents only: pygls would read any other URI from disk, on the loop (a FIFO hangs it,
        # and a file the editor never opened is not the editor's text).
        # pygls keys them by the percent-decoded URI, as its get_text_document looks them up (a folder
        # with a space arrives as "chat%20workspace").
        document = self._ls.workspace.text_documents.get(unquote(uri))
        if document is None:
            raise KeyError(uri)
        text: str = document.source
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._ls.workspace.text_documents)

    def __len__(self) -> int:
        return len(self._ls.workspace.text_documents)
