"""Position units: LSP clients count characters in UTF-16 code units (default), UTF-8 bytes or
UTF-32 code points. Python strings index code points; these helpers convert and clamp."""

from __future__ import annotations

import re

# str.splitlines also breaks on \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029; LSP (and every editor)
# ends lines only with \n, \r\n or \r.
_EXOTIC_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LSP_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines_keepends(text: str) -> list[str]:
    """Lines with their endings, split the LSP way (``\n``, ``\r\n``, ``\r`` only)."""
    if not _EXOTIC_BREAKS.search(text):
        return text.splitlines(True)
    return _LSP_LINE.findall(text)


def split_lines(text: str) -> list[str]:
    """Lines without their endings, split the LSP way; a final line ending starts an empty line."""
    if not _EXOTIC_BREAKS.search(text):
        return text.split("\n") if "\r" not in text else re.split(r"\r\n|\r|\n", text)
    return re.split(r"\r\n|\r|\n", text)


def clamp_position(line_count: int, line: int, units: int) -> tuple[int, int]:
    """Clamp a line into ``[0, line_count - 1]`` and a column to ``>= 0`` (the column is clamped
    to the line's length by :func:`column_from_units`). A line past the end moves to the end of
    the last line."""
    last = max(line_count - 1, 0)
    if line < 0:
        return 0, 0
    if line > last:
        return last, 1 << 30
    return line, max(units, 0)


def column_from_units(text: str, units: int, encoding: str = "utf-16") -> int:
    """Code-point column of ``units`` code units into ``text``, clamped to ``len(text)``."""
    if encoding == "utf-32":
        return min(units, len(text))
    if text.isascii():
        return min(units, len(text))
    count = 0
    for i, ch in enumerate(text):
        if count >= units:
            return i
        o = ord(ch)
        if encoding == "utf-8":
            count += 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
        else:
            count += 2 if o > 0xFFFF else 1
    return len(text)


def units_from_column(text: str, column: int, encoding: str = "utf-16") -> int:
    """Code units of the first ``column`` code points of ``text``."""
    prefix = text[:column]
    if encoding == "utf-32" or prefix.isascii():
        return len(prefix)
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    return len(prefix.encode("utf-16-le")) // 2
