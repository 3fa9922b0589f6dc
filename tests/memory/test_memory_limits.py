"""Limits: size, binary, non-UTF-8, unreadable and special files; the memory.maxTokens cap."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import pytest


def test_a_file_over_max_file_bytes_is_cut_at_a_line_with_a_marker(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "a" * 100, "GEMINI.md": "".join(f"line {i:03d}\n" for i in range(50))})
    result = make_store(ws, max_file_bytes=100).compose([])
    assert helpers.included(result) == ["AGENTS.md", "GEMINI.md"]
    assert "a" * 100 + "\n--- End" in result.text and helpers.info(result, "AGENTS.md").cut is None  # at the cap
    gemini = helpers.info(result, "GEMINI.md")
    assert gemini.cut == "memory.maxFileBytes (100): 99 of 450 bytes included"
    assert gemini.to_wire()["cut"] == gemini.cut
    kept = "".join(f"line {i:03d}\n" for i in range(11))  # 11 whole lines = 99 bytes
    marker = "[… cut here by memory.maxFileBytes (100): 99 of 450 bytes included; the rest is not included]"
    assert f"--- Context from: GEMINI.md ---\n{kept}{marker}\n--- End of Context from: GEMINI.md ---" in result.text
    assert "GEMINI.md: cut at memory.maxFileBytes (100): 99 of 450 bytes included" in result.warnings


def test_a_global_file_over_the_cap_is_cut_never_dropped(tmp_path, tree, make_store, helpers, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    tree(global_dir, {"AGENTS.md": "- fact\n" * 50_000})  # 350 kB: an addMemory file grown over the years
    result = make_store(ws).compose([])
    info = helpers.info(result, "~/.config/context-companion/AGENTS.md")
    assert info.included and info.cut is not None and info.cut.startswith("memory.maxFileBytes (262144)")
    assert 262_000 < len(result.text.encode()) < 263_000 and "[… cut here by memory.maxFileBytes" in result.text
    assert any(w.startswith("~/.config/context-companion/AGENTS.md: cut at") for w in result.warnings)


def test_max_total_bytes_cuts_the_block_that_crosses_it_and_drops_the_rest(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "A line.\n" * 50, "GEMINI.md": "B line.\n" * 50, "CLAUDE.md": "C"})
    result = make_store(ws, max_total_bytes=800).compose([])
    assert len(result.text.encode()) <= 800
    assert helpers.included(result) == ["AGENTS.md", "GEMINI.md"]
    gemini = helpers.info(result, "GEMINI.md")
    assert gemini.cut == "memory.maxTotalBytes (800)" and gemini.tokens > 0
    assert result.text.endswith(
        "B line.\n[… cut here by memory.maxTotalBytes (800); the rest is not included]\n"
        "--- End of Context from: GEMINI.md ---"
    )
    assert helpers.info(result, "CLAUDE.md").reason == "dropped: memory.maxTotalBytes (800) reached"
    assert "GEMINI.md: cut at memory.maxTotalBytes (800)" in result.warnings
    assert result.dropped == ("CLAUDE.md",)


def test_binary_file_is_skipped(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": b"text then \x00 binary", "sub/AGENTS.md": b"\x89PNG\r\n\x1a\n\x00\x00"})
    result = make_store(ws).compose([ws / "sub/x"])
    assert result.text == ""
    assert helpers.info(result, "AGENTS.md").reason == "skipped: binary file (NUL byte)"
    assert helpers.info(result, "sub/AGENTS.md").reason == "skipped: binary file (NUL byte)"


def test_non_utf8_is_replaced_and_warned(tmp_path, tree, make_store, helpers, caplog):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "caf\xe9 latin-1\r\nline two\r\n".encode("latin-1")})
    with caplog.at_level(logging.INFO, logger="context_companion.memory"):  # -v: the user is told by warnings
        store = make_store(ws)
        result = store.compose([])
        store.apply_changes([ws / ".gitignore"])  # a re-walk: the unchanged file is not read again
    assert helpers.info(result, "AGENTS.md").included
    assert "caf\ufffd latin-1\nline two" in result.text  # replaced, CRLF normalised
    assert any(w.startswith("AGENTS.md: not valid UTF-8") and "replaced" in w for w in result.warnings)
    logged = [r.getMessage() for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert logged == [
        f"memory file {ws / 'AGENTS.md'}: not valid UTF-8 (first bad byte at offset 3); bad bytes replaced"
    ]


def test_bom_and_empty_files(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "\ufeffwith bom", "CLAUDE.md": "  \n\n"})
    result = make_store(ws).compose([])
    assert "--- Context from: AGENTS.md ---\nwith bom\n" in result.text
    assert helpers.info(result, "CLAUDE.md").reason == "not included: empty"


def test_directory_named_like_a_memory_file_is_skipped(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md/": "", "CLAUDE.md": "fine", "src/GEMINI.md/inner.txt": "x"})
    result = make_store(ws).compose([ws / "src/a"])
    assert helpers.included(result) == ["CLAUDE.md"]
    assert helpers.info(result, "AGENTS.md").reason == "skipped: not a regular file (a directory)"
    assert "src/GEMINI.md" not in [f.path for f in result.files]  # the index lists files only


def test_fifo_named_like_a_memory_file_does_not_hang(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"CLAUDE.md": "fine"})
    os.mkfifo(ws / "AGENTS.md")
    result = make_store(ws).compose([])
    assert helpers.info(result, "AGENTS.md").reason == "skipped: not a regular file"
    assert helpers.included(result) == ["CLAUDE.md"]


@pytest.fixture
def world_readable_dir(monkeypatch):
    """A directory outside the root-only pytest temp dir, so an unprivileged euid can reach it (and, being
    outside the run's sealed folder, the ceiling of the search for a project root)."""
    d = Path(tempfile.mkdtemp(prefix="cc-mem-"))
    d.chmod(0o755)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_unreadable_file_is_skipped(world_readable_dir, tree, make_store, helpers):
    ws = world_readable_dir / "ws"
    tree(ws, {"AGENTS.md": "readable", "CLAUDE.md": "locked away"})
    ws.chmod(0o755)
    (ws / "AGENTS.md").chmod(0o644)
    (ws / "CLAUDE.md").chmod(0o000)
    dropped = False
    if os.geteuid() == 0:
        os.seteuid(65534)  # as root, chmod 000 does not stop us: read as "nobody"
        dropped = True
    try:
        with pytest.raises(PermissionError):
            (ws / "CLAUDE.md").read_bytes()
        result = make_store(ws).compose([])
    finally:
        if dropped:
            os.seteuid(0)
    assert helpers.included(result) == ["AGENTS.md"]
    assert helpers.info(result, "CLAUDE.md").reason == "skipped: unreadable (Permission denied)"
    assert "CLAUDE.md: skipped: unreadable (Permission denied)" in result.warnings


def _sizes(result):
    return {f.path: f.tokens for f in result.files}


def test_max_tokens_drops_rules_then_jit_then_farthest_workspace(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(
        repo,
        {
            ".git/": "",
            "AGENTS.md": "far " * 40,
            "ws/AGENTS.md": "near " * 40,
            "ws/src/AGENTS.md": "src " * 40,
            "ws/src/deep/AGENTS.md": "deep " * 40,
            "ws/.cursor/rules/r1.mdc": "---\nalwaysApply: true\n---\n" + "rone " * 40,
            "ws/.cursor/rules/r2.mdc": "---\nalwaysApply: true\n---\n" + "rtwo " * 40,
        },
    )
    ws = repo / "ws"
    open_files = [ws / "src/deep/x.py"]
    full = make_store(ws).compose(open_files)
    sizes = _sizes(full)
    assert full.dropped == ()
    order = [
        "../AGENTS.md",
        "AGENTS.md",
        "src/AGENTS.md",
        "src/deep/AGENTS.md",
        ".cursor/rules/r1.mdc",
        ".cursor/rules/r2.mdc",
    ]
    assert helpers.included(full) == order

    def capped(cap):
        return make_store(ws, max_tokens=cap).compose(open_files)

    # Room for everything but a little: the last rule goes first.
    r = capped(sum(sizes.values()) - 5)
    assert r.dropped == (".cursor/rules/r2.mdc",)
    assert (
        helpers.info(r, ".cursor/rules/r2.mdc").reason
        == f"dropped: memory.maxTokens ({sum(sizes.values()) - 5}) reached"
    )
    # Room for the two workspace files and one JIT file: rules go, then the farthest JIT file.
    cap = sizes["../AGENTS.md"] + sizes["AGENTS.md"] + sizes["src/deep/AGENTS.md"] + 5
    r = capped(cap)
    assert r.dropped == (".cursor/rules/r2.mdc", ".cursor/rules/r1.mdc", "src/AGENTS.md")
    assert helpers.included(r) == ["../AGENTS.md", "AGENTS.md", "src/deep/AGENTS.md"]
    # Room for one workspace file: the farthest one (repo root) goes before the folder's own.
    r = capped(sizes["AGENTS.md"] + 3)
    assert helpers.included(r) == ["AGENTS.md"]
    assert r.dropped[-1] == "../AGENTS.md"
    # Whatever the cap, the included files fit in it.
    for cap in (1, 50, 120, 300, 700):
        result = capped(cap)
        assert sum(f.tokens for f in result.files if f.included) <= cap


def test_max_tokens_counts_the_text_with_a_real_tokenizer(tmp_path, tree, make_store, tokenizer):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "alpha " * 30, "a/AGENTS.md": "beta " * 30, "b/AGENTS.md": "gamma " * 30})
    open_files = [ws / "a/x", ws / "b/x"]
    full = make_store(ws).compose(open_files)
    for cap in range(10, tokenizer.count(full.text) + 10, 7):
        result = make_store(ws, max_tokens=cap).compose(open_files)
        assert tokenizer.count(result.text) <= cap
        assert set(result.dropped) == {f.path for f in result.files if f.reason.startswith("dropped:")}


def test_max_tokens_drops_the_description_listing_first(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            "AGENTS.md": "keep me",
            ".cursor/rules/db.mdc": "---\ndescription: " + "long description " * 20 + "\n---\nbody",
        },
    )
    full = make_store(ws).compose([])
    assert "Rules available on request" in full.text
    cap = helpers.info(full, "AGENTS.md").tokens + 2
    r = make_store(ws, max_tokens=cap).compose([])
    assert "Rules available on request" not in r.text and "keep me" in r.text
    assert r.dropped == (".cursor/rules/db.mdc",)


def test_one_expansion_stops_inlining_at_max_total_bytes(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "@a.md\n@b.md\n@c.md\n", "a.md": "a\n" * 200, "b.md": "b\n" * 200, "c.md": "c\n" * 200})
    store = make_store(ws, max_total_bytes=1000)
    result = store.compose([])
    assert result.text.count("a\n") == 200 and result.text.count("b\n") == 200
    assert "\n@c.md\n" in result.text and "c\nc\n" not in result.text  # the token stays as written
    assert "AGENTS.md: import c.md failed: over memory.maxTotalBytes" in result.warnings
    codes = [d.code for d in store.analyze(ws / "AGENTS.md", "@a.md\n@b.md\n@c.md\n").diagnostics]
    assert codes == ["import-over-total"]


def test_small_files_are_read_at_their_size_not_at_the_caps(tmp_path, tree, make_store, helpers):
    """Reading a file used to ask for its cap: 16 MiB for every .gitignore and git config file (on
    every change batch that reloads them), memory.maxFileBytes for every memory file. Each such
    buffer is taken and given back at once, but it left the C heap larger after many (issue 26: the
    RSS of a working day grew in steps of about 2 MiB). Now a read asks for what stat says."""
    import tracemalloc

    from context_companion.ignore import load_ignore_file, read_core_excludes_file

    ws = tmp_path / "ws"
    files = {
        "AGENTS.md": "Root memory.\n",
        "sub/AGENTS.md": "Sub memory.\n",
        ".gitignore": "build/\n*.log\n",
        "sub/.gitignore": "tmp/\n",
        ".git/config": "[core]\n\texcludesFile = ~/.gitignore_global\n",
        ".git/info/exclude": "scratch/\n",
    }
    tree(ws, files)
    tracemalloc.start()
    try:
        for i in range(3):
            store = make_store(ws)
            assert helpers.included(store.compose([])) == ["AGENTS.md"]
            load_ignore_file(str(ws / ".git/info/exclude"))  # a fresh version each time: read again
            (ws / ".git/info/exclude").write_text("scratch/\n# again\n" * (i + 1), encoding="utf-8")
            assert read_core_excludes_file(str(ws / ".git/config")) == "~/.gitignore_global"
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"  # was over 16 MiB
