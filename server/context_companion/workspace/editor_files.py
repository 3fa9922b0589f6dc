"""The editor's documents as places on disk and as names an agent's text may show.

The editor state keeps what the client sent (URIs); memory tiers and rules need absolute paths, a
hook's text needs each file relative to its workspace folder, and a command's ``activeFile`` may be
given either way. Pure functions over the :class:`~..context.state.EditorState` and the folders:
the state they read stays the editor's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..context.state import EditorState
from ..errors import ParamsError
from ..uris import uri_to_path


def open_paths(editor: EditorState) -> tuple[list[Path], Path | None]:
    """The open documents' paths and the active one's, those with a place on disk only."""
    paths = [Path(p) for p in editor.open_paths()]
    active = editor.active_path()
    # untitled: and other non-file documents have no place on disk: they feed no memory tier
    active_path = Path(active) if active and Path(active).is_absolute() else None
    return [p for p in paths if p.is_absolute()], active_path


def folder_relative(path: Path, folders: Sequence[Path]) -> str:
    """``path`` relative to the first folder holding it (POSIX separators), else as it is."""
    for folder in folders:
        if path.is_relative_to(folder):
            return path.relative_to(folder).as_posix()
    return str(path)


def shown_files(
    files: tuple[list[Path], Path | None], folders: Sequence[Path], exclude: Sequence[str]
) -> tuple[str | None, list[str]]:
    """The active file and the open files as a hook's text names them: relative to their workspace
    folder, never a ``context.exclude`` file (a secret's name stays out too)."""
    from ..exclusion import exclude_matcher  # imported when a hook asks: the editor paths need none of it

    secret = exclude_matcher(tuple(exclude)).matches

    def shown(path: Path) -> str | None:
        name = folder_relative(path, folders)
        return None if secret(name) else name

    paths, active = files
    named = [n for n in (shown(p) for p in paths) if n is not None]
    return (shown(active) if active is not None else None), named


def resolve_file(raw: str, folders: Sequence[Path]) -> Path:
    """A path or file URI given by a caller, relative to the first folder when not absolute.
    Raises ``ParamsError`` for a relative path with no folder to be relative to."""
    if raw.startswith("file:"):
        raw = uri_to_path(raw)
    path = Path(raw).expanduser()
    if not path.is_absolute():
        if not folders:
            raise ParamsError(f"activeFile: {raw!r} is relative and there is no workspace folder")
        path = folders[0] / path
    return path
