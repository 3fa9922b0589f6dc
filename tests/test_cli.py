"""The command line, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from context_companion.agents import registry


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run tests with make check.\n")
    (ws / "api").mkdir()
    (ws / "api" / "AGENTS.md").write_text("Handlers return JSON errors.\n")
    (ws / "api" / "x.py").write_text("")
    return ws


@pytest.fixture
def env(tmp_path: Path) -> dict:
    home = tmp_path / "cli-home"
    home.mkdir()
    return {"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")}


def test_instruction_text_includes_memory(project, env):
    out = run("instruction", "--workspace", str(project), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip().endswith("--- End of Context from: AGENTS.md ---")
    assert "Run tests with make check." in out.stdout and "Handlers return JSON errors." not in out.stdout


def test_instruction_json_shape_and_open_files(project, env):
    out = run("instruction", "--workspace", str(project), "--open", str(project / "api" / "x.py"), "--json", env=env)
    data = json.loads(out.stdout)
    assert set(data) >= {"text", "etag", "tokens", "memoryFiles", "environmentContext"}
    assert set(data["tokens"]) >= {"total", "encoding", "estimated", "sections"}
    assert all(set(s) == {"id", "tokens"} for s in data["tokens"]["sections"])
    # Memory of the open files is delivered per turn (memory.onDemandDelivery = "turn"), not in the text.
    assert "Handlers return JSON errors." not in data["text"]
    tiers = {f["path"]: (f["tier"], f["included"]) for f in data["memoryFiles"]}
    assert tiers == {"AGENTS.md": ("workspace", True), "api/AGENTS.md": ("jit", False)}
    [update] = data["memoryUpdates"]
    assert update["path"] == "api/AGENTS.md" and "Handlers return JSON errors." in update["content"]
    assert update["reason"] == "active file api/x.py is under api/" and update["tokens"] > 0
    assert data["environmentContext"].startswith("# Environment\nToday's date:")
    assert data["initialMessage"].startswith("Here is the environment I am working in")


def test_instruction_is_deterministic(project, env):
    a = run("instruction", "--workspace", str(project), "--json", env=env)
    b = run("instruction", "--workspace", str(project), "--json", env=env)
    assert json.loads(a.stdout)["etag"] == json.loads(b.stdout)["etag"]


def test_profile_file_and_its_errors(project, env, tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"approvalMode": "plan", "tools": ["exit_plan_mode"]}))
    out = run("instruction", "--workspace", str(project), "--profile", str(profile), env=env)
    assert "Planning Mode" in out.stdout and "`exit_plan_mode`" in out.stdout
    profile.write_text("{not json")
    bad = run("instruction", "--workspace", str(project), "--profile", str(profile), env=env)
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr and "Traceback" not in bad.stderr
    missing = run("instruction", "--workspace", str(project), "--profile", str(tmp_path / "none.json"), env=env)
    assert missing.returncode == 2 and "file not found" in missing.stderr


def test_invalid_settings_file_exits_2_naming_file_and_field(project, env):
    (project / ".context-companion.toml").write_text("[environment]\nplacement = 'sideways'\n")
    out = run("instruction", "--workspace", str(project), env=env)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert ".context-companion.toml: environment.placement:" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_missing_template_names_resolved_path(project, env):
    out = run("instruction", "--workspace", str(project), env={**env, "CONTEXT_COMPANION_SYSTEM_MD": "true"})
    assert out.returncode == 2
    assert str(project / ".context-companion" / "system.md") in out.stderr


def test_memory_listing_and_json(project, env):
    out = run("memory", "--workspace", str(project), env=env)
    assert out.returncode == 0
    assert "+ AGENTS.md" in out.stdout and "- api/AGENTS.md" in out.stdout and "1 of 2 files included" in out.stdout
    data = json.loads(
        run("memory", "--workspace", str(project), "--open", str(project / "api" / "x.py"), "--json", env=env).stdout
    )
    assert [f["included"] for f in data["files"]] == [True, True]


def test_compression_prompt_and_usage_errors(env, tmp_path):
    out = run("compression-prompt", env=env)
    assert out.returncode == 0 and "<state_snapshot>" in out.stdout and "ignore" in out.stdout.lower()
    assert run("instruction", "--workspace", str(tmp_path / "nope"), env=env).returncode == 2
    assert run(env=env).returncode == 2
    assert run("serve", "--help", env=env).returncode == 0


def test_explain_per_agent_table_json_and_unknown_agent(env, tmp_path):
    from rule_formats_repo import make_repo

    ws = make_repo(tmp_path / "repo")
    table = run("explain", "--agent", "codex", "--workspace", str(ws), "--open", str(ws / "pkg/mod.py"), env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("Codex (https://")
    assert any(line.startswith("+ AGENTS.override.md") for line in lines)
    assert any(line.startswith("- AGENTS.md") and "one file per folder" in line for line in lines)
    out = run("explain", "--agent", "windsurf", "--workspace", str(ws), "--json", env=env)
    data = json.loads(out.stdout)
    assert data["agent"] == "windsurf" and "AGENTS.md" in data["onlyAgent"]
    assert {f["path"] for f in data["listed"]} == {".windsurf/rules/decide.md", ".windsurf/rules/manual.md"}
    bad = run("explain", "--agent", "vim", "--workspace", str(ws), env=env)
    assert bad.returncode == 2 and bad.stdout == ""
    [line] = bad.stderr.strip().splitlines()
    said = line.removeprefix("context-companion: --agent vim: unknown agent; known agents: ")
    # The agents with hooks in the registry's order, each with its short names (or, where a short name is another
    # table's id, its name), then the tables without hooks.
    assert said.startswith("claude-code (or claude), gemini-cli (or gemini), codex, copilot-cli (GitHub Copilot CLI)")
    hooked = said.split(", cursor, ")[0]
    assert [part.split(" (")[0] for part in hooked.split(", ")] == list(registry.HOOK_AGENTS)
    assert "cline-cli (Cline CLI)" in hooked and "kilo-cli (or kilo)" in hooked
    assert said.endswith(
        ", cursor, copilot (GitHub Copilot in the editor), windsurf, cline (the Cline editor extension), continue,"
        " kiro, zed, vscode, context-companion"
    )


@pytest.mark.parametrize(("short", "agent"), [("claude", "claude-code"), ("gemini", "gemini-cli"), ("Codex", "codex")])
def test_explain_takes_the_short_names_users_type(env, project, short, agent):
    out = run("explain", "--agent", short, "--workspace", str(project), "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["agent"] == agent


def test_explain_help_and_the_readme_list_every_agent_id(env):
    from context_companion.memory.agents import AGENT_IDS

    help_text = " ".join(run("explain", "--help", env=env).stdout.split())
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    for agent in AGENT_IDS:
        assert agent in help_text and f"`{agent}`" in readme, agent


def test_every_open_adds_a_file(project, env):
    """A repeated --open kept only its last files: the others and the memory they bring were dropped."""
    (project / "web").mkdir()
    (project / "web" / "AGENTS.md").write_text("Web components are functions.\n")
    (project / "web" / "y.py").write_text("")
    base = ("memory", "--workspace", str(project), "--json")
    once = json.loads(run(*base, "--open", "web/y.py", "api/x.py", env=env).stdout)
    repeated = run(*base, "--open", "web/y.py", "--open", "api/x.py", env=env)
    assert repeated.returncode == 0, repeated.stderr
    assert json.loads(repeated.stdout) == once
    assert sorted(f["path"] for f in once["files"] if f["comesWithTurn"]) == ["api/AGENTS.md", "web/AGENTS.md"]
    turn = json.loads(run("turn", *base[1:], "--open", "web/y.py", "--open", "api/x.py", env=env).stdout)
    assert turn["context"]["otherOpenFiles"] == [str(project / "web" / "y.py")]


def test_repeated_files_are_listed_with_duplicate_of(tmp_path, env):
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Shared rules.\n")
    (ws / "CLAUDE.md").write_text("@AGENTS.md\n")
    os.link(ws / "AGENTS.md", ws / "GEMINI.md")
    memory = run("memory", "--workspace", str(ws), "--json", env=env)
    instruction = run("instruction", "--workspace", str(ws), "--json", env=env)
    assert memory.returncode == 0 and instruction.returncode == 0, memory.stderr + instruction.stderr
    for files in (json.loads(memory.stdout)["files"], json.loads(instruction.stdout)["memoryFiles"]):
        by_path = {f["path"]: f for f in files}
        assert by_path["AGENTS.md"]["included"] and "duplicateOf" not in by_path["AGENTS.md"]
        assert by_path["GEMINI.md"]["duplicateOf"] == "AGENTS.md"  # a hard link: the same file
        assert by_path["CLAUDE.md"]["duplicateOf"] == "AGENTS.md"
        assert by_path["CLAUDE.md"]["repeatedImports"] == [{"path": "AGENTS.md", "duplicateOf": "AGENTS.md"}]
    assert json.loads(instruction.stdout)["text"].count("Shared rules.") == 1


def test_relative_open_and_active_paths_resolve_against_the_workspace_like_git_c(project, env, tmp_path):
    # From elsewhere, "api/x.py" means <workspace>/api/x.py because --workspace is given.
    out = run("memory", "--workspace", str(project), "--active", "api/x.py", "--json", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert all(f["included"] for f in json.loads(out.stdout)["files"])
    # Without --workspace they resolve against the current directory (the workspace is the cwd too).
    out = run("instruction", "--open", "api/x.py", "--json", cwd=project, env=env)
    assert out.returncode == 0, out.stderr
    # api/AGENTS.md applies to the open file; by default it comes with the first turn.
    updates = json.loads(out.stdout)["memoryUpdates"]
    assert any("Handlers return JSON errors." in u["content"] for u in updates)
    # With --workspace, a path relative to the cwd alone is not what is meant.
    out = run("memory", "--workspace", str(project), "--open", "x.py", cwd=project / "api", env=env)
    assert out.returncode == 2 and "no such file" in out.stderr and out.stdout == ""


@pytest.mark.parametrize("command", ["memory", "instruction"])
@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--open", "api/missing.py", "no such file"),
        ("--active", "../elsewhere.py", "outside the workspace folder"),
        ("--open", "nope/", "no such file"),
        ("--open", "api", "a folder, not a file"),
        ("--active", "api/", "a folder, not a file"),
    ],
)
def test_a_bad_open_or_active_path_exits_2_with_one_line(project, env, tmp_path, command, flag, value, reason):
    (tmp_path / "elsewhere.py").write_text("")
    out = run(command, "--workspace", str(project), flag, value, cwd=tmp_path, env=env)
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and value in lines[0] and reason in lines[0] and flag in lines[0], out.stderr


def test_help_documents_how_relative_paths_resolve(env):
    out = run("instruction", "--help", env=env)
    assert "--active" in out.stdout and "like git -C" in out.stdout


def test_memory_token_totals_equal_the_memory_part_of_the_instruction(tmp_path, env):
    ws = tmp_path / "repo"
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Rules.\n\n\n\n\nMore rules after blank lines.\n")
    (ws / ".cursor" / "rules" / "db.mdc").write_text(
        "---\ndescription: Database migrations\n---\n" + "Long body that is never sent. " * 200 + "\n"
    )
    memory = json.loads(run("memory", "--workspace", str(ws), "--json", env=env).stdout)
    instruction = json.loads(run("instruction", "--workspace", str(ws), "--json", env=env).stdout)
    sections = {s["id"]: s["tokens"] for s in instruction["tokens"]["sections"]}
    assert memory["tokens"] == sections["memory"]
    listed = next(f for f in memory["files"] if f["path"] == ".cursor/rules/db.mdc")
    assert "Long body" not in memory["text"] and listed["reason"].endswith("(listed)")
    assert 0 < listed["tokens"] < 30  # its listing line, not its 1,200-word body


def test_instruction_prints_the_turns_memory_after_a_separator_and_instruction_only_leaves_it_out(project, env):
    args = ("instruction", "--workspace", str(project), "--open", "api/x.py")
    full = run(*args, env=env)
    only = run(*args, "--instruction-only", env=env)
    assert full.returncode == 0 and only.returncode == 0, full.stderr + only.stderr
    instruction, sep, memory = full.stdout.partition("\n\n======== Memory that comes with the first turn")
    assert sep and only.stdout == instruction  # the instruction's bytes, no newline added
    as_json = json.loads(run(*args, "--json", env=env).stdout)
    assert only.stdout == as_json["text"]
    assert "Run tests with make check." in instruction and "Handlers return JSON errors." not in instruction
    assert "--- Context from: api/AGENTS.md ---\nHandlers return JSON errors.\n--- End of Context" in memory
    # Nothing applies only to the open files: the instruction alone, as before.
    alone = run("instruction", "--workspace", str(project), env=env)
    assert "======== Memory" not in alone.stdout and alone.stdout.endswith("--- End of Context from: AGENTS.md ---\n")


def test_turn_prints_the_first_turn_with_cursor_and_selection(project, env):
    (project / "api" / "x.py").write_text("def handler():\n    return {'ok': True}\n")
    out = run("turn", "--workspace", str(project), "--open", "api/x.py", "--selection", "2:5-2:11", "--json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["kind"] == "full"
    # The cursor is where the selection ends; the model is told 1-based positions, like the flags.
    assert data["context"]["activeFile"] == {
        "path": str(project / "api" / "x.py"),
        "cursor": {"line": 2, "character": 11},
        "selectedText": "return",
    }
    assert [u["path"] for u in data["memoryUpdates"]] == ["api/AGENTS.md"]
    text = run("turn", "--workspace", str(project), "--open", "api/x.py", "--cursor", "1:5", env=env).stdout
    assert text.startswith("Here is what I have open in my editor right now") and '"line": 1' in text
    assert text.rstrip().endswith("Handlers return JSON errors.\n--- End of Context from: api/AGENTS.md ---")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--cursor", "3"], "--cursor 3: expected LINE:COL, 1-based (e.g. 12:5)"),
        (["--cursor", "0:1"], "--cursor 0:1: expected LINE:COL, 1-based (e.g. 12:5)"),
        (["--cursor", "9:1"], "--cursor 9:1: api/x.py has 3 lines"),
        (["--cursor", "1:99"], "--cursor 1:99: line 1 of api/x.py has 14 characters"),
        (["--selection", "1:1"], "--selection 1:1: expected START:END as LINE:COL:LINE:COL, 1-based (e.g. 3:1:5:10)"),
        (["--selection", "2:1-1:1"], "--selection 2:1-1:1: END comes before START"),
        (["--selection", "1:1-7:1"], "--selection 1:1-7:1: api/x.py has 3 lines"),
    ],
)
def test_turn_positions_are_checked_with_one_line_errors(project, env, flags, message):
    (project / "api" / "x.py").write_text("def handler():\n    pass\n")
    out = run("turn", "--workspace", str(project), "--open", "api/x.py", *flags, env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"context-companion: {message}"]


def test_turn_needs_an_active_file_for_a_position_and_checks_paths_like_instruction(project, env, tmp_path):
    out = run("turn", "--workspace", str(project), "--cursor", "1:1", env=env)
    assert out.returncode == 2 and out.stderr.strip() == (
        "context-companion: --cursor: needs an active file (--active or --open)"
    )
    (tmp_path / "elsewhere.py").write_text("")
    out = run("turn", "--workspace", str(project), "--active", "../elsewhere.py", cwd=tmp_path, env=env)
    assert out.returncode == 2 and "outside the workspace folder" in out.stderr
    helped = run("turn", "--help", env=env).stdout
    assert "1-based" in helped and "like git -C" in helped and "LINE:COL" in helped


def test_explain_codex_and_memory_show_a_sub_folder_override(project, env):
    (project / "api" / "AGENTS.override.md").write_text("Codex: handlers return problem+json.\n")
    rows = run("memory", "--workspace", str(project), "--open", "api/x.py", env=env).stdout.splitlines()
    assert rows[1].startswith("+ api/AGENTS.override.md  jit") and rows[1].endswith("(comes with the turn)")
    assert rows[2].startswith("- api/AGENTS.md") and "AGENTS.override.md in the same folder takes its place" in rows[2]
    updates = json.loads(run("turn", "--workspace", str(project), "--open", "api/x.py", "--json", env=env).stdout)
    assert [u["content"] for u in updates["memoryUpdates"]] == ["Codex: handlers return problem+json."]
    table = run("explain", "--agent", "codex", "--workspace", str(project), "--open", "api/x.py", env=env).stdout
    assert "- api/AGENTS.md " in table and "Codex reads one file per folder: AGENTS.override.md is used" in table


def test_a_link_in_the_workspace_is_judged_by_its_target(project, env, tmp_path):
    """``turn`` reads the active file for the selected text: a link inside the folder must not bring
    in a file outside it, and a link to an excluded file (.env) is excluded like the file."""
    secret = tmp_path / "private.txt"
    secret.write_text("TOPSECRET line one\nline two\n")
    (project / "notes.md").symlink_to(secret)
    out = run("turn", "--workspace", str(project), "--active", "notes.md", "--selection", "1:1:2:5", env=env)
    assert out.returncode == 2 and out.stdout == "" and "TOPSECRET" not in out.stderr
    assert "outside the workspace folder" in out.stderr
    (project / ".env").write_text("API_TOKEN=hunter2-secret\n")
    (project / "readme-link.md").symlink_to(project / ".env")
    out = run(
        "turn", "--workspace", str(project), "--active", "readme-link.md", "--selection", "1:1:1:25", "--json", env=env
    )
    assert "hunter2" not in out.stdout and "hunter2" not in out.stderr, out.stdout


def test_a_skipped_memory_file_is_told_once(tmp_path, env):
    """It was told twice in two wordings: the log's 'memory file /abs/AGENTS.md skipped: ...' and
    the result's 'AGENTS.md: skipped: ...' (and memory printed its row and a '!' line)."""
    ws = tmp_path / "repo"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_bytes(b"binary\0file\n")
    (ws / "CLAUDE.md").write_text("Use tabs.\n")
    instruction = run("instruction", "--workspace", str(ws), env=env)
    assert instruction.returncode == 0, instruction.stderr
    told = [line for line in instruction.stderr.splitlines() if "AGENTS.md" in line]
    assert told == ["context-companion: warning: AGENTS.md: skipped: binary file (NUL byte)"]
    for command in (("memory",), ("explain", "--agent", "codex")):
        out = run(*command, "--workspace", str(ws), env=env)
        assert out.returncode == 0 and "AGENTS.md" not in out.stderr, out.stderr
        assert [line for line in out.stdout.splitlines() if "AGENTS.md" in line and "skipped" in line] == [
            next(line for line in out.stdout.splitlines() if line.startswith("- AGENTS.md"))
        ]


def test_a_link_to_a_memory_file_does_not_repeat_its_import_warnings(tmp_path, env):
    ws = tmp_path / "repo"
    (ws / ".git").mkdir(parents=True)
    (ws / "web").mkdir()
    (ws / "AGENTS.md").write_text("# Rules\n@docs/missing.md\n")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")  # included once; the link is 'same file as AGENTS.md'
    (ws / "web" / "AGENTS.md").write_text("Web.\n@nope.md\n")
    (ws / "web" / "CLAUDE.md").symlink_to("AGENTS.md")  # neither is included: no file open under web/
    expected = [
        "AGENTS.md: import docs/missing.md failed: not found",
        "web/AGENTS.md: import nope.md failed: not found",
    ]
    memory = json.loads(run("memory", "--workspace", str(ws), "--json", env=env).stdout)
    assert memory["warnings"] == expected
    instruction = run("instruction", "--workspace", str(ws), "-q", "--json", env=env)
    assert json.loads(instruction.stdout)["warnings"] == expected
    plain = run("memory", "--workspace", str(ws), env=env).stdout
    assert [line for line in plain.splitlines() if line.startswith("!")] == [f"! {w}" for w in expected]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["turn", "--cursor"],
            "context-companion: turn --cursor: expected one argument (see context-companion turn --help)",
        ),
        (
            ["setup", "--agent", "vim"],
            f"context-companion: --agent vim: unknown agent; setup takes {registry.choices()}",
        ),
        (["setup"], "context-companion: setup --agent: required (see context-companion setup --help)"),
        (["explain"], "context-companion: explain --agent: required (see context-companion explain --help)"),
        (["memory", "--bogus"], "context-companion: unrecognized arguments: --bogus (see context-companion --help)"),
        (
            ["bogus"],
            "context-companion: bogus: unknown command; commands: serve, instruction, turn, memory, explain, "
            "agents, compression-prompt, mcp, hook, setup (see context-companion --help)",
        ),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args, error):
    """argparse printed its whole usage block before the error; every user error here is one line, with the one
    prefix ``context-companion:`` (argparse's own said ``context-companion setup: argument --agent: ...``)."""
    out = run(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == error + "\n"


def _subcommands() -> list[str]:
    from context_companion.cli.parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return list(sub.choices)


@pytest.mark.parametrize("command", _subcommands())
def test_every_commands_help_says_what_it_does(command: str) -> None:
    """``--help`` of every subcommand has a description: a sentence between the usage and the options."""
    out = run(command, "--help")
    assert out.returncode == 0, out.stderr
    usage, rest = out.stdout.split("\n\n", 1)
    assert usage.startswith(f"usage: context-companion {command}")
    description = rest.split("\n\n", 1)[0]
    assert not description.startswith("options:") and len(description.split()) >= 8, out.stdout
    assert description.rstrip().endswith((".", ")")), description


def test_setup_help_names_every_agent_and_its_short_name() -> None:
    out = run("setup", "--help").stdout
    said = " ".join(out.split())  # argparse wraps
    assert "--agent AGENT" in said
    for name in ("claude-code (or claude)", "gemini-cli (or gemini)", "codex", "copilot-cli (or copilot)", "opencode"):
        assert name in said, name
    assert "qwen-code (or qwen)" in said and "except with --remove" in said


def test_memory_finds_qwen_md_and_the_qwen_and_opencode_global_files(project, env):
    home = Path(env["HOME"])
    (project / "QWEN.md").write_text("Qwen: short answers.\n")
    (home / ".qwen").mkdir()
    (home / ".qwen" / "QWEN.md").write_text("Global Qwen habits.\n")
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "AGENTS.md").write_text("Global OpenCode habits.\n")
    out = run("memory", "--workspace", str(project), env=env)
    assert out.returncode == 0, out.stderr
    for path in ("+ QWEN.md", "+ ~/.qwen/QWEN.md", "+ ~/.config/opencode/AGENTS.md"):
        assert path in out.stdout, out.stdout
    off = run("memory", "--workspace", str(project), env={**env, "CONTEXT_COMPANION_MEMORY__SOURCES": '["agents"]'})
    assert off.returncode == 0 and "+ AGENTS.md" in off.stdout, off.stderr
    assert "QWEN.md" not in off.stdout and "~/.config/opencode" not in off.stdout, off.stdout


def test_a_qwen_md_with_the_text_of_agents_md_is_in_the_instruction_once(project, env):
    (project / "QWEN.md").write_text((project / "AGENTS.md").read_text())
    out = run("memory", "--workspace", str(project), env=env)
    assert "- QWEN.md" in out.stdout and "not included: same text as AGENTS.md" in out.stdout, out.stdout
    instruction = run("instruction", "--workspace", str(project), env=env)
    assert instruction.stdout.count("Run tests with make check.") == 1
