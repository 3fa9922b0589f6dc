"""Whose a folder or file is, and where a search upward for the project root stops.

A folder or file owned by another user is no project and no memory (as git refuses a repository of
another user, "dubious ownership", ``safe.directory``): another local user who runs ``mkdir /tmp/.git``
and writes ``/tmp/AGENTS.md`` must not speak to the agents this user starts in ``/tmp/work``. The rule
is "owned by neither this user nor root": root owns ``/``, ``/tmp`` and the system's files, and could
change anything anyway. Where the system has no user ids (Windows: Python's ``st_uid`` is always 0),
the rule is not applied (:data:`MY_UID` is None there; see docs/reliability.md, "Platforms").

The search upward (:func:`find_marker`) is git's: from a folder up to ``/``, the nearest folder holding
a marker (``.git``) is the root, unless that marker or its folder is another user's, which ends the
search with no root (git stops there too, it does not look further up). It never goes up into a folder
named in ``GIT_CEILING_DIRECTORIES`` (git's variable: colon-separated absolute paths; the start folder
itself is always looked at). Light: imports ``os`` only (the agent hook's quiet path).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

_geteuid = getattr(os, "geteuid", None)
MY_UID: int | None = _geteuid() if _geteuid is not None else None  # None where there are no user ids (Windows)


def foreign_owner(st: os.stat_result) -> int | None:
    """The owner's uid when ``st`` (a stat result the caller already has) is owned by neither this
    user nor root; None when it may be trusted (or where there are no user ids)."""
    if MY_UID is None:
        return None
    uid = st.st_uid
    return None if uid == MY_UID or uid == 0 else uid


def foreign_path(path: str) -> int | None:
    """:func:`foreign_owner` of ``path`` (not followed if a symlink); None when it is missing."""
    if MY_UID is None:
        return None
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return None
    return foreign_owner(st)


def owned_by_other(uid: int) -> str:
    """The reason shown for a skipped file or folder (one wording everywhere)."""
    return f"owned by another user (uid {uid})"


def ceilings() -> frozenset[str]:
    """The folders of ``GIT_CEILING_DIRECTORIES`` (absolute only; each as written and resolved, as git
    resolves them unless they follow an empty entry)."""
    raw = os.environ.get("GIT_CEILING_DIRECTORIES", "")
    if not raw:
        return frozenset()
    out: set[str] = set()
    resolve = True
    for item in raw.split(os.pathsep):
        if not item:
            resolve = False  # git: the entries after an empty one are not resolved
            continue
        if not os.path.isabs(item):
            continue
        path = os.path.normpath(item)
        out.add(path)
        if resolve:
            out.add(os.path.realpath(path))
    return frozenset(out)


class Found:
    """What :func:`find_marker` found: the ``root`` (None: none), and ``refused``: one line for the
    folder it would have taken but is another user's (None when nothing was refused)."""

    __slots__ = ("refused", "root")

    def __init__(self, root: str | None, refused: str | None = None) -> None:
        self.root = root
        self.refused = refused


def find_marker(start: str, markers: Sequence[str]) -> Found:
    """The nearest folder from ``start`` up holding one of ``markers`` (see the module docstring)."""
    if not markers:
        return Found(None)
    ceiling = ceilings()
    current = start
    while True:
        for marker in markers:
            path = os.path.join(current, marker)
            try:
                st = os.lstat(path)
            except (OSError, ValueError):
                continue
            uid, where = foreign_owner(st), path
            if uid is None:  # the marker is ours: its folder (the working tree) must be too, as git checks
                uid, where = foreign_path(current), current
            if uid is not None:
                why = f"skipped {where}: {owned_by_other(uid)}; {current} is not taken as the project root"
                return Found(None, why)
            return Found(current)
        parent = os.path.dirname(current)
        if parent == current or parent in ceiling:
            return Found(None)
        current = parent
