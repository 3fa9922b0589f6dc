"""The reference model the property tests compare the server with: text as the LSP sees it."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

# Pieces of text: ASCII, 2- and 3-byte UTF-8, astral characters (a UTF-16 surrogate pair each,
# 4 UTF-8 bytes), a skin-tone modifier and a ZWJ sequence, tabs, LF and CRLF line ends.
PIECES = ["a", "b", "Z", " ", "\t", "é", "中", "😀", "👍🏽", "🧑‍💻", "\n", "\r\n"]
ENCODINGS = ["utf-16", "utf-8", "utf-32"]

_EOL = re.compile(r"\r\n|\n|\r")  # the only line ends the LSP counts (spec 3.17, "Text Documents")

pieces_text = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def lsp_lines(text: str) -> list[tuple[int, str]]:
    """(offset of the line start, line content without its end) for each LSP line."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _EOL.finditer(text):
        out.append((start, text[start : m.start()]))
        start = m.end()
    out.append((start, text[start:]))
    return out


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in the code units of a position encoding."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def normalise(full: dict[str, Any] | None) -> dict[str, Any] | None:
    """A full turn context with ``otherOpenFiles`` as a set (their order is MRU and not part of a delta)."""
    if full is None:
        return None
    out = dict(full)
    out["otherOpenFiles"] = sorted(set(full.get("otherOpenFiles", [])))
    assert len(out["otherOpenFiles"]) == len(full.get("otherOpenFiles", [])), "a path listed twice"
    return out
