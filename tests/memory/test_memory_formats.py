"""Every rule format: which rules are active with which open file, overrides, generated copies."""

from __future__ import annotations

from rule_formats_repo import make_repo


def _state(result):
    return {f.path: f for f in result.files}


def test_every_format_with_nothing_open(tmp_path, make_store, helpers):
    ws = make_repo(tmp_path / "ws")
    result = make_store(ws).compose([])
    files = _state(result)
    text = result.text
    for always in (
        "CC ALWAYS",
        "CURSOR LEGACY",
        "COPILOT REPO",
        "COPILOT ALL",
        "WINDSURF LEGACY",
        "CONTINUE ALWAYS",
        "CONTINUE NONAME",  # no alwaysApply, no globs/regex: always (the missing name is only a diagnostic)
        "KIRO ALWAYS",
        "ZED RULES",
        "AGENT DOT MD",
        "JUNIE GUIDELINES",
        "ROO RULE",
        "ROOT OVERRIDE",
    ):
        assert always in text, always
    for scoped in (
        "CURSOR TS",
        "CURSOR NESTED PKG",
        "WINDSURF NESTED PKG",
        "COPILOT PY",
        "CLAUDE ANY PY",
        "WINDSURF TS",
        "CLINE PKG",
        "CONTINUE SQL REGEX",
        "KIRO PY",
        "WINDSURF DECIDE",
        "WINDSURF MANUAL",
        "KIRO AUTO",
        "KIRO MANUAL",
        "CONTINUE TS",
        "KIRO NESTED",
        "COPILOT NESTED",
    ):
        assert scoped not in text, scoped
    # AGENTS.override.md takes AGENTS.md's place in its folder; CLAUDE.md and GEMINI.md stay.
    assert files["AGENTS.md"].reason == "not included: AGENTS.override.md in the same folder takes its place"
    assert "ROOT AGENTS" not in text and "ROOT CLAUDE" in text and "ROOT GEMINI" in text
    # model_decision, manual, auto and alwaysApply: false rules are listed by description (or name).
    listing = text[text.index("--- Rules available on request ---") :]
    assert "- .windsurf/rules/decide.md: Release steps" in listing
    assert "- .windsurf/rules/manual.md: Rarely needed" in listing
    assert "- .kiro/steering/auto.md: Deploying" in listing
    assert "- .continue/rules/ts.md: TypeScript rules" in listing
    assert ".kiro/steering/manual.md" in listing  # no description: listed by path


def test_generated_copies_are_included_once(tmp_path, make_store):
    ws = make_repo(tmp_path / "ws")
    result = make_store(ws).compose([])
    files = _state(result)
    assert result.text.count("Use tabs, never spaces.") == 1
    assert files[".cursor/rules/gen.mdc"].included
    for copy in (".windsurf/rules/always.md", ".clinerules/01-all.md"):
        assert files[copy].duplicate_of == ".cursor/rules/gen.mdc"
        assert files[copy].reason == "not included: same text as .cursor/rules/gen.mdc"
        assert files[copy].to_wire()["duplicateOf"] == ".cursor/rules/gen.mdc"


def test_open_files_activate_globs_regexes_and_nested_rule_dirs(tmp_path, make_store):
    ws = make_repo(tmp_path / "ws")
    store = make_store(ws)
    py = _state(store.compose([ws / "pkg/mod.py"]))
    assert py["pkg/.cursor/rules/pkg.mdc"].reason == "rule: pkg/mod.py is under pkg/"
    assert py["pkg/.windsurf/rules/pkg.md"].included
    assert py[".github/instructions/py.instructions.md"].reason == "rule: glob '**/*.py' matches pkg/mod.py"
    assert py[".claude/rules/any-py.md"].included
    # Claude's dialect: '*.py' is a top-level file only.
    assert not py[".claude/rules/root-py.md"].included
    assert py[".clinerules/02-py.md"].reason == "rule: glob 'pkg/**' matches pkg/mod.py"
    assert py[".kiro/steering/py.md"].included
    assert py["pkg/AGENTS.md"].included and py["pkg/CLAUDE.md"].included
    assert "pkg/.kiro/steering/nested.md" not in py  # Kiro has no nested steering directories
    assert "pkg/.github/copilot-instructions.md" not in py
    top = _state(store.compose([ws / "setup.py"]))
    assert top[".claude/rules/root-py.md"].included

    ts = _state(store.compose([ws / "web/app.ts"]))
    assert ts[".cursor/rules/ts.mdc"].included and ts[".windsurf/rules/ts.md"].included
    assert ts[".continue/rules/ts.md"].reason == "rule: glob 'web/**' matches web/app.ts"
    assert not ts["pkg/.cursor/rules/pkg.mdc"].included

    sql = _state(store.compose([ws / "src/db.sql"]))
    assert sql[".continue/rules/sql.md"].reason == "rule: regex '^SELECT' matches the text of src/db.sql"
    assert not _state(store.compose([ws / "web/app.ts"]))[".continue/rules/sql.md"].included


def test_copilot_exclude_agent_follows_profile_interactive(tmp_path, make_store):
    ws = make_repo(tmp_path / "ws")
    store = make_store(ws)
    interactive = _state(store.compose([ws / "pkg/mod.py"]))
    alone = _state(store.compose([ws / "pkg/mod.py"], interactive=False))
    assert interactive[".github/instructions/py.instructions.md"].included
    py = alone[".github/instructions/py.instructions.md"]
    assert (py.included, py.reason) == (
        False,
        "not included: excludeAgent 'coding-agent' and profile.interactive is false",
    )
    assert alone[".github/instructions/review.instructions.md"].included  # code-review never excludes


def test_memory_sources_turn_families_off(tmp_path, make_store):
    ws = make_repo(tmp_path / "ws")
    sources = ["agents", "claude", "gemini", "cursor", "context-companion"]
    result = make_store(ws, sources=sources).compose([])
    paths = {f.path for f in result.files}
    assert "AGENTS.override.md" not in paths  # codex off: AGENTS.md is back
    assert _state(result)["AGENTS.md"].included
    assert not any(p.startswith((".windsurf", ".kiro", ".continue", ".clinerules", ".github")) for p in paths)
    assert ".rules" not in paths and ".cursorrules" in paths


def test_user_level_rules_from_home(tmp_path, make_store, home):
    ws = make_repo(tmp_path / "ws")
    (home / ".claude/rules").mkdir(parents=True)
    (home / ".claude/rules/mine.md").write_text("---\npaths: ['**/*.py']\n---\nMY CLAUDE RULE\n")
    (home / ".kiro/steering").mkdir(parents=True)
    (home / ".kiro/steering/mine.md").write_text("MY KIRO STEERING\n")
    (home / ".codex").mkdir()
    (home / ".codex/AGENTS.md").write_text("CODEX GLOBAL\n")
    store = make_store(ws)
    assert "MY KIRO STEERING" in store.compose([]).text
    assert "MY CLAUDE RULE" not in store.compose([]).text
    files = _state(store.compose([ws / "pkg/mod.py"]))
    assert files["~/.claude/rules/mine.md"].included
    assert files["~/.codex/AGENTS.md"].included


def _explain(store, agent, *open_files, interactive=True):
    wire = store.explain(agent, list(open_files), open_files[-1] if open_files else None, interactive=interactive)
    return wire.to_wire()


def _loaded(wire):
    return [f["path"] for f in wire["files"]]


def test_explain_each_agent_on_the_fixture(tmp_path, make_store, home):
    ws = make_repo(tmp_path / "ws")
    (home / ".claude").mkdir()
    (home / ".claude/CLAUDE.md").write_text("MY CLAUDE\n")
    store = make_store(ws)
    py = ws / "pkg/mod.py"

    codex = _explain(store, "codex", py)
    assert _loaded(codex) == ["AGENTS.override.md"]
    reasons = {f["path"]: f["reason"] for f in codex["notLoaded"]}
    assert reasons["AGENTS.md"] == "Codex reads one file per folder: AGENTS.override.md is used"
    assert reasons["pkg/AGENTS.md"] == "Codex does not read memory files in sub-folders"

    claude = _explain(store, "claude-code", py)
    assert _loaded(claude) == [
        "~/.claude/CLAUDE.md",
        "CLAUDE.md",
        "pkg/CLAUDE.md",
        ".claude/rules/any-py.md",
    ]
    rule = claude["files"][-1]
    assert (rule["trigger"], rule["glob"]) == ("glob", "**/*.py")
    assert rule["why"] == "paths: glob '**/*.py' matches pkg/mod.py"

    gemini = _explain(store, "gemini-cli")
    assert _loaded(gemini) == ["GEMINI.md"]

    cursor = _explain(store, "cursor", py)
    assert _loaded(cursor) == [
        "AGENTS.md",
        "pkg/AGENTS.md",
        ".cursor/rules/gen.mdc",
        "pkg/.cursor/rules/pkg.mdc",
        ".cursorrules",
    ]
    # AGENTS.override.md is Codex's: Cursor reads the AGENTS.md our instruction leaves out.
    assert cursor["onlyAgent"] == ["AGENTS.md"]
    windsurf = _explain(store, "windsurf", ws / "web/app.ts")
    assert "AGENTS.md" in _loaded(windsurf) and "AGENTS.md" in windsurf["onlyAgent"]
    assert ".windsurf/rules/always.md" in windsurf["onlyAgent"]  # a generated copy we include once
    assert {f["path"] for f in windsurf["listed"]} == {".windsurf/rules/decide.md", ".windsurf/rules/manual.md"}

    copilot = _explain(store, "copilot", py)
    assert ".github/instructions/py.instructions.md" in _loaded(copilot)
    assert "pkg/.github/copilot-instructions.md" not in _loaded(copilot)
    alone = _explain(store, "copilot", py, interactive=False)
    assert ".github/instructions/py.instructions.md" not in _loaded(alone)
    assert ".github/instructions/review.instructions.md" in _loaded(alone)

    cline = _explain(store, "cline", py)
    assert ".clinerules/02-py.md" in _loaded(cline) and ".cursorrules" not in _loaded(cline)
    assert {f["path"]: f["reason"] for f in cline["notLoaded"]}[".cursorrules"] == (
        "Cline reads .cursorrules only when it has no rules of its own"
    )

    cont = _explain(store, "continue", ws / "src/db.sql")
    sql = next(f for f in cont["files"] if f["path"] == ".continue/rules/sql.md")
    assert sql["trigger"] == "regex" and "glob" not in sql
    assert [f["path"] for f in cont["listed"]] == [".continue/rules/ts.md"]

    kiro = _explain(store, "kiro", py)
    assert ".kiro/steering/py.md" in _loaded(kiro) and ".kiro/steering/tech.md" in _loaded(kiro)
    assert {f["path"] for f in kiro["listed"]} == {".kiro/steering/auto.md", ".kiro/steering/manual.md"}

    zed = _explain(store, "zed", py)
    assert _loaded(zed) == [".rules"]

    ours = _explain(store, "context-companion", py)
    assert ours["onlyAgent"] == [] and ours["onlyContextCompanion"] == []
    assert ".cursor/rules/gen.mdc" in _loaded(ours) and ".windsurf/rules/always.md" not in _loaded(ours)


def test_a_sub_folders_override_takes_its_agents_md_place_in_every_tier(tmp_path, tree, make_store, helpers):
    # Codex reads AGENTS.override.md instead of AGENTS.md in each folder from the repository root down.
    repo = tmp_path / "repo"
    tree(
        repo,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "AGENTS.md": "REPO PLAIN\n",
            "AGENTS.override.md": "REPO OVERRIDE\n",
            "svc/AGENTS.md": "SVC PLAIN\n",
            "svc/AGENTS.override.md": "SVC OVERRIDE\n",
            "svc/api/AGENTS.md": "API PLAIN\n",
            "svc/api/AGENTS.override.md": "API OVERRIDE\n",
            "svc/api/h.go": "package api\n",
            "svc/web/AGENTS.md": "WEB PLAIN\n",
            "svc/web/page.ts": "",
        },
    )
    ws = repo / "svc"  # a folder below the repository root: the root's files are the workspace tier too
    store = make_store(ws)
    result = store.compose([ws / "api/h.go", ws / "web/page.ts"], ws / "api/h.go")
    files = _state(result)
    shadowed = "not included: AGENTS.override.md in the same folder takes its place"
    for plain, override, tier in (
        ("../AGENTS.md", "../AGENTS.override.md", "workspace"),
        ("AGENTS.md", "AGENTS.override.md", "workspace"),
        ("api/AGENTS.md", "api/AGENTS.override.md", "jit"),
    ):
        assert (files[override].tier, files[override].included) == (tier, True), override
        assert (files[plain].tier, files[plain].included, files[plain].reason) == (tier, False, shadowed), plain
    assert files["web/AGENTS.md"].included  # no override in web/: its AGENTS.md stays
    for text in ("REPO OVERRIDE", "SVC OVERRIDE", "API OVERRIDE", "WEB PLAIN"):
        assert text in result.text
    for text in ("REPO PLAIN", "SVC PLAIN", "API PLAIN"):
        assert text not in result.text
    # Codex says the same of the sub-folder it does not read, and of the file the override hides.
    codex = _explain(store, "codex", ws / "api/h.go")
    reasons = {f["path"]: f["reason"] for f in codex["notLoaded"]}
    assert reasons["api/AGENTS.md"] == "Codex reads one file per folder: AGENTS.override.md is used"
    assert reasons["api/AGENTS.override.md"] == "Codex does not read memory files in sub-folders"
    assert _loaded(codex) == ["../AGENTS.override.md", "AGENTS.override.md"]


def test_an_override_created_later_in_a_sub_folder_takes_over_and_goes_away_again(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"api/AGENTS.md": "API PLAIN\n", "api/h.go": ""})
    store = make_store(ws)
    h = ws / "api/h.go"
    assert "API PLAIN" in store.compose([h], h).text
    override = ws / "api/AGENTS.override.md"
    override.write_text("API OVERRIDE\n")
    store.apply_changes([override])
    text = store.compose([h], h).text
    assert "API OVERRIDE" in text and "API PLAIN" not in text
    override.unlink()
    store.apply_changes([override])
    assert "API PLAIN" in store.compose([h], h).text


def test_sub_folder_files_of_a_family_turned_off_are_not_read(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(
        ws,
        {"api/AGENTS.md": "API PLAIN\n", "api/AGENTS.override.md": "API OVERRIDE\n", "api/GEMINI.md": "API GEMINI\n"},
    )
    h = ws / "api/x.py"
    h.write_text("")
    paths = [f.path for f in make_store(ws, sources=["agents", "claude"]).compose([h], h).files]
    assert paths == ["api/AGENTS.md"]  # no codex: no override; no gemini: no GEMINI.md, in sub-folders too
