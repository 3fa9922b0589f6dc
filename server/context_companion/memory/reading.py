"""Reading one memory file safely: size limit, binary check, UTF-8 with replacement.

Never raises and never blocks: special files (FIFOs, devices) are refused before they are
opened, a file that grows between ``stat`` and ``read`` is still capped, and every failure
becomes a short reason the caller shows to the user.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..ownership import foreign_owner
from .wording import cut_marker

BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class FileSignature:
    """What tells us a file changed without reading it again."""

    mtime_ns: int
    size: int
    ino: int
    dev: int = 0
    uid: int = -1  # the owner: a file handed to another user is read again (and judged again)

    def key(self) -> str:
        """The file's identity, as :func:`~.paths.file_key` gives it."""
        return f"{self.dev}:{self.ino}"


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """The text of a file, or why it was skipped.

    ``text`` is None when the file is skipped (``skip`` says why, in a few words) or missing
    (``missing`` is True). ``warning`` is set when the text was read with replacements. ``cut``
    says how a file over ``memory.maxFileBytes`` was cut; its text then ends with the marker line.
    ``owner`` is set when the file is another user's: the caller decides (a workspace file is then no
    memory; a file the user's own settings name is).
    """

    text: str | None
    skip: str | None = None
    warning: str | None = None
    missing: bool = False
    signature: FileSignature | None = None
    size: int = 0
    cut: str | None = None
    owner: int | None = None  # the owner's uid when it is neither this user nor root (ownership.foreign_owner)


def signature_of(path: str) -> FileSignature | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileSignature(st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev, st.st_uid)


def over_limit(size: int, max_bytes: int) -> bool:
    """Whether a memory file of ``size`` bytes is over ``memory.maxFileBytes`` (readers cut it there)."""
    return size > max_bytes


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
    sig = FileSignature(st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev, st.st_uid)
    if stat.S_ISDIR(st.st_mode):
        return ReadOutcome(None, skip="not a regular file (a directory)", signature=sig)
    if not stat.S_ISREG(st.st_mode):
        return ReadOutcome(None, skip="not a regular file", signature=sig)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return ReadOutcome(None, skip=f"unreadable ({exc.strerror or exc})", signature=sig)
    try:
        data = _read_fd(fd, max_bytes + 1, st.st_size)  # never more than the cap (a file may grow meanwhile)
    except OSError as exc:
        return ReadOutcome(None, skip=f"unreadable ({exc.strerror or exc})", signature=sig)
    finally:
        os.close(fd)
    cut = None
    if len(data) > max_bytes:
        size = max(st.st_size, len(data))
        data = cut_at_line(data, max_bytes)
        cut = f"memory.maxFileBytes ({max_bytes}): {len(data)} of {size} bytes included"
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
    text = normalise_newlines(text)
    if cut is not None:
        text = text.rstrip("\n") + "\n" + cut_marker(cut) + "\n"
    return ReadOutcome(text, warning=warning, signature=sig, size=len(data), cut=cut, owner=foreign_owner(st))


def _read_fd(fd: int, limit: int, size: int) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (plain reads: no buffered file object for one small file).

    Stops once the ``size`` ``stat`` gave is read, without asking again for an end of file: the
    signature taken with that ``stat`` says this size, so a file that grew meanwhile differs from it
    next time and is read again."""
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        # Ask for what stat said is left (os.read allocates what it is asked for: the whole
        # memory.maxFileBytes for a 100-byte file), or 64 KiB at a time when it said nothing.
        want = size - got if size > got else 1 << 16
        chunk = os.read(fd, min(limit - got, want, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
        if got >= size > 0:
            break
    return b"".join(chunks)


def cut_at_line(data: bytes, limit: int) -> bytes:
    """The longest prefix of ``data`` of at most ``limit`` bytes that ends at a line end (or, for one
    long line, at a character boundary)."""
    head = data[:limit]
    end = head.rfind(b"\n")
    if end >= 0:
        return head[: end + 1]
    return head.decode("utf-8", errors="ignore").encode("utf-8")
