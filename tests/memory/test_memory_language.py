"""Language features computed by the core: diagnostics, links, hovers, code lens."""

from __future__ import annotations

from context_companion.memory import CodeLens, Position, Range


def codes(analysis):
    return sorted(d.code for d in analysis.diagnostics)


def test_import_diagnostics_links_and_hovers(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    (tmp_path / "outside.md").write_text("out")
    tree(
        ws,
        {
            "docs/ok.md": "fine text",
            "docs/chain.md": "@missing-deep.md",
            "loop.md": "@AGENTS.md",
        },
    )
    files = {"d": "x"}
    for i in range(1, 8):
        files[f"deep/d{i}.md"] = f"@d{i + 1}.md"
    tree(ws, files)
    text = "# Title\nsee @docs/ok.md\n@nope.md @../outside.md\n@loop.md\n@deep/d1.md\n@docs/chain.md\n"
    (ws / "AGENTS.md").write_text(text)
    store = make_store(ws)
    a = store.analyze(ws / "AGENTS.md", text)
    by_code = {d.code: d for d in a.diagnostics}
    assert set(by_code) == {"import-not-found", "import-outside-roots", "import-cycle", "import-too-deep"}
    nf = [d for d in a.diagnostics if d.code == "import-not-found"]
    assert [(d.range, d.severity) for d in nf] == [
        (Range(Position(2, 0), Position(2, 8)), "error"),  # @nope.md
        (Range(Position(5, 0), Position(5, 14)), "warning"),  # nested in docs/chain.md
    ]
    assert "nope.md" in nf[0].message and "not found" in nf[0].message
    assert "docs/chain.md" in nf[1].message and "missing-deep.md" in nf[1].message
    assert by_code["import-outside-roots"].range == Range(Position(2, 9), Position(2, 23))
    assert by_code["import-cycle"].range.start == Position(3, 0)  # loop.md imports AGENTS.md back
    assert by_code["import-too-deep"].range.start == Position(4, 0)
    link = a.links[0]
    assert (link.range, link.target) == (Range(Position(1, 4), Position(1, 15)), str(ws / "docs/ok.md"))
    assert str(ws / "nope.md") not in [lk.target for lk in a.links]
    hover = a.hovers[0]
    assert hover.range == link.range
    assert "docs/ok.md" in hover.markdown and str(ws / "docs/ok.md") in hover.markdown and "tokens" in hover.markdown


def test_lens_follows_the_last_composed_result(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "root", "src/AGENTS.md": "src rules", "src/a.py": ""})
    store = make_store(ws)
    jit = ws / "src/AGENTS.md"
    # Before any compose: the tier decides.
    assert store.analyze(jit, "src rules").lens == CodeLens(
        Range(Position(0, 0), Position(0, 9)), "not included: no open file under src/"
    )
    root = store.analyze(ws / "AGENTS.md", "root").lens.title
    assert root.endswith(" tokens · included: workspace memory (root → leaf)") and int(root.split()[0]) > 0
    result = store.compose([ws / "src/a.py"])
    tokens = next(f.tokens for f in result.files if f.path == "src/AGENTS.md")
    assert store.analyze(jit, "src rules").lens.title == f"{tokens} tokens · included: open file src/a.py is under src/"
    store.compose([])
    assert store.analyze(jit, "src rules").lens.title == "not included: no open file under src/"
    # Unsaved text counts: more text, more tokens.
    store.compose([ws / "src/a.py"])
    longer = store.analyze(jit, "src rules " * 50).lens.title
    assert int(longer.split()[0]) > tokens


def test_lens_of_dropped_and_empty_files(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "keep " * 10, "src/AGENTS.md": "drop " * 50})
    store = make_store(ws, max_tokens=30)
    store.compose([ws / "src/x"])
    assert (
        store.analyze(ws / "src/AGENTS.md", "drop " * 50).lens.title
        == "not included: dropped: memory.maxTokens (30) reached"
    )
    assert store.analyze(ws / "AGENTS.md", "\n\n").lens.title == "not included: empty"


def test_file_too_large(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "small"})
    store = make_store(ws, max_file_bytes=100)
    big = "line\n" * 30
    a = store.analyze(ws / "AGENTS.md", big)
    assert codes(a) == ["file-too-large"]
    assert a.diagnostics[0].range == Range(Position(20, 0), Position(20, 4))  # the first line left out
    assert "cut at memory.maxFileBytes (100): 100 of 150 bytes included" in a.diagnostics[0].message
    assert a.lens.title.endswith("tokens · included: workspace memory (root → leaf)")


def test_a_file_cut_by_the_total_cap_says_so(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "a\n" * 300, "CLAUDE.md": "c\n" * 300, "GEMINI.md": "g\n" * 300})
    store = make_store(ws, max_total_bytes=900)
    store.compose([])
    assert codes(store.analyze(ws / "AGENTS.md", "a\n" * 300)) == []
    gemini = store.analyze(ws / "GEMINI.md", "g\n" * 300).diagnostics
    assert [d.code for d in gemini] == ["memory-total-cap"] and "this file is cut" in gemini[0].message
    claude = store.analyze(ws / "CLAUDE.md", "c\n" * 300).diagnostics
    assert [d.code for d in claude] == ["memory-total-cap"] and "dropped: memory.maxTotalBytes (900)" in claude[
        0
    ].message


def test_frontmatter_diagnostics(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"src/app.py": "", "lib/x.ts": ""})
    store = make_store(ws)
    rule = ws / ".cursor/rules/r.mdc"
    bad = "---\ndescription: x\nglobs: [oops\n---\nbody\n"
    a = store.analyze(rule, bad)
    assert codes(a) == ["frontmatter-invalid"]
    assert a.diagnostics[0].severity == "error" and a.diagnostics[0].range.start.line == 2
    assert a.lens.title.startswith("not included: skipped: frontmatter")

    typo = "---\nglob: '*.py'\nalwaysApply: true\n---\nbody\n"
    a = store.analyze(rule, typo)
    assert codes(a) == ["frontmatter-unknown-key"]
    d = a.diagnostics[0]
    assert (d.range, d.severity) == (Range(Position(1, 0), Position(1, 4)), "warning")
    assert "did you mean 'globs'" in d.message


def test_glob_matching_nothing(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".gitignore": "node_modules/\n", "src/app.py": "", "node_modules/x.go": ""})
    store = make_store(ws)
    text = "---\nglobs: src/**/*.py, **/*.go, docs/*.rst\n---\nbody\n"
    a = store.analyze(ws / ".cursor/rules/r.mdc", text)
    nothing = [d for d in a.diagnostics if d.code == "glob-matches-nothing"]
    assert [d.message for d in nothing] == [
        "The glob '**/*.go' matches no file in this workspace folder.",
        "The glob 'docs/*.rst' matches no file in this workspace folder.",
    ]
    assert nothing[1].range == Range(Position(1, 29), Position(1, 39))
    applyto = "---\napplyTo:\n  - 'src/**'\n  - 'nowhere/**'\n---\nx\n"
    a = store.analyze(ws / ".github/instructions/a.instructions.md", applyto)
    assert [(d.code, d.range.start.line) for d in a.diagnostics] == [("glob-matches-nothing", 3)]


def test_imports_inside_a_rule_body_are_positioned_in_the_file(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"notes.md": "n"})
    store = make_store(ws)
    text = "---\nalwaysApply: true\n---\nBody @../../notes.md and @gone.md\n"
    a = store.analyze(ws / ".context-companion/rules/x.md", text)
    assert [(lk.range, lk.target) for lk in a.links] == [(Range(Position(3, 5), Position(3, 20)), str(ws / "notes.md"))]
    assert [(d.code, d.range) for d in a.diagnostics] == [("import-not-found", Range(Position(3, 25), Position(3, 33)))]


def test_is_memory_document(tmp_path, tree, make_store, global_dir):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "x"})
    store = make_store(ws)
    for path in (
        ws / "AGENTS.md",
        ws / "a/b/CLAUDE.local.md",
        ws / ".cursor/rules/x.mdc",
        ws / ".cursor/rules/team/x.md",  # Cursor reads .md rules too, and sub-folders of its rules
        ws / ".claude/rules/a/b.md",
        ws / ".github/copilot-instructions.md",
        global_dir / "GEMINI.md",
    ):
        assert store.is_memory_document(path), path
    for path in (ws / "README.md", ws / ".cursor/rules/x.txt", tmp_path / "AGENTS.md", ws / "docs/notes.md"):
        assert not store.is_memory_document(path), path
    assert store.analyze(ws / "README.md", "@x.md") == type(store.analyze(ws / "README.md", ""))()
