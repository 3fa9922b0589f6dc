"""``@path`` imports: expansion, failures that leave the text alone, what is not an import, depth, roots."""

from __future__ import annotations

import os

from context_companion.memory.imports import find_imports


def test_import_expands_inline_in_marker_comments(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "Intro\n@docs/style.md\nOutro\n", "docs/style.md": "Use tabs.\n"})
    text = make_store(ws).compose([]).text
    assert text == (
        "--- Context from: AGENTS.md ---\n"
        "Intro\n<!-- imported from: docs/style.md -->\nUse tabs.\n<!-- end of import: docs/style.md -->\nOutro\n"
        "--- End of Context from: AGENTS.md ---"
    )


def test_relative_home_and_absolute_imports(tmp_path, tree, make_store, home, global_dir):
    ws = tmp_path / "ws"
    tree(global_dir, {"AGENTS.md": "global @~/.config/context-companion/shared.md", "shared.md": "SHARED"})
    tree(
        ws,
        {"sub/AGENTS.md": f"see @../notes/a.md and @{ws}/notes/b.md.", "notes/a.md": "NOTE A", "notes/b.md": "NOTE B"},
    )
    store = make_store(ws)
    text = store.compose([ws / "sub/x.py"]).text
    assert "global <!-- imported from: ~/.config/context-companion/shared.md -->\nSHARED" in text
    assert "NOTE A" in text and "NOTE B" in text
    assert "<!-- end of import: notes/b.md -->." in text  # the full stop stays prose


def test_each_failure_keeps_the_text_and_gives_a_warning(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    secret = tmp_path / "secret.md"
    secret.write_text("SECRET")
    tree(
        ws,
        {
            "AGENTS.md": "@missing.md\n@cycle-a.md\n@../secret.md\n@link.md\n",
            "cycle-a.md": "A @cycle-b.md",
            "cycle-b.md": "B @cycle-a.md",
        },
    )
    os.symlink(secret, ws / "link.md")  # inside by name, outside by real path
    result = make_store(ws).compose([])
    text = result.text
    assert text.startswith("--- Context from: AGENTS.md ---\n@missing.md\n")
    assert "A <!-- imported from: cycle-b.md -->\nB @cycle-a.md\n<!-- end of import: cycle-b.md -->" in text
    assert "\n@../secret.md\n@link.md\n" in text
    assert "SECRET" not in text and "import failed" not in text
    assert "AGENTS.md: import cycle-a.md failed: cycle" in result.warnings
    assert "AGENTS.md: import ../secret.md failed: outside allowed roots" in result.warnings
    assert "AGENTS.md: import link.md failed: outside allowed roots" in result.warnings
    assert "AGENTS.md: import missing.md failed: not found" in result.warnings
    assert helpers.info(result, "AGENTS.md").included


def test_self_import_is_a_cycle(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "me @AGENTS.md"})
    result = make_store(ws).compose([])
    assert "me @AGENTS.md\n" in result.text
    assert "AGENTS.md: import AGENTS.md failed: cycle" in result.warnings


def test_depth_limit(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    files = {"AGENTS.md": "L0 @d1.md"}
    for i in range(1, 8):
        files[f"d{i}.md"] = f"L{i} @d{i + 1}.md"
    tree(ws, files)
    text = make_store(ws).compose([]).text
    assert "L5" in text and "L6" not in text
    assert "L5 @d6.md\n" in text
    shallow = make_store(ws, import_max_depth=1).compose([])
    assert "L1 @d2.md\n" in shallow.text and "AGENTS.md: import d2.md failed: too deep" in shallow.warnings
    none = make_store(ws, import_max_depth=0).compose([]).text
    assert "L0 @d1.md\n" in none


def test_code_spans_fences_comments_urls_and_mentions_are_not_imports(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    body = (
        "Run `npm i @types/node.js` first.\n"
        "``a ` @inside.md ``\n"
        "```bash\n@fenced.md\n```\n"
        "~~~~\n@tilde.md\n~~~\nstill fenced @tilde2.md\n~~~~\n"
        "<!-- @commented.md\nstill @comment2.md -->\n"
        "Docs at @https://example.com/a.md and mail me@example.com\n"
        "Thanks @octocat for @param\n"
        "@real.md\n"
    )
    tree(ws, {"AGENTS.md": body, "real.md": "REAL"})
    text = make_store(ws).compose([]).text
    assert "import failed" not in text
    assert text.count("imported from") == 1 and "REAL" in text
    assert [r.path for r in find_imports(body)] == ["real.md"]


def test_find_imports_positions_and_escaped_spaces():
    refs = find_imports("x @a.md, then (@b/c.md)\n  @my\\ notes.md\n")
    assert [(r.line, r.start, r.end, r.path) for r in refs] == [(0, 2, 7, "a.md"), (1, 2, 15, "my notes.md")]


def test_imports_in_global_memory_stay_in_the_global_dir(tmp_path, tree, make_store, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    tree(tmp_path, {"elsewhere/x.md": "NOPE"})
    tree(global_dir, {"AGENTS.md": f"@{tmp_path}/elsewhere/x.md @parts/p.md", "parts/p.md": "PART"})
    result = make_store(ws).compose([])
    assert "PART" in result.text and "NOPE" not in result.text
    assert f"@{tmp_path}/elsewhere/x.md <!-- imported from" in result.text
    assert any("outside allowed roots" in w for w in result.warnings)


def test_workspace_files_may_import_from_the_global_memory_dir(tmp_path, tree, make_store, global_dir):
    ws = tmp_path / "ws"
    tree(global_dir, {"team.md": "TEAM"})
    tree(ws, {"AGENTS.md": f"@{global_dir}/team.md"})
    assert "TEAM" in make_store(ws).compose([]).text


def test_imported_binary_is_refused_and_a_huge_file_is_cut(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "@bin.dat\n@big.md", "bin.dat": b"\x00\x01binary", "big.md": "line\n" * 400})
    result = make_store(ws, max_file_bytes=1000).compose([])
    assert "\n@bin.dat\n" in result.text
    assert result.text.count("line\n") == 200  # 1000 bytes of whole lines, then the marker line
    assert (
        "line\n[… cut here by memory.maxFileBytes (1000): 1000 of 2000 bytes included; the rest is not included]\n"
        in (result.text)
    )
