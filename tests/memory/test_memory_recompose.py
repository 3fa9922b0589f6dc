"""After an edit, the store's answer equals composing from scratch, whether it patched or not.

The store patches its last composition when files changed only in their text (memory.recompose).
These tests edit files of a workspace that has every case a patch must notice (imports, a file
whose text another repeats, JIT files, rules, caps) and compare each answer with the one a fresh
store gives for the same files on disk.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from context_companion.memory import MemoryStore
from context_companion.memory import store as store_module
from context_companion.settings import MemorySettings
from context_companion.tokens import Tokenizer
from hypothesis import example, given, settings
from hypothesis import strategies as st

FILES = {
    "AGENTS.md": "# Guide\n\nRun the tests.\n\n@docs/style.md\n",
    "CLAUDE.md": "# Claude\n\nBe brief.\n",
    "GEMINI.md": "Same words as the copy.\n",
    "docs/style.md": "Use four spaces.\n",
    "pkg/AGENTS.md": "# Package\n\nPackage notes.\n",
    "pkg/sub/AGENTS.md": "Same words as the copy.\n",
    "other/AGENTS.md": "Other notes.\n",
    ".cursor/rules/py.mdc": "---\nglobs: '**/*.py'\n---\nPython rule.\n",
    "pkg/mod.py": "x = 1\n",
    ".git/": "",
}
EDITABLE = ["AGENTS.md", "CLAUDE.md", "GEMINI.md", "docs/style.md", "pkg/AGENTS.md", "pkg/sub/AGENTS.md"]
TEXTS = [
    "Run the tests.\n",
    "Run the tests.\nAnd the linters.\n",
    "# Guide\n\nRun the tests.\n\n@docs/style.md\n\nMore.\n",
    "Same words as the copy.\n",
    "Same   words as\nthe copy.\n",  # the same text once whitespace is collapsed
    "Use four spaces.\n",
    "Other notes.\n",
    "",
    "   \n",
    "@docs/style.md\n",
    "@CLAUDE.md\n\nSee above.\n",
    "---\nname: x\n---\nFrontmatter in a memory file.\n",
    "A much longer text. " * 40 + "\n",
    "One two three four five six seven eight nine.\n",  # the same first words, different ends
    "One two three four five six seven eight ten.\n",
    "One two three four five six seven\neight ten.\n",
    "@docs/style.md\n\n" + "Longer, with the same import. " * 8 + "\n",
]
SHORTER = "@docs/style.md\n"  # AGENTS.md shrinks and keeps its import
LONGER = TEXTS[-1]  # AGENTS.md grows and keeps its import
OPEN = [(), ("pkg/mod.py",), ("pkg/sub/x.ts", "pkg/mod.py")]
# The workspace's memory text starts at 376 bytes and 89 estimated tokens: caps below, near and above.
CAPS = [
    {},
    {"max_tokens": 60},
    {"max_tokens": 90},
    {"max_tokens": 200},
    {"max_total_bytes": 300},
    {"max_total_bytes": 400},
    {"max_total_bytes": 2000},
]


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def new_store(root: Path, home: Path, caps: dict[str, Any]) -> MemoryStore:
    store = MemoryStore(
        MemorySettings(**caps),
        [root],
        count_tokens=Tokenizer("estimate").count,
        global_dir=home / "global",
        home=home,
    )
    store.load()
    return store


def answer(store: MemoryStore, root: Path, opened: tuple[str, ...]) -> tuple[Any, ...]:
    paths = [root / p for p in opened]
    result = store.compose(paths, paths[0] if paths else None)
    return result, result.seen, dict(result.seen_at)


@settings(max_examples=200, deadline=None)
@example({"max_total_bytes": 300}, (), [("AGENTS.md", SHORTER)])  # a file the cap dropped fits again
@example({"max_tokens": 60}, (), [("AGENTS.md", SHORTER)])
@example({"max_total_bytes": 400}, (), [("AGENTS.md", LONGER)])  # the cap starts to act
@example({"max_tokens": 90}, (), [("AGENTS.md", LONGER)])
@given(
    st.sampled_from(CAPS),
    st.sampled_from(OPEN),
    st.lists(st.tuples(st.sampled_from(EDITABLE), st.sampled_from(TEXTS)), min_size=1, max_size=6),
)
def test_answer_after_text_edits_equals_a_fresh_composition(caps, opened, edits):
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "ws", Path(tmp) / "home"
        write_tree(root, FILES)
        home.mkdir(exist_ok=True)
        store = new_store(root, home, caps)
        answer(store, root, opened)  # the composition later edits patch
        for rel, text in edits:
            (root / rel).write_text(text, encoding="utf-8")
            store.apply_changes([root / rel])
            assert answer(store, root, opened) == answer(new_store(root, home, caps), root, opened)


def test_an_edit_to_an_included_file_is_patched_not_composed_again(tmp_path, monkeypatch):
    root, home = tmp_path / "ws", tmp_path / "home"
    write_tree(root, FILES)
    home.mkdir(exist_ok=True)
    store = new_store(root, home, {})
    first = store.compose([], None)
    calls: list[object] = []
    real = store_module.compose_traced
    monkeypatch.setattr(store_module, "compose_traced", lambda *a: calls.append(a) or real(*a))

    (root / "AGENTS.md").write_text("# Guide\n\nRun the tests, then the linters.\n\n@docs/style.md\n")
    store.apply_changes([root / "AGENTS.md"])
    patched = store.compose([], None)
    assert calls == []
    assert "then the linters" in patched.text and patched.text != first.text
    tokens = {f.path: f.tokens for f in patched.files}
    assert tokens["AGENTS.md"] > {f.path: f.tokens for f in first.files}["AGENTS.md"]

    # A text that now repeats another included file's changes a verdict: composed again.
    (root / "CLAUDE.md").write_text("Same words as the copy.\n")
    store.apply_changes([root / "CLAUDE.md"])
    again = store.compose([], None)
    assert len(calls) == 1
    verdicts = {f.path: f.reason for f in again.files}
    assert verdicts["CLAUDE.md"] == "not included: same text as GEMINI.md"
