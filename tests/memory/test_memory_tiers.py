"""Discovery tiers (global, workspace, JIT), their order, rendering and the downward index."""

from __future__ import annotations

import os
from pathlib import Path

from context_companion.memory import MemoryStore
from context_companion.settings import MemorySettings


def test_every_tier_in_order_with_blocks(tmp_path, tree, make_store, home, global_dir, helpers):
    tree(home, {".gemini/GEMINI.md": "vendor gemini", ".claude/CLAUDE.md": "vendor claude"})
    tree(global_dir, {"AGENTS.md": "our global"})
    repo = tmp_path / "repo"
    tree(
        repo,
        {
            ".git/": "",
            "AGENTS.md": "repo root",
            "app/AGENTS.md": "app folder",
            "app/CLAUDE.md": "app claude",
            "app/src/AGENTS.md": "src",
            "app/src/api/AGENTS.md": "api",
            "app/src/api/handler.py": "x = 1\n",
        },
    )
    store = make_store(repo / "app")
    result = store.compose([repo / "app/src/api/handler.py"])
    assert helpers.included(result) == [
        "~/.gemini/GEMINI.md",
        "~/.claude/CLAUDE.md",
        "~/.config/context-companion/AGENTS.md",
        "../AGENTS.md",
        "AGENTS.md",
        "CLAUDE.md",
        "src/AGENTS.md",
        "src/api/AGENTS.md",
    ]
    assert [f.tier for f in result.files] == ["global"] * 3 + ["workspace"] * 3 + ["jit"] * 2
    blocks = result.text.split("\n\n")
    assert (
        blocks[0]
        == "--- Context from: ~/.gemini/GEMINI.md ---\nvendor gemini\n--- End of Context from: ~/.gemini/GEMINI.md ---"
    )
    assert blocks[-1] == "--- Context from: src/api/AGENTS.md ---\napi\n--- End of Context from: src/api/AGENTS.md ---"
    assert helpers.info(result, "AGENTS.md").reason == "workspace memory (root → leaf)"
    assert helpers.info(result, "src/api/AGENTS.md").reason == "open file src/api/handler.py is under src/api/"
    assert helpers.info(result, "~/.config/context-companion/AGENTS.md").reason == "global memory"
    for f in result.files:
        assert f.tokens > 0 and os.path.isabs(f.abs_path)
        assert f.to_wire() == {"path": f.path, "tier": f.tier, "tokens": f.tokens, "included": True, "reason": f.reason}


def test_vendor_globals_can_be_turned_off(tmp_path, tree, make_store, home, global_dir, helpers):
    tree(home, {".gemini/GEMINI.md": "vendor gemini"})
    tree(global_dir, {"CLAUDE.md": "ours"})
    ws = tmp_path / "ws"
    ws.mkdir()
    result = make_store(ws, read_vendor_globals=False).compose([])
    assert helpers.included(result) == ["~/.config/context-companion/CLAUDE.md"]


def test_workspace_tier_without_marker_is_the_folder_alone(tmp_path, tree, make_store, helpers):
    tree(tmp_path, {"outer/AGENTS.md": "outer", "outer/ws/AGENTS.md": "inner"})
    result = make_store(tmp_path / "outer/ws").compose([])
    assert helpers.included(result) == ["AGENTS.md"]
    assert "outer" not in result.text.replace("inner", "")


def test_empty_boundary_markers_mean_the_folder_only(tmp_path, tree, make_store, helpers):
    tree(tmp_path, {"repo/.git/": "", "repo/AGENTS.md": "root", "repo/ws/GEMINI.md": "ws"})
    result = make_store(tmp_path / "repo/ws", boundary_markers=[]).compose([])
    assert helpers.included(result) == ["GEMINI.md"]


def test_custom_boundary_marker_and_nearest_one_wins(tmp_path, tree, make_store, helpers):
    tree(
        tmp_path,
        {
            "a/.git/": "",
            "a/AGENTS.md": "too far",
            "a/b/pyproject.toml": "",
            "a/b/AGENTS.md": "package root",
            "a/b/c/AGENTS.md": "folder",
        },
    )
    result = make_store(tmp_path / "a/b/c", boundary_markers=[".git", "pyproject.toml"]).compose([])
    assert helpers.included(result) == ["../AGENTS.md", "AGENTS.md"]


def test_file_name_order_within_a_directory_follows_the_setting(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"CLAUDE.local.md": "local", "AGENTS.md": "a", "GEMINI.md": "g", "CLAUDE.md": "c", "QWEN.md": "q"})
    assert helpers.included(make_store(ws).compose([])) == [
        "AGENTS.md",
        "GEMINI.md",
        "QWEN.md",
        "CLAUDE.md",
        "CLAUDE.local.md",
    ]
    only = make_store(ws, file_names=["CLAUDE.md", "AGENTS.md"]).compose([])
    assert helpers.included(only) == ["CLAUDE.md", "AGENTS.md"]


def test_jit_files_come_and_go_with_open_files(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            "AGENTS.md": "root",
            "src/api/AGENTS.md": "api rules",
            "src/api/v1/AGENTS.md": "v1 rules",
            "src/web/AGENTS.md": "web rules",
            "docs/AGENTS.md": "docs rules",
        },
    )
    store = make_store(ws)
    nothing = store.compose([])
    assert helpers.included(nothing) == ["AGENTS.md"]
    assert helpers.info(nothing, "src/api/AGENTS.md").reason == "not included: no open file under src/api/"
    assert "api rules" not in nothing.text

    deep = store.compose([ws / "src/api/v1/x.py"])
    assert helpers.included(deep) == ["AGENTS.md", "src/api/AGENTS.md", "src/api/v1/AGENTS.md"]
    assert deep.text.index("api rules") < deep.text.index("v1 rules")  # closest last

    # A file directly in src/api opens api only; the active file names itself in the reason.
    active = store.compose([ws / "src/web/page.ts"], active_path=ws / "src/api/handler.py")
    assert helpers.included(active) == ["AGENTS.md", "src/api/AGENTS.md", "src/web/AGENTS.md"]
    assert helpers.info(active, "src/api/AGENTS.md").reason == "active file src/api/handler.py is under src/api/"
    assert helpers.info(active, "src/web/AGENTS.md").reason == "open file src/web/page.ts is under src/web/"

    closed = store.compose([ws / "README.md"])
    assert helpers.included(closed) == ["AGENTS.md"]
    # A file outside every workspace folder activates nothing.
    assert helpers.included(store.compose([tmp_path / "elsewhere/src/api/x.py"])) == ["AGENTS.md"]


def test_compose_is_served_from_cache_for_the_same_relevant_inputs(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "root", "src/AGENTS.md": "src"})
    store = make_store(ws)
    first = store.compose([ws / "src/a.py"])
    # Same JIT directories active with the same witness: the very same result object.
    assert store.compose([ws / "src/a.py", ws / "README.md"]) is first
    assert store.compose([ws / "src/a.py"], active_path=ws / "notes.txt") is first
    other = store.compose([])
    assert other is not first and "src" not in other.text.split("\n")


def test_nested_gitignore_with_negation_and_companion_ignore(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".gitignore": "node_modules/\n/build/\n",
            "node_modules/pkg/AGENTS.md": "decoy",
            "build/AGENTS.md": "decoy",
            "pkg/.gitignore": "gen/\nlocal/*\n!local/keep/\n*.md\n!AGENTS.md\n",
            "pkg/gen/AGENTS.md": "decoy",
            "pkg/local/drop/AGENTS.md": "decoy",
            "pkg/local/keep/AGENTS.md": "kept by negation",
            "pkg/AGENTS.md": "pkg kept by negation",
            "pkg/CLAUDE.md": "ignored by *.md",
            "lib/.context-companion-ignore": "vendor/\n",
            "lib/vendor/AGENTS.md": "decoy",
            "lib/AGENTS.md": "lib",
            "sub/build/AGENTS.md": "only the root build/ is anchored",
        },
    )
    store = make_store(ws)
    paths = [f.path for f in store.compose([]).files]
    assert sorted(paths) == ["lib/AGENTS.md", "pkg/AGENTS.md", "pkg/local/keep/AGENTS.md", "sub/build/AGENTS.md"]
    opened = store.compose([ws / "pkg/local/keep/x.py", ws / "pkg/CLAUDE.md"])
    assert "kept by negation" in opened.text and "ignored by *.md" not in opened.text
    assert "decoy" not in store.compose([ws / p for p in ("node_modules/pkg/a.js", "pkg/gen/a", "lib/vendor/a")]).text


def test_symlink_loop_and_links_out_of_the_workspace(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    tree(outside, {"AGENTS.md": "SECRET outside", "deep/AGENTS.md": "SECRET deep"})
    tree(ws, {"a/b/AGENTS.md": "inside"})
    os.symlink(ws / "a", ws / "a/b/loop")  # a directory loop
    os.symlink(outside, ws / "a/out")  # a directory outside
    os.symlink(outside / "AGENTS.md", ws / "a/AGENTS.md")  # a file leading outside
    store = make_store(ws)
    result = store.compose([ws / "a/b/x.py"])
    assert "SECRET" not in result.text
    assert helpers.included(result) == ["a/b/AGENTS.md"]
    link = helpers.info(result, "a/AGENTS.md")
    assert (link.included, link.reason) == (False, "skipped: symlink leads outside the workspace")
    assert any("a/AGENTS.md" in w and "outside the workspace" in w for w in result.warnings)


def test_same_file_through_a_symlink_is_included_once(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "shared instructions"})
    os.symlink("AGENTS.md", ws / "CLAUDE.md")
    result = make_store(ws).compose([])
    assert helpers.included(result) == ["AGENTS.md"]
    assert helpers.info(result, "CLAUDE.md").reason == "not included: same file as AGENTS.md"
    assert result.text.count("shared instructions") == 1


def test_multi_root_display_paths_and_folder_changes(tmp_path, tree, make_store, helpers):
    tree(tmp_path, {"one/AGENTS.md": "one", "two/AGENTS.md": "two", "two/src/AGENTS.md": "two src"})
    store = make_store([tmp_path / "one", tmp_path / "two"])
    result = store.compose([tmp_path / "two/src/x.py"])
    # The first folder's paths stay unprefixed, so adding a folder never relabels what is there.
    assert helpers.included(result) == ["AGENTS.md", "two/AGENTS.md", "two/src/AGENTS.md"]
    assert "--- Context from: two/src/AGENTS.md ---" in result.text
    assert helpers.info(result, "two/src/AGENTS.md").reason == "open file two/src/x.py is under two/src/"

    store.set_workspace_folders([tmp_path / "two"])
    assert helpers.included(store.compose([tmp_path / "two/src/x.py"])) == ["AGENTS.md", "src/AGENTS.md"]
    store.set_workspace_folders([tmp_path / "two", tmp_path / "missing"])
    result = store.compose([])
    assert helpers.included(result) == ["AGENTS.md"]
    assert any("missing" in w and "does not exist" in w for w in result.warnings)


def test_nothing_found_gives_empty_text(tmp_path, make_store):
    ws = tmp_path / "ws"
    ws.mkdir()
    result = make_store(ws).compose([ws / "a.py"])
    assert (result.text, result.files, result.dropped) == ("", (), ())


def test_compose_before_load_loads(tmp_path, tree, tokenizer, home, global_dir):
    tree(tmp_path, {"ws/AGENTS.md": "hello"})
    store = MemoryStore(
        MemorySettings(), [tmp_path / "ws"], count_tokens=tokenizer.count, global_dir=global_dir, home=home
    )
    assert "hello" in store.compose([]).text


def test_global_dir_defaults_to_the_user_config_dir(tmp_path, tree, tokenizer, monkeypatch):
    cfg = tmp_path / "cfg"
    tree(cfg, {"AGENTS.md": "from the config dir"})
    monkeypatch.setenv("CONTEXT_COMPANION_CONFIG_DIR", str(cfg))
    store = MemoryStore(MemorySettings(), [], count_tokens=tokenizer.count, home=Path(tmp_path / "home"))
    store.load()
    assert "from the config dir" in store.compose([]).text


def test_dot_claude_claude_md_is_project_memory_in_every_tier(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(
        repo,
        {
            ".git/": "",
            ".claude/CLAUDE.md": "repo claude",  # above the folder: workspace tier
            "app/CLAUDE.md": "app claude",
            "app/.claude/CLAUDE.md": "app dot claude",  # the folder's own: workspace tier, after CLAUDE.md
            "app/AGENTS.md": "app agents",
            "app/api/.claude/CLAUDE.md": "api dot claude",  # governs api/: JIT
            "app/api/h.py": "",
            "app/.claude/rules/r.md": "a rule",
        },
    )
    ws = repo / "app"
    store = make_store(ws)
    closed = store.compose([])
    assert helpers.included(closed) == [
        "../.claude/CLAUDE.md",
        "AGENTS.md",
        "CLAUDE.md",
        ".claude/CLAUDE.md",
        ".claude/rules/r.md",
    ]
    assert helpers.info(closed, "../.claude/CLAUDE.md").tier == "workspace"
    api = helpers.info(closed, "api/.claude/CLAUDE.md")
    assert (api.tier, api.reason) == ("jit", "not included: no open file under api/")
    opened = store.compose([ws / "api/h.py"])
    assert helpers.info(opened, "api/.claude/CLAUDE.md").reason == "open file api/h.py is under api/"
    assert opened.text.index("app dot claude") < opened.text.index("api dot claude")
    assert store.is_memory_document(ws / ".claude/CLAUDE.md") and store.is_memory_document(repo / ".claude/CLAUDE.md")
    assert store.analyze(ws / ".claude/CLAUDE.md", "x").lens.title.endswith("workspace memory (root → leaf)")


def test_dot_claude_claude_md_changes_are_followed(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(repo, {".git/": "", "app/AGENTS.md": "a", "app/api/h.py": ""})
    ws = repo / "app"
    store = make_store(ws)
    for path in (ws / ".claude/CLAUDE.md", repo / ".claude/CLAUDE.md", ws / "api/.claude/CLAUDE.md"):
        tree(path.parent, {path.name: f"new {path}"})
        assert store.is_relevant_path(path) and store.is_relevant_path(path.parent)
        summary = store.apply_changes([path.parent, path])
        assert summary.changed_files, path
    assert repo / ".claude" in store.flat_watch_roots()
    text = store.compose([ws / "api/h.py"]).text
    assert all(f"new {p}" in text for p in (ws / ".claude/CLAUDE.md", repo / ".claude/CLAUDE.md"))
    assert f"new {ws / 'api/.claude/CLAUDE.md'}" in text
    os.remove(ws / ".claude/CLAUDE.md")
    assert store.apply_changes([ws / ".claude/CLAUDE.md"]).changed_files == (".claude/CLAUDE.md",)
    assert ".claude/CLAUDE.md" not in helpers.included(store.compose([]))
