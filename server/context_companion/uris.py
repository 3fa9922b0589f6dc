"""Document URIs: one spelling for each document, and its path.

Editors spell the same file differently: VS Code sends ``file:///home/ada/My%20Projects/a.py``,
Neovim leaves ``@``, ``:`` and ``+`` as they are and encodes the rest, a hand-made client may send
a space, a non-ASCII letter or even ``#`` raw, and hex digits come in either case. Every URI a
client or an agent hands in goes through :func:`normalize_uri` once, where it enters (the
handlers, the document store, the bridges' tools), so that everything behind the edge (the editor
state, the open texts, diagnostics, the bridges) compares plain strings.

The one spelling of a ``file:`` URI is what :meth:`pathlib.PurePosixPath.as_uri` gives for its
path (and what VS Code sends): every byte of the UTF-8 path percent-encoded except letters,
digits, ``-._~`` and ``/``. Everything after ``file://`` and the authority is the path: a ``#``
or a ``?`` there is part of a file name (an LSP document has no fragment or query). URIs of other
schemes (``untitled:``, notebook cells) are kept as sent: nothing but the client reads them.
"""

from __future__ import annotations

import os
from urllib.parse import quote_from_bytes, unquote_to_bytes

FILE = "file:"


def _split_file_uri(uri: str) -> tuple[str, str]:
    """(authority, encoded path) of a ``file:`` URI, the path taken whole (``#`` and ``?`` included)."""
    rest = uri[len(FILE) :]
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        return authority, slash + path
    return "", rest


def _decode(encoded: str) -> str:
    # Bytes first: a file name that is not UTF-8 keeps its bytes (os.fsdecode's surrogate escapes).
    return os.fsdecode(unquote_to_bytes(encoded))


def normalize_uri(uri: str) -> str:
    """The one spelling of a document URI (see the module docstring); idempotent."""
    if uri[:5].lower() != FILE:
        return uri
    authority, encoded = _split_file_uri(uri)
    if authority.lower() == "localhost":
        authority = ""
    return "file://" + authority + quote_from_bytes(os.fsencode(_decode(encoded) or "/"), "/")


def uri_path(uri: str) -> str:
    """The decoded path part of a ``file:`` URI as written (``/C:/x`` stays so); ``#`` and ``?`` included."""
    return _decode(_split_file_uri(uri)[1])


def uri_to_path(uri: str) -> str:
    """Filesystem path of a ``file:`` URI; other schemes (``untitled:``) are reported as the URI."""
    if uri[:5].lower() != FILE:
        return uri
    authority, encoded = _split_file_uri(uri)
    path = _decode(encoded)
    if os.name == "nt" and len(path) >= 3 and path[0] == "/" and path[1].isalpha() and path[2] == ":":
        path = path[1:]  # /C:/x is C:/x on Windows; on POSIX /C:/x (or /0:) is a path of its own
    if authority and authority.lower() != "localhost":
        path = "//" + authority + path  # a UNC path
    return path


def path_to_uri(path: str | os.PathLike[str]) -> str:
    """The URI of an absolute path, in the one spelling (``Path(path).as_uri()`` on POSIX)."""
    return "file://" + quote_from_bytes(os.fsencode(os.fspath(path)), "/")
