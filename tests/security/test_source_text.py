"""The text of a memory file handed out as is (MCP memory resources, Claude Code diagnostics) goes
through the reader's checks: never through a link out of the workspace, never a FIFO, capped."""

from __future__ import annotations

import os
import time
from pathlib import Path

from context_companion.memory import MemoryStore
from context_companion.settings import MemorySettings
from context_companion.tokens import Tokenizer


def store(ws: Path, home: Path, **settings: int) -> MemoryStore:
    s = MemoryStore(
        MemorySettings(**settings), [ws], count_tokens=Tokenizer("estimate").count, global_dir=home / "g", home=home
    )
    s.load()
    return s


def test_a_link_out_of_the_workspace_a_fifo_and_a_big_file(tmp_path: Path) -> None:
    ws, outside, home = tmp_path / "ws", tmp_path / "outside", tmp_path / "myhome"
    for d in (ws, outside, home):
        d.mkdir()
    (ws / ".git").mkdir()
    (outside / "id_rsa").write_text("TOP SECRET KEY\n")
    (ws / "AGENTS.md").symlink_to(outside / "id_rsa")
    os.mkfifo(ws / "CLAUDE.md")
    (ws / "GEMINI.md").write_text("line\n" * 10_000)
    s = store(ws, home, max_file_bytes=1000)

    text, why = s.source_text(ws / "AGENTS.md")
    assert text is None and "symlink leads outside the workspace" in why

    started = time.monotonic()
    text, why = s.source_text(ws / "CLAUDE.md")  # a FIFO: refused at once, never opened for reading
    assert text is None and "not a regular file" in why and time.monotonic() - started < 5

    text, why = s.source_text(ws / "GEMINI.md")
    assert text is not None and len(text.encode()) < 1200 and "memory.maxFileBytes (1000)" in text

    assert s.source_text(outside / "id_rsa") == (None, "not a memory file of this workspace")


def test_many_whole_document_selections_build_no_more_than_the_cap() -> None:
    """1,000 selections (the most a cursor message may carry), each the whole of a 2 MB document:
    the selected text is cut at context.maxSelectedChars without first joining 2 GB of copies."""
    from context_companion.context.state import TRUNCATION_MARK, EditorState, RawPosition
    from context_companion.settings import ContextSettings

    line = "y" * 199
    text = "\n".join([line] * 10_000)  # 2 MB
    editor = EditorState(ContextSettings(max_selected_chars=5_000))
    uri = "file:///w/big.txt"
    editor.open(uri)
    whole = (RawPosition(0, 0), RawPosition(9_999, 199))
    editor.set_cursor(uri, RawPosition(0, 0), [whole] * 1000)
    started = time.monotonic()
    selection = editor.selection(lambda u: text if u == uri else None)
    assert time.monotonic() - started < 2
    assert selection is not None and selection.text.endswith(TRUNCATION_MARK)
    assert len(selection.text) == 5_000 + len(TRUNCATION_MARK)


def test_imports_above_the_folder_obey_the_repository_ignore_files_and_exclusions(tmp_path: Path) -> None:
    """A workspace folder inside a repository may import up to the repository's top: files there
    that git ignores, or that context.exclude names by path, stay out as they do inside the folder."""
    repo, home = tmp_path / "r", tmp_path / "myhome"
    home.mkdir()
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("private/\n")
    (repo / "private").mkdir()
    (repo / "private" / "notes.md").write_text("GITIGNORED_SECRET=abc\n")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "notes.md").write_text("FOLDER_EXCLUDED\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("Use four spaces.\n")
    app = repo / "app"
    app.mkdir()
    (app / "AGENTS.md").write_text("@../private/notes.md\n@../secrets/notes.md\n@../docs/style.md\n")
    s = MemoryStore(
        MemorySettings(),
        [app],
        count_tokens=Tokenizer("estimate").count,
        global_dir=home / "g",
        home=home,
        exclude=[".env", "secrets/"],
    )
    text = s.compose([], None).text
    assert "Use four spaces." in text  # an import above the folder still works
    assert "GITIGNORED_SECRET" not in text and "FOLDER_EXCLUDED" not in text
