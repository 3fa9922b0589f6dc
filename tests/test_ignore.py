"""The gitignore-aware walker and its fast match path."""

from __future__ import annotations

import os

from context_companion.ignore import _check, walk
from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec import GitIgnoreSpec

PATTERNS = [
    "*.log",
    "!keep.log",
    "build/",
    "/root-only.txt",
    "docs/**/*.tmp",
    "a/*/c",
    "!a/x/c",
    "node_modules/",
    "*.py[co]",
]
segment = st.sampled_from(
    ["a", "b", "c", "x", "build", "docs", "keep.log", "z.log", "root-only.txt", "m.tmp", "f.pyc", "node_modules"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6),
    st.lists(segment, min_size=1, max_size=5),
    st.booleans(),
)
def test_fast_check_agrees_with_pathspec(lines, parts, is_dir):
    spec = GitIgnoreSpec.from_lines(lines)
    path = "/".join(parts) + ("/" if is_dir else "")
    assert _check(spec, path) == spec.check_file(path).include


def test_walk_prunes_ignored_dirs_honours_nested_files_and_skips_symlinked_dirs(workspace):
    tmp_path = workspace
    (tmp_path / ".gitignore").write_text("node_modules/\n*.log\n")
    for d in ("src/deep", "node_modules/pkg", "sub", ".git/objects"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "sub" / ".context-companion-ignore").write_text("private/\n")
    (tmp_path / "sub" / "private").mkdir()
    os.symlink(tmp_path, tmp_path / "src" / "loop")
    seen = [l.rel_dir for l in walk(tmp_path)]
    assert seen == ["", "src", "src/deep", "sub"]
    listing = next(l for l in walk(tmp_path) if l.rel_dir == "")
    assert listing.rules.is_ignored("x.log", False) and not listing.rules.is_ignored("x.txt", False)
