"""The tree generator: same seed → same bytes; the manifest tells the truth about the tree."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from context_companion.ignore import walk

from bench.floors import plain_folder_tree, pruned_walk
from bench.generate import TREES, _layout, ensure_tree, spec_digest, tree_digest

MEMORY = {"AGENTS.md", "GEMINI.md", "CLAUDE.md", "CLAUDE.local.md"}


def test_same_seed_same_tree(tmp_path: Path) -> None:
    root_a, man_a, reused_a = ensure_tree("small", 11, tmp_path / "a")
    root_b, man_b, reused_b = ensure_tree("small", 11, tmp_path / "b")
    assert not reused_a and not reused_b
    assert man_a.digest == man_b.digest == spec_digest("small", 11)
    assert tree_digest(root_a) == tree_digest(root_b) == man_a.digest
    assert man_a.to_json() == man_b.to_json()


def test_other_seed_other_tree(tmp_path: Path) -> None:
    _root, man, _ = ensure_tree("small", 11, tmp_path)
    assert spec_digest("small", 12) != man.digest


def test_manifest_matches_a_gitignore_aware_walk(tmp_path: Path) -> None:
    root, man, _ = ensure_tree("small", 3, tmp_path)
    found, files, dirs = [], 0, 0
    for listing in walk(root):
        dirs += 1
        prefix = listing.rel_dir + "/" if listing.rel_dir else ""
        for entry in listing.files:
            if listing.rules.is_ignored(prefix + entry.name, False):
                continue
            files += 1
            if entry.name in MEMORY:
                found.append(prefix + entry.name)
    assert sorted(found) == man.memory_expected
    assert files == man.files_visible
    assert dirs - 1 == man.dirs_visible  # the root is not counted
    assert man.decoys and not set(man.decoys) & set(found)
    assert any(d.startswith("node_modules/") for d in man.decoys)
    assert any("/generated/" in d for d in man.decoys)  # hidden by a nested .gitignore


def test_floor_walk_prunes_by_the_root_gitignore_only(tmp_path: Path) -> None:
    root, man, _ = ensure_tree("small", 3, tmp_path)
    _files, found = pruned_walk(root)
    assert sorted(found) == man.memory_root_pruned
    assert not any(p.startswith(("node_modules/", "build/")) for p in found)
    tree = plain_folder_tree(root, 200).splitlines()
    assert len(tree) == 200
    assert not any(line.startswith(("node_modules", ".git/", "build/")) for line in tree)


def test_reuse_restores_edited_files_and_regenerates_damaged_trees(tmp_path: Path) -> None:
    root, man, _ = ensure_tree("small", 5, tmp_path)
    agents = root / "AGENTS.md"
    original = agents.read_bytes()
    agents.write_bytes(original + b"\nedited by a benchmark that was interrupted\n")
    root2, man2, reused = ensure_tree("small", 5, tmp_path)
    assert reused and root2 == root and man2.digest == man.digest
    assert agents.read_bytes() == original
    (root / man.memory_expected[-1]).unlink()
    _root, _man, reused = ensure_tree("small", 5, tmp_path)
    assert not reused
    assert tree_digest(root) == man.digest


def test_unknown_tree_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown tree 'huge'"):
        ensure_tree("huge", 1, tmp_path)


def test_medium_layout_has_the_promised_shape() -> None:
    p = TREES["medium"]
    lay = _layout(p, 6)
    assert len(lay.memory) == 30
    assert max(d.count("/") + 1 for d in lay.dirs) == 8
    assert len(lay.files) == 20_000
    assert p.ignored_files == 20_000
    again = _layout(p, 6)
    assert (
        hashlib.sha256("\n".join(again.files).encode()).digest()
        == hashlib.sha256("\n".join(lay.files).encode()).digest()
    )
