"""``ide/contextUpdate``: the editor state Gemini CLI is told about, from the same
:class:`~context_companion.context.state.EditorState` the turn context is built from.

Shape (the CLI's IDE companion spec): absolute paths, most recently focused first, at most ten
files; only the active file carries ``cursor`` (1-based line and character) and ``selectedText``
(at most 16 KiB, longer cut with a marker); ``timestamp`` is when the file last came to the front.
Files that ``context.exclude`` names never appear, nor do documents without a place on disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...context.state import TRUNCATION_MARK, EditorState
from ...uris import uri_to_path

MAX_OPEN_FILES = 10
MAX_SELECTED_BYTES = 16 * 1024


def visible(editor: EditorState, path: str) -> bool:
    """The one test of whether a file may be shown to the CLI (``context.exclude``)."""
    return Path(path).is_absolute() and not editor.is_excluded(path)


def _cap_selection(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= MAX_SELECTED_BYTES:
        return text
    cut = data[: MAX_SELECTED_BYTES - len(TRUNCATION_MARK.encode())].decode("utf-8", "ignore")
    return cut + TRUNCATION_MARK


def workspace_state(
    editor: EditorState, texts: Mapping[str, str], encoding: str = "utf-16", *, enabled: bool = True
) -> dict[str, Any]:
    """The ``ide/contextUpdate`` params for the editor as it is now."""
    files: list[dict[str, Any]] = []
    if enabled:
        state = editor.snapshot(texts.get, encoding)
        active_path = state.active.path if state.active is not None else None
        for uri in editor.open_uris():  # MRU first
            path = uri_to_path(uri)
            if not visible(editor, path):
                continue
            entry: dict[str, Any] = {"path": path, "timestamp": editor.focused_ms(uri)}
            if not files and path == active_path and state.active is not None:
                entry["isActive"] = True
                if state.active.cursor is not None:
                    line, character = state.active.cursor
                    entry["cursor"] = {"line": line, "character": character}
                if state.active.selected_text:
                    entry["selectedText"] = _cap_selection(state.active.selected_text)
            files.append(entry)
            if len(files) == MAX_OPEN_FILES:
                break
    # The CLI sorts by timestamp and treats the newest as active: keep our order strictly.
    for i in range(1, len(files)):
        if files[i]["timestamp"] >= files[i - 1]["timestamp"]:
            files[i]["timestamp"] = files[i - 1]["timestamp"] - 1
    return {"workspaceState": {"openFiles": files, "isTrusted": True}}
