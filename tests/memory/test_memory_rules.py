"""Glob-scoped rules in the four conventions: frontmatter variants, globs, listing, bad input."""

from __future__ import annotations

from context_companion.memory.rules import expand_braces, split_frontmatter, split_globs


def test_context_companion_rules_globs_always_and_description(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".context-companion/rules/py.md": '---\ndescription: Python style\nglobs: "src/**/*.py"\nalwaysApply: false\n---\nPY RULE\n',
            ".context-companion/rules/always.md": "---\nalwaysApply: true\n---\nALWAYS RULE\n",
            ".context-companion/rules/db.md": "---\ndescription: How to write migrations\n---\nDB BODY\n",
            ".context-companion/rules/manual.md": "MANUAL BODY (no frontmatter)\n",
            ".context-companion/rules/nested/ignored.md": "---\nalwaysApply: true\n---\nNESTED\n",
        },
    )
    store = make_store(ws)
    none_open = store.compose([])
    assert "ALWAYS RULE" in none_open.text and "PY RULE" not in none_open.text
    assert "NESTED" not in none_open.text  # *.md: direct children only
    assert helpers.info(none_open, ".context-companion/rules/always.md").reason == "rule: always applies"
    assert (
        helpers.info(none_open, ".context-companion/rules/py.md").reason
        == "not included: no open file matches 'src/**/*.py'"
    )
    db = helpers.info(none_open, ".context-companion/rules/db.md")
    assert (db.included, db.reason) == (False, "not included: only a description (listed)")
    assert "DB BODY" not in none_open.text
    assert none_open.text.endswith(
        "--- Rules available on request ---\n"
        "These project rules are not loaded. Read one when its description fits the task at hand:\n"
        "- .context-companion/rules/db.md: How to write migrations\n"
        "--- End of rules available on request ---"
    )
    manual = helpers.info(none_open, ".context-companion/rules/manual.md")
    assert not manual.included and "MANUAL BODY" not in none_open.text

    with_py = store.compose([ws / "src/pkg/mod.py"])
    assert "PY RULE" in with_py.text
    assert (
        helpers.info(with_py, ".context-companion/rules/py.md").reason
        == "rule: glob 'src/**/*.py' matches src/pkg/mod.py"
    )
    assert "---\ndescription" not in with_py.text  # frontmatter stripped
    assert helpers.included(store.compose([ws / "lib/mod.py"])) == [".context-companion/rules/always.md"]


def test_cursor_mdc_comma_separated_unquoted_and_list_globs(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".cursor/rules/ts.mdc": "---\ndescription:\nglobs: *.ts, web/**/*.{tsx,jsx}\nalwaysApply: false\n---\nTS RULE\n",
            ".cursor/rules/list.mdc": "---\nglobs:\n  - docs/**\n  - '*.rst'\n---\nDOCS RULE\n",
            ".cursor/rules/always.mdc": "---\ndescription: always\nglobs: nothing/**\nalwaysApply: true\n---\nCURSOR ALWAYS\n",
            ".cursor/rules/not-a-rule.txt": "---\nalwaysApply: true\n---\nWRONG EXTENSION\n",
        },
    )
    store = make_store(ws)
    result = store.compose([ws / "web/app/page.tsx"])
    assert "TS RULE" in result.text and "DOCS RULE" not in result.text and "CURSOR ALWAYS" in result.text
    assert (
        helpers.info(result, ".cursor/rules/ts.mdc").reason
        == "rule: glob 'web/**/*.{tsx,jsx}' matches web/app/page.tsx"
    )
    assert "TS RULE" in store.compose([ws / "deep/x/y.ts"]).text  # a slash-free glob matches at any depth
    assert "DOCS RULE" in store.compose([ws / "README.rst"]).text
    assert "DOCS RULE" in store.compose([ws / "docs/guide/intro.md"]).text
    assert "WRONG EXTENSION" not in result.text
    assert ".cursor/rules/not-a-rule.txt" not in [f.path for f in result.files]


def test_copilot_instructions_and_apply_to(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".github/copilot-instructions.md": "COPILOT ALWAYS\n",
            ".github/instructions/py.instructions.md": '---\napplyTo: "**/*.py,**/*.pyi"\n---\nCOPILOT PY\n',
            ".github/instructions/team/go.instructions.md": "---\napplyTo: '**/*.go'\ndescription: Go\n---\nCOPILOT GO\n",
            ".github/instructions/all.instructions.md": "---\napplyTo: '**'\n---\nCOPILOT ALL\n",
            ".github/instructions/none.instructions.md": "COPILOT NO APPLYTO\n",
            ".github/instructions/readme.md": "NOT AN INSTRUCTIONS FILE\n",
        },
    )
    store = make_store(ws)
    result = store.compose([ws / "cmd/main.go"])
    assert "COPILOT ALWAYS" in result.text and "COPILOT ALL" in result.text and "COPILOT GO" in result.text
    assert "COPILOT PY" not in result.text and "COPILOT NO APPLYTO" not in result.text
    assert "NOT AN INSTRUCTIONS FILE" not in result.text
    assert helpers.info(result, ".github/instructions/none.instructions.md").reason == (
        "not included: no applyTo (used only when asked for)"
    )
    assert "COPILOT PY" in store.compose([ws / "stubs/a.pyi"]).text


def test_claude_rules_paths_and_unconditional(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".claude/rules/general.md": "CLAUDE GENERAL\n",
            ".claude/rules/frontend/react.md": "---\npaths:\n  - 'src/components/**/*.tsx'\n---\nCLAUDE REACT\n",
            ".claude/rules/api.md": "---\npaths: src/api/**, src/server/**\n---\nCLAUDE API\n",
        },
    )
    store = make_store(ws)
    none_open = store.compose([])
    assert "CLAUDE GENERAL" in none_open.text and "CLAUDE REACT" not in none_open.text
    hit = store.compose([ws / "src/components/ui/Button.tsx", ws / "src/server/main.ts"])
    assert "CLAUDE REACT" in hit.text and "CLAUDE API" in hit.text
    assert helpers.info(hit, ".claude/rules/api.md").reason == "rule: glob 'src/server/**' matches src/server/main.ts"


def test_rule_order_is_by_convention_then_path(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".claude/rules/a.md": "C",
            ".github/copilot-instructions.md": "G",
            ".cursor/rules/b.mdc": "---\nalwaysApply: true\n---\nU",
            ".context-companion/rules/z.md": "---\nalwaysApply: true\n---\nO",
            ".context-companion/rules/a.md": "---\nalwaysApply: true\n---\nO2",
            "AGENTS.md": "W",
        },
    )
    result = make_store(ws).compose([])
    assert helpers.included(result) == [
        "AGENTS.md",
        ".context-companion/rules/a.md",
        ".context-companion/rules/z.md",
        ".cursor/rules/b.mdc",
        ".github/copilot-instructions.md",
        ".claude/rules/a.md",
    ]
    assert {f.tier for f in result.files[1:]} == {"rule"}


def test_bad_frontmatter_is_reported_and_skipped(tmp_path, tree, make_store, helpers):
    ws = tmp_path / "ws"
    tree(
        ws,
        {
            ".cursor/rules/broken.mdc": "---\nglobs: [unclosed\nalwaysApply: true\n---\nBROKEN BODY\n",
            ".cursor/rules/badbool.mdc": "---\nalwaysApply: sometimes\n---\nBADBOOL BODY\n",
            ".cursor/rules/scalar.mdc": "---\njust a sentence\n---\nSCALAR BODY\n",
            ".cursor/rules/open.mdc": "---\nalwaysApply: true\nno closing line\n",
            ".cursor/rules/typo.mdc": "---\nalwaysapply: true\nglobs: '*.py'\n---\nTYPO BODY\n",
            ".cursor/rules/good.mdc": "---\nalwaysApply: true\n---\nGOOD BODY\n",
        },
    )
    result = make_store(ws).compose([ws / "a.py"])
    assert "GOOD BODY" in result.text and "TYPO BODY" in result.text
    for name in ("broken", "badbool", "scalar", "open"):
        f = helpers.info(result, f".cursor/rules/{name}.mdc")
        assert not f.included and f.reason.startswith("skipped: frontmatter"), f
        assert any(w.startswith(f".cursor/rules/{name}.mdc: skipped: frontmatter") for w in result.warnings)
    assert "BROKEN BODY" not in result.text and "BADBOOL BODY" not in result.text
    assert (
        ".cursor/rules/typo.mdc: unknown frontmatter key 'alwaysapply'; did you mean 'alwaysApply'?" in result.warnings
    )


def test_frontmatter_and_glob_helpers():
    fm = split_frontmatter("---\nglobs: *.ts\nalwaysApply: TRUE\n---\nbody")
    assert (fm.data, fm.body, fm.body_line, fm.error) == ({"globs": "*.ts", "alwaysApply": True}, "body", 4, None)
    assert split_frontmatter("no frontmatter\n---\n").data == {}
    assert split_globs("a/*.{ts,tsx}, 'b/**' ,, c") == ["a/*.{ts,tsx}", "b/**", "c"]
    assert expand_braces("{src,lib}/**/*.{ts,tsx}") == ["lib/**/*.ts", "lib/**/*.tsx", "src/**/*.ts", "src/**/*.tsx"]
    assert expand_braces("plain/{one}/x") == ["plain/{one}/x"]
    assert len(expand_braces("{a,b}" * 20)) <= 300  # capped, no blow-up


def test_rules_of_a_gitignored_rules_dir_are_still_read(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".gitignore": ".cursor/\n", ".cursor/rules/x.mdc": "---\nalwaysApply: true\n---\nLOCAL RULE\n"})
    assert "LOCAL RULE" in make_store(ws).compose([]).text


def test_frontmatter_skip_reasons_say_frontmatter_once(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    bad = {"yaml": "---\nglobs: [x\n---\nbody\n", "open": "---\nglobs: x\n", "list": "---\n- a\n---\nb\n"}
    tree(ws, {f".cursor/rules/{k}.mdc": v for k, v in bad.items()})
    store = make_store(ws)
    result = store.compose([])
    reasons = [f.reason for f in result.files] + list(result.warnings)
    reasons += [store.analyze(ws / f".cursor/rules/{k}.mdc", v).lens.title for k, v in bad.items()]
    assert len(reasons) == 9 and all("frontmatter" in r for r in reasons), reasons
    assert not [r for r in reasons if "frontmatter: frontmatter" in r]
