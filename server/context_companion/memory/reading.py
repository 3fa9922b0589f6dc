"""Reading one memory file safely: size limit, binary check, UTF-8 with replacement.

Never raises and never blocks: special files (FIFOs, devices) are refused before they are
opened, a file that grows between ``stat`` and ``read`` is still capped, and every failure
becomes a short reason the caller shows to the user.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class FileSignature:
    """What tells us a file changed without reading it again."""

    mtime_ns: int
    size: int
    ino: int


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """The text of a file, or why it was skipped.

    ``text`` is None when the file is skipped (``skip`` says why, in a few words) or missing
    (``missing`` is True). ``warning`` is set when the text was read with replacements.
    """

    text: str | None
    skip: str | None = None
    warning: str | None = None
    missing: bool = False
    signature: FileSignature | None = None
    size: int = 0


def signature_of(path: str) -> FileSignature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileSignature(st.st_mtime_ns, st.st_size, st.st_ino)


def over_limit(size: int, max_bytes: int) -> bool:
    """Whether a memory file of ``size`` bytes is too large to read under ``memory.maxFileBytes``."""
    return size >= max_bytes


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text_file(path: str, max_bytes: int) -> ReadOutcome:
    """Read ``path`` as memory text under the limits of ``memory.maxFileBytes``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ReadOutcome(None, missing=True)
    except NotADirectoryError:
        return ReadOutcome(None, missing=True)
    except OSError as exc:
        return ReadOutcome(None, skip=f"unreadable ({exc.strerror or exc})")
    sig = FileSignature(st.st_mtime_ns, st.st_size, st.st_ino)
    if stat.S_ISDIR(st.st_mode):
        return ReadOutcome(None, skip="not a regular file (a directory)", signature=sig)
    if not stat.S_ISREG(st.st_mode):
        return ReadOutcome(None, skip="not a regular file", signature=sig)
    if over_limit(st.st_size, max_bytes):
        return ReadOutcome(
            None,
            skip=f"over memory.maxFileBytes ({st.st_size} bytes, limit {max_bytes})",
            signature=sig,
            size=st.st_size,
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return ReadOutcome(None, skip=f"unreadable ({exc.strerror or exc})", signature=sig)
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(max_bytes)
    except OSError as exc:
        return ReadOutcome(None, skip=f"unreadable ({exc.strerror or exc})", signature=sig)
    if len(data) >= max_bytes:
        return ReadOutcome(
            None,
            skip=f"over memory.maxFileBytes (at least {len(data)} bytes, limit {max_bytes})",
            signature=sig,
            size=len(data),
        )
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return ReadOutcome(None, skip="binary file (NUL byte)", signature=sig, size=len(data))
    warning = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        warning = f"not valid UTF-8 (first bad byte at offset {exc.start}); bad bytes replaced"
    if text.startswith("\ufeff"):
        text = text[1:]
    return ReadOutcome(normalise_newlines(text), warning=warning, signature=sig, size=len(data))
