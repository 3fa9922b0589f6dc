"""containment.realpath answers what os.path.realpath answers, for every kind of path."""

from __future__ import annotations

import os
from pathlib import Path

from context_companion.containment import realpath
from hypothesis import given, settings
from hypothesis import strategies as st


def make_tree(root: Path) -> list[str]:
    """Files, folders, symlinks to each (relative and absolute, chained, looping, dangling, leading
    out of the tree) and the paths to ask about."""
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.md").write_text("x")
    (root / "out").mkdir()
    (root / "out" / "secret").write_text("s")
    os.symlink("a/b", root / "lb")  # relative, to a folder
    os.symlink(root / "a" / "b" / "f.md", root / "lf")  # absolute, to a file
    os.symlink("lf", root / "chain")  # a link to a link
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink("nowhere", root / "dangling")
    os.symlink("../out", root / "a" / "up")  # out of its folder
    os.mkfifo(root / "fifo")
    return [
        "a/b/f.md",
        "a/b",
        "lb/f.md",
        "lf",
        "chain",
        "loop1",
        "dangling",
        "dangling/x",
        "a/up/secret",
        "a/b/../b/f.md",
        "a/./b//f.md",
        "missing/file.md",
        "lb/../a",
        "fifo",
        "",
    ]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=14), min_size=1, max_size=3))
def test_realpath_matches_os_path_realpath(tmp_path_factory, picks):
    root = tmp_path_factory.mktemp("links")
    paths = make_tree(root)
    for k in picks:
        path = os.path.join(root, *[paths[k]] if paths[k] else [])
        assert realpath(path) == os.path.realpath(path), path
