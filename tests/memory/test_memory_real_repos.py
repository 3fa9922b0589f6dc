"""Memory files as real repositories write them: '@' in prose, files reached twice, secrets."""

from __future__ import annotations

import os


def test_at_signs_in_prose_and_code_stay_byte_for_byte(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    body = (
        "Use @pytest.fixture for setup and @app.route for views.\n"
        "```python\n@pytest.fixture\ndef db(): ...\n```\n"
        "Install @org/pkg and @types/node; ask @octocat or @here; mail dev@example.com.\n"
        "Style: @docs/style.md\n"
        "Missing: @docs/missing.md\n"
    )
    tree(ws, {"AGENTS.md": body, "docs/style.md": "Tabs."})
    result = make_store(ws).compose([])
    assert result.text == (
        "--- Context from: AGENTS.md ---\n"
        "Use @pytest.fixture for setup and @app.route for views.\n"
        "```python\n@pytest.fixture\ndef db(): ...\n```\n"
        "Install @org/pkg and @types/node; ask @octocat or @here; mail dev@example.com.\n"
        "Style: <!-- imported from: docs/style.md -->\nTabs.\n<!-- end of import: docs/style.md -->\n"
        "Missing: @docs/missing.md\n"
        "--- End of Context from: AGENTS.md ---"
    )
    # Only tokens meant as paths are reported: npm scopes (@org/pkg, @types/node) are prose.
    assert sorted(w for w in result.warnings if "import" in w) == [
        "AGENTS.md: import docs/missing.md failed: not found"
    ]


def test_path_like_failures_are_diagnostics_prose_is_not(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    text = "@pytest.fixture @octocat\n@docs/missing.md\n"
    tree(ws, {"AGENTS.md": text})
    analysis = make_store(ws).analyze(ws / "AGENTS.md", text)
    assert [(d.code, d.range.start.line) for d in analysis.diagnostics] == [("import-not-found", 1)]


def test_claude_md_importing_agents_md_puts_it_in_once(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "Shared rules.\n", "CLAUDE.md": "@AGENTS.md\n", "GEMINI.md": "Intro\n@AGENTS.md\nEnd\n"})
    result = make_store(ws).compose([])
    assert result.text.count("Shared rules.") == 1
    assert result.text == (
        "--- Context from: AGENTS.md ---\nShared rules.\n--- End of Context from: AGENTS.md ---\n\n"
        "--- Context from: GEMINI.md ---\nIntro\nEnd\n--- End of Context from: GEMINI.md ---"
    )
    assert helpers.info(result, "CLAUDE.md").included is False
    # A repeat is the intended outcome: reported as data (and as an editor hint), never as a warning.
    assert helpers.info(result, "GEMINI.md").repeats == (("AGENTS.md", "AGENTS.md"),)
    assert not [w for w in result.warnings if "already included" in w]


def test_a_file_imported_first_is_not_repeated_when_discovered(tmp_path, tree, make_store, helpers, global_dir):
    ws = tmp_path / "ws"
    tree(global_dir, {"AGENTS.md": "G"})
    tree(ws, {"AGENTS.md": "Root @sub/AGENTS.md", "sub/AGENTS.md": "SUB"})
    result = make_store(ws).compose([ws / "sub" / "x.py"])
    assert result.text.count("SUB") == 1
    sub = helpers.info(result, "sub/AGENTS.md")
    assert not sub.included and sub.duplicate_of == "sub/AGENTS.md"
    assert sub.to_wire()["duplicateOf"] == "sub/AGENTS.md"


def test_symlink_and_hard_link_to_an_included_file_count_as_that_file(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "Once.\n@alias.md\n", "notes.md": "x"})
    os.symlink(ws / "AGENTS.md", ws / "alias.md")
    text = make_store(ws).compose([]).text
    assert text.count("Once.") == 1


def test_imports_never_bypass_the_exclude_list_or_ignore_files(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    body = "@.env\n@keys/id_rsa.pem\n@build/notes.md\n@ok.md\n"
    tree(
        ws,
        {
            "AGENTS.md": body,
            ".env": "API_KEY=hunter2",
            "keys/id_rsa.pem": "PRIVATE",
            ".gitignore": "build/\n",
            "build/notes.md": "GENERATED",
            "ok.md": "FINE",
        },
    )
    store = make_store(ws)
    result = store.compose([])
    assert "hunter2" not in result.text and "PRIVATE" not in result.text and "GENERATED" not in result.text
    assert "FINE" in result.text and "@.env\n@keys/id_rsa.pem\n@build/notes.md\n" in result.text
    codes = [d.code for d in store.analyze(ws / "AGENTS.md", body).diagnostics]
    # Each names an existing file, so each refusal is worth saying (the text stays as written).
    assert codes == ["import-excluded", "import-excluded", "import-ignored"]
    assert "AGENTS.md: import keys/id_rsa.pem failed: excluded by context.exclude" in result.warnings


def test_an_import_bomb_expands_each_file_once(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    files = {f"b{i}.md": " ".join(f"@b{j}.md" for j in range(10) if j != i) + f" B{i}" for i in range(10)}
    files["AGENTS.md"] = " ".join(f"@b{j}.md" for j in range(10))
    tree(ws, files)
    text = make_store(ws).compose([]).text
    assert len(text) < 5_000
    assert all(text.count(f"B{i}") == 1 for i in range(10))


def test_a_hard_link_counts_as_the_file_it_links(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "Once.\n", "docs/rules.md": "Imported once."})
    os.link(ws / "AGENTS.md", ws / "GEMINI.md")  # discovered twice under two names
    os.link(ws / "docs/rules.md", ws / "docs/same.md")
    (ws / "CLAUDE.md").write_text("@docs/rules.md\n@docs/same.md\nTail.\n")
    result = make_store(ws).compose([])
    assert result.text.count("Once.") == 1 and result.text.count("Imported once.") == 1
    gemini = helpers.info(result, "GEMINI.md")
    assert not gemini.included and gemini.duplicate_of == "AGENTS.md"
    claude = helpers.info(result, "CLAUDE.md")
    assert claude.included and claude.to_wire()["repeatedImports"] == [
        {"path": "docs/same.md", "duplicateOf": "docs/rules.md"}
    ]


def test_a_file_that_only_repeats_an_included_one_says_so(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "Shared rules.\n", "CLAUDE.md": "@AGENTS.md\n"})
    store = make_store(ws)
    claude = helpers.info(store.compose([]), "CLAUDE.md")
    assert claude.to_wire() == {
        "path": "CLAUDE.md",
        "tier": "workspace",
        "tokens": 0,
        "included": False,
        "reason": "not included: only repeats AGENTS.md",
        "duplicateOf": "AGENTS.md",
        "repeatedImports": [{"path": "AGENTS.md", "duplicateOf": "AGENTS.md"}],
    }
    diagnostics = store.analyze(ws / "CLAUDE.md", "@AGENTS.md\n").diagnostics
    assert [(d.severity, d.code, d.range.start.line) for d in diagnostics] == [("hint", "import-repeated", 0)]
    assert diagnostics[0].message.startswith("Already included from AGENTS.md")
    # AGENTS.md itself imports nothing twice: no hint there.
    assert store.analyze(ws / "AGENTS.md", "Shared rules.\n").diagnostics == ()


def test_only_tokens_meant_as_paths_are_failed_imports(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    prose = "Depends on @cline/llms and @types/node; decorate with @pytest.fixture; thanks @octocat, @org/pkg.\n"
    meant = "@./gone.txt @../above/gone @~/gone @/nonexistent/gone @notes.json @scripts/run\n"
    tree(ws, {"AGENTS.md": prose + meant, ".gitignore": "scripts/\n", "scripts/run": "#!/bin/sh\n"})
    store = make_store(ws)
    result = store.compose([])
    assert prose + meant.rstrip("\n") in result.text  # nothing is changed, imported or not
    diagnostics = store.analyze(ws / "AGENTS.md", prose + meant).diagnostics
    assert [(d.code, d.range.start.line) for d in diagnostics] == [
        ("import-not-found", 1),  # ./gone.txt: starts like a path
        ("import-outside-roots", 1),  # ../above/gone
        ("import-outside-roots", 1),  # ~/gone
        ("import-outside-roots", 1),  # /nonexistent/gone
        ("import-not-found", 1),  # notes.json: ends in a file extension
        ("import-ignored", 1),  # scripts/run: no extension, but it names a file that exists
    ]
    assert not [w for w in result.warnings if "cline" in w or "types/node" in w or "org/pkg" in w]
