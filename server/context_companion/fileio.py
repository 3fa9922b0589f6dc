"""Safe file writes, only inside the roots.

Every write goes through :func:`~context_companion.containment.place` first: a target whose
real path (every symlink of the file and its folders resolved) lies outside the roots, or a
dangling symlink, is refused before anything is created. An allowed target is written as its
real file, in place: a symlink stays a symlink and points at the new content. The new content
goes to a temporary file created with ``O_EXCL|O_NOFOLLOW`` in the real file's own folder
(opened once and used by descriptor, so a folder swapped for a symlink meanwhile cannot
redirect the write), is fsynced, given the old file's mode, and renamed over it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from .containment import place
from .errors import FileWriteError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def os_reason(exc: OSError) -> str:
    """The operating system's words for ``exc`` ("No space left on device"), without the path."""
    return exc.strerror or type(exc).__name__


class NotRegular(ValueError):
    """A path that is no regular file (its kind in words: ``a FIFO (named pipe)``, ``a folder``, ...), or one over
    the size cap (``larger than N MiB``)."""


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words, when it is no regular file."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_regular(path: str | Path, max_bytes: int, *, follow: bool = True) -> bytes | None:
    """The bytes of the regular file at ``path`` (None: there is none), never blocking: a FIFO, socket or
    device is refused by its type before it is opened (:class:`NotRegular`), and the file is opened without
    blocking and checked again; at most ``max_bytes`` (more: :class:`NotRegular`). ``follow`` False refuses a
    symlink at ``path``. Raises ``OSError`` when it cannot be read."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        raise NotRegular(kind_of(st.st_mode))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular("not a regular file")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise NotRegular(f"larger than {max_bytes // (1024 * 1024)} MiB")
    return b"".join(chunks)


def resolve_for_write(path: str | Path, roots: Sequence[str]) -> Path:
    """The real file to write for ``path`` (roots are real paths). Raises :class:`FileWriteError`
    naming ``path`` and the reason when it leads outside the roots or is a dangling symlink."""
    placed = place(path, roots, writing=True)
    if placed.refusal is not None:
        where = f" (it resolves to {placed.real})" if placed.real != placed.path else ""
        raise FileWriteError(path, f"refused to write: {placed.refusal}{where}")
    return Path(placed.real)


@contextlib.contextmanager
def open_directory(directory: Path, shown: str | Path, *, lock: bool = False) -> Iterator[int]:
    """A descriptor on ``directory`` (a real path), optionally ``flock``ed for the duration.

    ``flock`` locks belong to the open file description, and each call opens the directory
    anew, so the lock serialises threads of this process as well as other processes.
    """
    if not os.supports_dir_fd:  # Windows: no descriptor of a folder to write through
        raise FileWriteError(shown, "cannot write: writing files is supported on Linux and macOS only")
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise FileWriteError(shown, f"cannot open the folder {directory}: {os_reason(exc)}") from None
    try:
        if lock and sys.platform != "win32":
            import fcntl

            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX)
        # The folder was checked by path; make sure the descriptor is still that folder and no
        # component of its path became a symlink since.
        try:
            same = os.path.realpath(directory) == os.fspath(directory) and os.path.samestat(
                os.fstat(fd), os.stat(directory)
            )
        except OSError:
            same = False
        if not same:
            raise FileWriteError(shown, f"refused to write: the folder {directory} changed while writing")
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def stat_in(dir_fd: int, name: str, shown: str | Path) -> os.stat_result | None:
    """The ``lstat`` of ``name`` in the folder (None when missing); refuses anything but a regular file."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileWriteError(shown, f"cannot read: {os_reason(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise FileWriteError(shown, "refused to write: the file became a symlink while writing")
    if not stat.S_ISREG(st.st_mode):
        raise FileWriteError(shown, "not a regular file")
    return st


def read_in(dir_fd: int, name: str, shown: str | Path) -> bytes:
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0), dir_fd=dir_fd)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise FileWriteError(shown, f"cannot read: {os_reason(exc)}") from None


def replace_in(dir_fd: int, name: str, data: bytes, old: os.stat_result | None, shown: str | Path) -> None:
    """Atomically give ``name`` (in the folder of ``dir_fd``) the content ``data``.

    The old file's mode (and owner, when running as root) is kept; a new file gets 0666 minus
    the umask. On any failure the temporary file is removed and ``name`` is unchanged.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for _ in range(8):
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise FileWriteError(shown, f"cannot write: {os_reason(exc)}") from None
    else:  # pragma: no cover - eight random names taken
        raise FileWriteError(shown, "cannot write: no free temporary file name")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if old is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0:
                    with contextlib.suppress(OSError):
                        os.fchown(fh.fileno(), old.st_uid, old.st_gid)
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise FileWriteError(shown, f"cannot write: {os_reason(exc)}") from None
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def make_folder(directory: Path, shown: str | Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileWriteError(shown, f"cannot create {directory}: {os_reason(exc)}") from None


def atomic_write_text(path: Path, text: str, roots: Sequence[str], *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` so readers see the old or the new content, never a part.

    ``roots`` are the real paths the file must resolve into. Returns the real file written.
    Raises :class:`FileWriteError` (refused, or the OS's reason) with nothing changed.
    """
    real = resolve_for_write(path, roots)
    make_folder(real.parent, path)
    with open_directory(real.parent, path) as dir_fd:
        old = stat_in(dir_fd, real.name, path)
        replace_in(dir_fd, real.name, text.encode(encoding), old, path)
    return real
