"""apply_changes / is_relevant_path / watch roots: what a change re-reads and how it is reported."""

from __future__ import annotations

import os

from pytest import MonkeyPatch


def test_edit_of_a_memory_file(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "old text", "src/AGENTS.md": "src old"})
    store = make_store(ws)
    before = store.compose([ws / "src/a.py"])
    (ws / "AGENTS.md").write_text("new text")
    summary = store.apply_changes([ws / "AGENTS.md"])
    assert (summary.changed_files, summary.kind) == (("AGENTS.md",), "memoryChanged")
    after = store.compose([ws / "src/a.py"])
    assert after is not before and "new text" in after.text and "old text" not in after.text
    # Same-size rewrite within the same clock tick is still seen: the path was named as changed.
    (ws / "src/AGENTS.md").write_text("src new")
    assert store.apply_changes([str(ws / "src/AGENTS.md")]).changed_files == ("src/AGENTS.md",)
    assert "src new" in store.compose([ws / "src/a.py"]).text


def test_unchanged_or_unrelated_paths_change_nothing(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "same", "src/main.py": "print()"})
    store = make_store(ws)
    first = store.compose([])
    summary = store.apply_changes([ws / "AGENTS.md", ws / "src/main.py"])
    assert (summary.changed_files, summary.kind) == ((), None)
    assert store.compose([]) is first  # still served from cache


def test_create_and_delete_memory_files(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"src/x.py": ""})
    store = make_store(ws)
    tree(ws, {"src/AGENTS.md": "new jit", "CLAUDE.md": "new root"})
    summary = store.apply_changes([ws / "src/AGENTS.md", ws / "CLAUDE.md"])
    assert (sorted(summary.changed_files), summary.kind) == (["CLAUDE.md", "src/AGENTS.md"], "memoryChanged")
    assert helpers.included(store.compose([ws / "src/x.py"])) == ["CLAUDE.md", "src/AGENTS.md"]
    (ws / "src/AGENTS.md").unlink()
    summary = store.apply_changes([ws / "src/AGENTS.md"])
    assert summary.changed_files == ("src/AGENTS.md",)
    assert helpers.included(store.compose([ws / "src/x.py"])) == ["CLAUDE.md"]


def test_new_directory_with_memory_file_is_indexed(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    tree(ws, {"pkg/inner/AGENTS.md": "inner"})
    assert store.is_relevant_path(ws / "pkg")
    summary = store.apply_changes([ws / "pkg"])
    assert summary.kind == "workspaceChanged" and summary.changed_files == ("pkg/inner/AGENTS.md",)
    assert helpers.included(store.compose([ws / "pkg/inner/a"])) == ["pkg/inner/AGENTS.md"]


def test_rule_change_is_rules_changed(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".cursor/rules/a.mdc": "---\nalwaysApply: true\n---\nRULE ONE"})
    store = make_store(ws)
    tree(ws, {".cursor/rules/a.mdc": "---\nalwaysApply: true\n---\nRULE TWO"})
    summary = store.apply_changes([ws / ".cursor/rules/a.mdc"])
    assert (summary.changed_files, summary.kind) == ((".cursor/rules/a.mdc",), "rulesChanged")
    assert "RULE TWO" in store.compose([]).text
    tree(ws, {".claude/rules/new.md": "CLAUDE NEW"})
    summary = store.apply_changes([ws / ".claude/rules/new.md"])
    assert (summary.changed_files, summary.kind) == ((".claude/rules/new.md",), "rulesChanged")


def test_gitignore_change_reindexes(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"gen/AGENTS.md": "generated", "src/AGENTS.md": "src"})
    store = make_store(ws)
    assert sorted(f.path for f in store.compose([]).files) == ["gen/AGENTS.md", "src/AGENTS.md"]
    tree(ws, {".gitignore": "gen/\n"})
    summary = store.apply_changes([ws / ".gitignore"])
    assert summary.kind == "workspaceChanged" and summary.changed_files == ("gen/AGENTS.md",)
    assert [f.path for f in store.compose([ws / "gen/a"]).files] == ["src/AGENTS.md"]
    assert not store.is_relevant_path(ws / "gen/AGENTS.md")
    (ws / ".gitignore").unlink()
    store.apply_changes([ws / ".gitignore"])
    assert "generated" in store.compose([ws / "gen/a"]).text


def test_imported_file_change_rerenders_the_importer(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "@docs/part.md\n@docs/later.md", "docs/part.md": "PART ONE"})
    store = make_store(ws)
    assert store.is_relevant_path(ws / "docs/part.md")
    assert store.is_relevant_path(ws / "docs/later.md")  # not found yet, but watched for
    tree(ws, {"docs/part.md": "PART TWO", "docs/later.md": "LATER"})
    summary = store.apply_changes([ws / "docs/part.md", ws / "docs/later.md"])
    assert (summary.changed_files, summary.kind) == (("AGENTS.md",), "memoryChanged")
    text = store.compose([]).text
    assert "PART TWO" in text and "LATER" in text and "import failed" not in text


def test_global_file_appears(tmp_path, make_store, global_dir, tree):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    assert store.is_relevant_path(global_dir / "AGENTS.md")
    tree(global_dir, {"AGENTS.md": "global now"})
    summary = store.apply_changes([global_dir / "AGENTS.md"])
    assert summary.changed_files == ("~/.config/context-companion/AGENTS.md",)
    assert "global now" in store.compose([]).text


def test_upward_file_and_boundary_marker(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(repo, {".git/": "", "ws/AGENTS.md": "ws"})
    ws = repo / "ws"
    store = make_store(ws)
    assert store.is_relevant_path(repo / "AGENTS.md")
    assert store.flat_watch_roots()[0] == repo
    tree(repo, {"AGENTS.md": "repo root"})
    assert store.apply_changes([repo / "AGENTS.md"]).changed_files == ("../AGENTS.md",)
    assert helpers.included(store.compose([])) == ["../AGENTS.md", "AGENTS.md"]
    (ws / ".git").mkdir()  # the folder becomes its own repository
    summary = store.apply_changes([ws / ".git"])
    assert summary.kind == "workspaceChanged" and summary.changed_files == ("../AGENTS.md",)
    assert helpers.included(store.compose([])) == ["AGENTS.md"]


def test_is_relevant_path(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".gitignore": "node_modules/\n*.log\n",
            "AGENTS.md": "x",
            "src/app.py": "",
            "node_modules/pkg/AGENTS.md": "decoy",
            ".git/HEAD": "ref",
            ".github/workflows/ci.yml": "",
        },
    )
    store = make_store(ws)
    yes = [
        "AGENTS.md",
        "src/AGENTS.md",
        "src/CLAUDE.local.md",
        ".gitignore",
        "src/.gitignore",
        "src",
        ".git/info/exclude",
        ".cursor/rules/a.mdc",
        ".cursor/rules",
        ".github/copilot-instructions.md",
        ".github/instructions/x/y.instructions.md",
        ".claude/rules/a.md",
        ".context-companion/rules/a.md",
        ".context-companion-ignore",
        ".git",
    ]
    no = [
        "src/app.py",
        "node_modules/pkg/AGENTS.md",
        "node_modules",
        "node_modules/pkg",
        ".git/HEAD",
        ".git/objects/ab",
        ".github/workflows/ci.yml",
        "src/AGENTS.md~",
        ".cursor/rules/.a.mdc.swp",
        "src/notes.md",
    ]
    for rel in yes:
        assert store.is_relevant_path(ws / rel), rel
    for rel in no:
        assert not store.is_relevant_path(ws / rel), rel
    assert not store.is_relevant_path(tmp_path / "elsewhere/AGENTS.md")


def test_watch_roots(tmp_path, tree, make_store, home, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    tree(home, {".claude/CLAUDE.md": "c"})
    store = make_store([ws, tmp_path / "missing"])
    assert store.watch_roots() == [ws, home / ".claude"]
    # The global dir does not exist yet: its nearest existing parent is watched flat to see it appear.
    assert store.flat_watch_roots() == [home]
    global_dir.mkdir(parents=True)
    assert store.watch_roots() == [ws, home / ".claude", global_dir]
    assert store.flat_watch_roots() == [home]  # still: ~/.gitconfig may name a global excludes file


def test_set_workspace_folders_keeps_existing_index(tmp_path, tree, make_store, helpers):
    tree(tmp_path, {"a/AGENTS.md": "A", "b/AGENTS.md": "B"})
    store = make_store([tmp_path / "a"])
    before = store.compose([]).text
    store.set_workspace_folders([tmp_path / "a", tmp_path / "b"])
    after = store.compose([])
    assert helpers.included(after) == ["AGENTS.md", "b/AGENTS.md"]
    assert after.text.startswith(before + "\n\n")  # the first folder's block keeps its label and bytes
    os.remove(tmp_path / "a/AGENTS.md")
    summary = store.apply_changes([tmp_path / "a/AGENTS.md"])
    assert summary.changed_files == ("AGENTS.md",)
    assert helpers.included(store.compose([])) == ["b/AGENTS.md"]


def test_changes_inside_ignored_directories_are_no_change(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".gitignore": "node_modules/\n", "node_modules/pkg/AGENTS.md": "decoy", "AGENTS.md": "x"})
    store = make_store(ws)
    first = store.compose([])
    for rel in ("node_modules", "node_modules/pkg", "node_modules/pkg/AGENTS.md"):
        assert store.apply_changes([ws / rel]) == type(store.apply_changes([]))((), None)
    assert store.compose([]) is first


def test_global_dir_created_with_its_parents(tmp_path, tree, make_store, global_dir, home):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    assert store.flat_watch_roots() == [home]
    tree(global_dir, {"AGENTS.md": "born with its dir"})
    summary = store.apply_changes([global_dir.parent])  # all a flat watch of home can see
    assert summary.changed_files == ("~/.config/context-companion/AGENTS.md",) and summary.watch_changed
    assert "born with its dir" in store.compose([]).text


def test_an_ignore_file_above_the_folder_is_watched_and_reindexes(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(repo, {".git/": "", "app/AGENTS.md": "app", "app/gen/AGENTS.md": "generated", "app/gen/x.py": ""})
    ws = repo / "app"
    store = make_store(ws)
    assert "gen/AGENTS.md" in helpers.included(store.compose([ws / "gen/x.py"]))
    gitignore = repo / ".gitignore"
    assert store.is_relevant_path(gitignore) and store.is_relevant_path(repo / ".git/info/exclude")
    assert repo in store.flat_watch_roots()
    gitignore.write_text("app/gen/\n")
    summary = store.apply_changes([gitignore])
    assert summary.kind == "workspaceChanged" and "gen/AGENTS.md" in summary.changed_files
    assert "gen/AGENTS.md" not in helpers.included(store.compose([ws / "gen/x.py"]))


def test_an_ignore_file_cut_at_the_pattern_cap_warns_in_the_composition(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".gitignore": "".join(f"p{i}\n" for i in range(30)), "AGENTS.md": "x"})
    warnings = make_store(ws, max_ignore_patterns=10).compose([]).warnings
    assert [w for w in warnings if ".gitignore" in w and "10" in w], warnings


# A tree with many directories besides the ones a scenario touches: a folder created or deleted
# there must be walked alone (the whole walk took ~0.7 s on 20,000 directories), and the store must
# then answer exactly what a store started afresh answers.
SIBLINGS = {f"lib/mod{i:02d}/sub/x.py": "" for i in range(40)}
BASE = {
    ".git/": "",
    ".gitignore": "build/\n",
    "AGENTS.md": "root",
    "pkg/AGENTS.md": "pkg",
    "pkg/old/AGENTS.md": "old folder",
    "pkg/old/deep/er/CLAUDE.md": "old deep",
    "pkg/old/.cursor/rules/o.mdc": "---\nalwaysApply: true\n---\nOLD NESTED RULE",
    "pkg/old/x.py": "",
    **SIBLINGS,
}


def _make_new(ws, tree):
    tree(ws, {"pkg/new/AGENTS.md": "new folder", "pkg/new/x.py": ""})
    return ["pkg/new", "pkg/new/AGENTS.md"]


def _make_deep(ws, tree):  # mkdir -p: only the top directory's event is certain
    tree(ws, {"pkg/a/b/c/AGENTS.md": "deep new", "pkg/a/b/GEMINI.md": "middle"})
    return ["pkg/a"]


def _make_own_ignore(ws, tree):
    tree(
        ws,
        {
            "pkg/gen/.gitignore": "out/\n",
            "pkg/gen/AGENTS.md": "gen visible",
            "pkg/gen/out/AGENTS.md": "gen ignored",
            "pkg/gen/keep/AGENTS.md": "gen kept",
        },
    )
    return ["pkg/gen", "pkg/gen/.gitignore", "pkg/gen/AGENTS.md"]  # the watcher reports what it holds too


def _nested_ignore_edited(ws, tree):
    tree(ws, {"pkg/old/.gitignore": "deep/\n"})
    return ["pkg/old/.gitignore"]


def _make_ignored(ws, tree):
    tree(ws, {"build/AGENTS.md": "build output", "pkg/build/AGENTS.md": "nested build"})
    return ["build", "pkg/build"]


def _remove_old(ws, tree):
    import shutil

    shutil.rmtree(ws / "pkg/old")
    return ["pkg/old"]


def _move_old(ws, tree):
    os.rename(ws / "pkg/old", ws / "pkg/moved")
    return ["pkg/old", "pkg/moved"]


def _nested_rules(ws, tree):
    tree(
        ws,
        {
            "pkg/web/.cursor/rules/frontend/react.mdc": "---\nglobs: '**/*.tsx'\n---\nREACT RULE",
            "pkg/web/app.tsx": "",
        },
    )
    return ["pkg/web"]


SCENARIOS = {
    "a new folder": _make_new,
    "mkdir -p": _make_deep,
    "a new folder with its own .gitignore": _make_own_ignore,
    "a .gitignore added in a sub-folder": _nested_ignore_edited,
    "new folders the ignore rules hide": _make_ignored,
    "a folder deleted": _remove_old,
    "a folder renamed": _move_old,
    "a new folder holding nested Cursor rules": _nested_rules,
}


def _answer(store, ws):
    opened = [ws / p for p in ("pkg/new/x.py", "pkg/a/b/c/x.py", "pkg/gen/keep/x.py", "pkg/gen/out/x.py")]
    opened += [ws / p for p in ("pkg/old/deep/er/x.py", "pkg/moved/deep/er/x.py", "pkg/web/app.tsx")]
    opened += [ws / "build/x.py", ws / "pkg/build/x.py"]
    result = store.compose(opened)
    return result.text, [(f.path, f.included, f.reason) for f in result.files], result.warnings


def test_a_folder_created_or_deleted_is_walked_alone(tmp_path, tree, make_store):
    for name, scenario in SCENARIOS.items():
        ws = tmp_path / name.replace(" ", "-")
        tree(ws, BASE)
        store = make_store(ws)
        store.compose([])
        changed = [ws / rel for rel in scenario(ws, tree)]
        listed: list[str] = []
        real_scandir = os.scandir

        def counting(path, _real=real_scandir, _listed=listed):
            _listed.append(os.fspath(path))
            return _real(path)

        with MonkeyPatch.context() as mp:
            mp.setattr(os, "scandir", counting)
            summary = store.apply_changes(changed)
        assert not [p for p in listed if "/lib/" in p], f"{name}: walked {len(listed)} directories"
        assert summary.kind == (None if "hide" in name else "workspaceChanged"), name
        assert _answer(store, ws) == _answer(make_store(ws), ws), name
