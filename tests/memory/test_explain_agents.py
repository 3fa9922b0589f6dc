"""`explain --agent` as today's Claude Code, Gemini CLI and Codex load memory (the versions in
docs/agents.md), each defect with a minimal repository: what they load, how they keep it
(``reading``), and the token count of what they really read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def explain(agent: str, ws: Path, *args: str, home: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "context_companion",
            "explain",
            "--agent",
            agent,
            "--workspace",
            str(ws),
            "--json",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "outer" / "repo"
    (ws / ".git").mkdir(parents=True)
    return ws


def loaded(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in data["files"]}


def test_gemini_reads_a_subfolder_gemini_md_just_in_time_not_at_start(repo: Path, home: Path) -> None:
    (repo / "GEMINI.md").write_text("# Root\nUse tabs.\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "GEMINI.md").write_text("# Pkg\n" + "A long package rule with several words.\n" * 40)
    (repo / "pkg" / "mod.py").write_text("")
    at_start = explain("gemini-cli", repo, home=home)
    assert list(loaded(at_start)) == ["GEMINI.md"] and at_start["tokens"] < 30
    assert at_start["checked"] == "0.61.0" and loaded(at_start)["GEMINI.md"]["reading"] == "start"
    reason = {f["path"]: f["reason"] for f in at_start["notLoaded"]}["pkg/GEMINI.md"]
    assert "just in time" in reason
    working = loaded(explain("gemini-cli", repo, "--active", "pkg/mod.py", home=home))
    assert working["pkg/GEMINI.md"]["reading"] == "just-in-time"


def test_codex_cuts_project_docs_at_32_kib(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text(("x" * 99 + "\n") * 400)  # 40,000 bytes
    data = explain("codex", repo, home=home)
    agents = loaded(data)["AGENTS.md"]
    assert "cut at Codex's project_doc_max_bytes (32768): 32768 of 40000 bytes read" in agents["why"]
    full = explain("cursor", repo, home=home)  # Cursor reads it whole
    assert agents["tokens"] < loaded(full)["AGENTS.md"]["tokens"] * 0.85
    (repo / "sub").mkdir()
    assert agents["reading"] == "start"


def test_agents_that_do_not_expand_imports_count_the_line_as_written(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text("@docs/big.md\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "big.md").write_text("Many words in the big document here.\n" * 300)
    for agent in ("codex", "copilot"):
        data = explain(agent, repo, home=home)
        assert loaded(data)["AGENTS.md"]["tokens"] < 40, (agent, data)  # the line and the block's frame
        assert "reads its @ imports as written" in loaded(data)["AGENTS.md"]["why"]
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text('{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}')
    gemini = explain("gemini-cli", repo, home=home)  # expands them
    assert loaded(gemini)["AGENTS.md"]["tokens"] > 1000
    assert gemini["assumed"] == [f"context.fileName ['AGENTS.md', 'GEMINI.md'] from {repo}/.gemini/settings.json"]


def test_gemini_without_context_filename_says_what_it_assumes(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text("Shared.\n")
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text('{\n  "context": {"fileName": ["AGENTS.md"]},\n}')
    data = explain("gemini-cli", repo, home=home)
    assert "AGENTS.md" not in loaded(data)
    settings = home / ".gemini" / "settings.json"
    assert data["assumed"] == [
        f"assumed Gemini CLI's default context.fileName ['GEMINI.md']: {settings} is not JSON that Gemini CLI can "
        "read (line 2, column 41: a trailing comma before '}'; Gemini CLI stops at start on it)"
    ]


GEMINI_JSONC = """{
  // Gemini CLI strips comments before it parses its settings.
  "context": {
    "fileName": ["AGENTS.md", "GEMINI.md"] /* both */
  }
}
"""


def test_gemini_settings_with_comments_are_read_as_gemini_reads_them(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text("Shared rules for every agent.\n")
    (repo / ".gemini").mkdir()
    settings = repo / ".gemini" / "settings.json"
    settings.write_text(GEMINI_JSONC)
    data = explain("gemini-cli", repo, home=home)
    assert loaded(data)["AGENTS.md"]["reading"] == "start"  # Gemini loads it itself: nothing to send again
    assert data["assumed"] == [f"context.fileName ['AGENTS.md', 'GEMINI.md'] from {settings}"]


def test_a_fifo_as_gemini_settings_does_not_stall_explain(repo: Path, home: Path) -> None:
    (repo / ".gemini").mkdir()
    settings = repo / ".gemini" / "settings.json"
    os.mkfifo(settings)  # no writer: a plain open() would wait forever
    data = explain("gemini-cli", repo, home=home)
    assert data["assumed"] == [
        f"assumed Gemini CLI's default context.fileName ['GEMINI.md']: cannot read {settings}: a FIFO (named pipe)"
    ]


def test_claude_code_lists_claude_md_above_the_repository_root(repo: Path, home: Path) -> None:
    (repo / "CLAUDE.md").write_text("Repo.\n")
    (repo.parent / "CLAUDE.md").write_text("Outer folder memory.\n")
    (repo.parent / "CLAUDE.local.md").write_text("Outer local memory.\n")
    data = explain("claude-code", repo, home=home)
    above = [f for f in data["files"] if f["trigger"] == "above-root"]
    assert [f["path"] for f in above] == [str(repo.parent / "CLAUDE.md"), str(repo.parent / "CLAUDE.local.md")]
    assert all(f["reading"] == "tracked" and f["tokens"] > 0 for f in above)
    assert set(data["onlyAgent"]) == {str(repo.parent / "CLAUDE.md"), str(repo.parent / "CLAUDE.local.md")}
    assert loaded(data)["CLAUDE.md"]["reading"] == "tracked"


def test_claude_code_reads_agents_md_only_without_a_claude_md(repo: Path, home: Path) -> None:
    (repo / "AGENTS.md").write_text("Shared rules.\n")
    alone = loaded(explain("claude-code", repo, home=home))
    assert alone["AGENTS.md"]["reading"] == "start"  # read at start, edits not seen
    assert "does not see later edits" in alone["AGENTS.md"]["why"]

    (repo / "CLAUDE.md").write_text("Claude only.\n")
    beside = explain("claude-code", repo, home=home)
    assert "AGENTS.md" not in loaded(beside) and "AGENTS.md" in beside["onlyContextCompanion"]

    (repo / "CLAUDE.md").write_text("@AGENTS.md\n")
    imported = loaded(explain("claude-code", repo, home=home))
    assert imported["AGENTS.md"]["trigger"] == "import" and imported["AGENTS.md"]["reading"] == "tracked"


def test_qwen_md_is_memory_read_by_qwen_code_only_and_a_link_to_agents_md_counts_once(repo: Path, home: Path) -> None:
    """QWEN.md is a default memory file name: Qwen Code reads it itself (0.24.4), Claude Code, Codex, Copilot CLI
    and OpenCode never do (measured: Copilot CLI 1.0.102's request has no QWEN.md), so explain says so."""
    (repo / "AGENTS.md").write_text("Shared rules.\n")
    (repo / "QWEN.md").write_text("Qwen: answer briefly.\n")
    qwen = explain("qwen-code", repo, home=home)
    assert loaded(qwen)["QWEN.md"]["reading"] == "start" and "QWEN.md" not in qwen["onlyAgent"]
    for agent, name in (("claude-code", "Claude Code"), ("codex", "Codex"), ("copilot-cli", "GitHub Copilot CLI")):
        data = explain(agent, repo, home=home)
        assert "QWEN.md" not in loaded(data), agent
        assert {f["path"]: f["reason"] for f in data["notLoaded"]}["QWEN.md"] == f"{name} does not read QWEN.md"
        assert "QWEN.md" in data["onlyContextCompanion"], agent
    ours = explain("context-companion", repo, home=home)
    assert "QWEN.md" in loaded(ours)

    (repo / "QWEN.md").unlink()
    (repo / "QWEN.md").symlink_to("AGENTS.md")  # one file under two names
    ours = loaded(explain("context-companion", repo, home=home))
    assert sum(1 for f in ours.values() if f.get("inTotal", True)) == 1, ours
    qwen = explain("qwen-code", repo, home=home)
    assert loaded(qwen)["QWEN.md"].get("inTotal") is False and "counted once" in loaded(qwen)["QWEN.md"]["why"]


def test_qwen_and_opencode_global_files(repo: Path, home: Path) -> None:
    """~/.qwen/QWEN.md and ~/.qwen/AGENTS.md (Qwen Code 0.24.4's global memory), ~/.config/opencode/AGENTS.md
    (OpenCode 1.18.33's, which it reads instead of ~/.claude/CLAUDE.md): found, and read by their own agent only."""
    (repo / "AGENTS.md").write_text("Shared.\n")
    (home / ".qwen").mkdir()
    (home / ".qwen" / "QWEN.md").write_text("My Qwen habits.\n")
    (home / ".qwen" / "AGENTS.md").write_text("My agent habits.\n")
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "opencode" / "AGENTS.md").write_text("My OpenCode habits.\n")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("My Claude habits.\n")
    qwen = loaded(explain("qwen-code", repo, home=home))
    assert {"~/.qwen/QWEN.md", "~/.qwen/AGENTS.md"} <= set(qwen) and "~/.config/opencode/AGENTS.md" not in qwen
    opencode = explain("opencode", repo, home=home)
    assert "~/.config/opencode/AGENTS.md" in loaded(opencode) and "~/.claude/CLAUDE.md" not in loaded(opencode)
    reason = {f["path"]: f["reason"] for f in opencode["notLoaded"]}["~/.claude/CLAUDE.md"]
    assert reason == (
        "OpenCode reads only the first of ~/.config/opencode/AGENTS.md, ~/.claude/CLAUDE.md: "
        "~/.config/opencode/AGENTS.md is used"
    )
    (home / ".config" / "opencode" / "AGENTS.md").unlink()
    assert "~/.claude/CLAUDE.md" in loaded(explain("opencode", repo, home=home))
    claude = loaded(explain("claude-code", repo, home=home))
    assert "~/.qwen/QWEN.md" not in claude and "~/.claude/CLAUDE.md" in claude


def test_copilot_cli_expands_the_imports_of_agents_md_and_claude_md_not_of_gemini_md(repo: Path, home: Path) -> None:
    """Measured with Copilot CLI 1.0.102: each file an AGENTS.md or CLAUDE.md imports is in its request
    (<imported_custom_instruction source="…">), a GEMINI.md's @ line stays as written. GitHub Copilot in the
    editor (``--agent copilot``) is another agent, named apart."""
    (repo / "CLAUDE.md").write_text("Claude notes.\n@CLAUDE.local.md\n")
    (repo / "CLAUDE.local.md").write_text("Local notes " * 200 + "\n")
    (repo / "GEMINI.md").write_text("@docs/g.md\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "g.md").write_text("Gemini document words. " * 200 + "\n")
    cli = explain("copilot-cli", repo, home=home)
    files = loaded(cli)
    assert files["CLAUDE.local.md"]["trigger"] == "import" and files["CLAUDE.local.md"]["reading"] == "start"
    assert files["CLAUDE.local.md"]["why"] == "imported by CLAUDE.md (its text is counted there)"
    assert files["CLAUDE.md"]["tokens"] > 300 and "as written" not in files["CLAUDE.md"]["why"]
    assert files["GEMINI.md"]["tokens"] < 40
    assert "GitHub Copilot CLI reads its @ imports as written" in files["GEMINI.md"]["why"]
    assert cli["name"] == "GitHub Copilot CLI"
    editor = explain("copilot", repo, home=home)
    assert editor["name"] == "GitHub Copilot in the editor"
    assert "GitHub Copilot in the editor reads its @ imports as written" in loaded(editor)["CLAUDE.md"]["why"]


def test_explain_tells_the_two_copilots_apart_in_its_text(repo: Path, home: Path) -> None:
    (repo / "CLAUDE.local.md").write_text("Local.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})
    texts = {}
    for agent in ("copilot", "copilot-cli"):
        out = subprocess.run(
            [sys.executable, "-m", "context_companion", "explain", "--agent", agent, "--workspace", str(repo)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        texts[agent] = out.stdout
    assert texts["copilot"].startswith("GitHub Copilot in the editor (https://docs.github.com/")
    assert "GitHub Copilot in the editor does not read CLAUDE.local.md" in texts["copilot"]
    assert texts["copilot-cli"].startswith("GitHub Copilot CLI (https://docs.github.com/")
    assert "GitHub Copilot CLI does not read CLAUDE.local.md" in texts["copilot-cli"]
    assert "loaded by Context Companion, not by GitHub Copilot CLI: CLAUDE.local.md" in texts["copilot-cli"]


def explain_env(agent: str, ws: Path, home: Path, env: dict[str, str]) -> dict[str, Any]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "GEMINI_CLI_TRUST"))}
    full.update({"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg"), **env})
    argv = [sys.executable, "-m", "context_companion", "explain", "--agent", agent, "--workspace", str(ws), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, env=full, timeout=60)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_gemini_cli_reads_neither_settings_nor_memory_of_a_folder_it_does_not_trust(repo: Path, home: Path) -> None:
    """Gemini CLI 0.61 (measured: ``gemini -p`` against the stub): folder trust is on unless ~/.gemini/settings.json
    turns it off; a folder ~/.gemini/trustedFolders.json trusts is read whole (AGENTS.md by the project's
    context.fileName); an untrusted one makes ``-p`` stop, and ``--skip-trust`` runs without the project's settings."""
    (repo / "GEMINI.md").write_text("Gemini project memory.\n")
    (repo / "AGENTS.md").write_text("Shared.\n")
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text('{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}')
    (home / ".gemini").mkdir()
    (home / ".gemini" / "GEMINI.md").write_text("My Gemini habits.\n")
    untrusted = explain_env("gemini-cli", repo, home, {})
    assert set(loaded(untrusted)) == {"~/.gemini/GEMINI.md"}
    trusted_folders = home / ".gemini" / "trustedFolders.json"
    assert untrusted["assumed"][0].startswith(
        f"Gemini CLI does not trust {repo} (security.folderTrust is on and {trusted_folders} does not trust it): "
        f"it reads neither {repo}/.gemini/settings.json nor the project's memory files, only its global ones"
    )
    trusted_folders.write_text(json.dumps({str(repo.parent / "x"): "TRUST_PARENT"}))  # its parent folder trusted
    trusted = explain_env("gemini-cli", repo, home, {})
    assert {"GEMINI.md", "AGENTS.md"} <= set(loaded(trusted))
    assert trusted["assumed"] == [f"context.fileName ['AGENTS.md', 'GEMINI.md'] from {repo}/.gemini/settings.json"]
    trusted_folders.write_text(json.dumps({str(repo.parent / "x"): "TRUST_PARENT", str(repo): "DO_NOT_TRUST"}))
    assert set(loaded(explain_env("gemini-cli", repo, home, {}))) == {"~/.gemini/GEMINI.md"}
    assert "AGENTS.md" in loaded(explain_env("gemini-cli", repo, home, {"GEMINI_CLI_TRUST_WORKSPACE": "true"}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "GEMINI_CLI_TRUST"))}
    env.update({"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")})
    argv = [sys.executable, "-m", "context_companion", "explain", "--agent", "gemini", "--workspace", str(repo)]
    text = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60).stdout
    assert f"Gemini CLI's settings: Gemini CLI does not trust {repo} (security.folderTrust is on and " in text
    assert "+ ~/.gemini/GEMINI.md " in text
    assert any(
        line.startswith("- GEMINI.md ")
        and line.endswith("Gemini CLI does not trust this folder: it reads only its global files")
        for line in text.splitlines()
    ), text
    (home / ".gemini" / "settings.json").write_text('{"security": {"folderTrust": {"enabled": false}}}')
    assert "AGENTS.md" in loaded(explain_env("gemini-cli", repo, home, {}))


def test_qwen_code_trusts_every_folder_unless_folder_trust_is_turned_on(repo: Path, home: Path) -> None:
    (repo / "QWEN.md").write_text("Qwen project memory.\n")
    (home / ".qwen").mkdir()
    assert "QWEN.md" in loaded(explain_env("qwen-code", repo, home, {}))
    (home / ".qwen" / "settings.json").write_text('{"security": {"folderTrust": {"enabled": true}}}')
    data = explain_env("qwen-code", repo, home, {})
    assert "QWEN.md" not in loaded(data) and data["assumed"][0].startswith(f"Qwen Code does not trust {repo}")
    (home / ".qwen" / "trustedFolders.json").write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    assert "QWEN.md" in loaded(explain_env("qwen-code", repo, home, {}))


def test_variables_in_context_file_name_are_expanded_as_each_agent_expands_them(repo: Path, home: Path) -> None:
    """Gemini CLI 0.61: $VAR, ${VAR} and ${VAR:-default}; Qwen Code 0.24: $VAR and ${VAR} (no default);
    a variable that is not set stays as written (resolveEnvVarsInString in each one's code)."""
    (repo / "TEAM.md").write_text("Team rules.\n")
    (repo / "NOTES.md").write_text("Notes.\n")
    for folder in (".gemini", ".qwen"):
        (repo / folder).mkdir()
        (repo / folder / "settings.json").write_text(
            '{"context": {"fileName": ["$TEAM_MEMORY", "${NOTES:-NOTES.md}"]}}'
        )
    gemini = explain_env("gemini-cli", repo, home, {"TEAM_MEMORY": "TEAM.md", "GEMINI_CLI_TRUST_WORKSPACE": "true"})
    assert gemini["assumed"] == [f"context.fileName ['TEAM.md', 'NOTES.md'] from {repo}/.gemini/settings.json"]
    qwen = explain_env("qwen-code", repo, home, {"TEAM_MEMORY": "TEAM.md"})
    assert qwen["assumed"] == [f"context.fileName ['TEAM.md', '${{NOTES:-NOTES.md}}'] from {repo}/.qwen/settings.json"]
    unset = explain_env("gemini-cli", repo, home, {"GEMINI_CLI_TRUST_WORKSPACE": "true"})
    assert unset["assumed"] == [f"context.fileName ['$TEAM_MEMORY', 'NOTES.md'] from {repo}/.gemini/settings.json"]


def test_qwen_code_rules_and_local_memory(repo: Path, home: Path) -> None:
    """Qwen Code 0.24.4 (measured against the stub): .qwen/QWEN.local.md and the .qwen/rules without `paths` are in
    its system message at start; a rule with `paths` comes when its tools touch a matching file. No other agent
    reads them."""
    (repo / ".qwen" / "rules" / "py").mkdir(parents=True)
    (repo / ".qwen" / "QWEN.local.md").write_text("Local: the staging database is read-only.\n")
    (repo / ".qwen" / "rules" / "always.md").write_text("Always: write tests first.\n")
    (repo / ".qwen" / "rules" / "py" / "py.md").write_text('---\npaths:\n  - "src/**/*.py"\n---\nPython: type hints.\n')
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("")
    qwen = loaded(explain("qwen-code", repo, home=home))
    assert qwen[".qwen/QWEN.local.md"]["reading"] == "start" and qwen[".qwen/rules/always.md"]["reading"] == "start"
    assert ".qwen/rules/py/py.md" not in qwen
    working = loaded(explain("qwen-code", repo, "--active", "src/a.py", home=home))
    assert working[".qwen/rules/py/py.md"]["reading"] == "just-in-time"
    claude = explain("claude-code", repo, "--active", "src/a.py", home=home)
    assert not [p for p in loaded(claude) if p.startswith(".qwen/")]
    reasons = {f["path"]: f["reason"] for f in claude["notLoaded"]}
    assert reasons[".qwen/rules/always.md"] == "Claude Code does not read .qwen/rules"
    assert reasons[".qwen/QWEN.local.md"] == "Claude Code does not read .qwen/QWEN.local.md"
    assert {".qwen/QWEN.local.md", ".qwen/rules/always.md", ".qwen/rules/py/py.md"} <= set(
        claude["onlyContextCompanion"]
    )


def test_qwen_code_reads_the_folder_just_above_the_repository_root_too(repo: Path, home: Path) -> None:
    """Measured with Qwen Code 0.24.4: a QWEN.md in the repository root's parent folder is in its system message,
    one in the folder above that is not (its upward walk stops one folder past the root)."""
    (repo / "AGENTS.md").write_text("Root.\n")
    (repo.parent / "QWEN.md").write_text("Outer folder memory.\n")
    (repo.parent.parent / "QWEN.md").write_text("Further out.\n")
    data = explain("qwen-code", repo, home=home)
    above = [f for f in data["files"] if f["trigger"] == "above-root"]
    assert [f["path"] for f in above] == [str(repo.parent / "QWEN.md")]
    assert above[0]["reading"] == "start"
    assert (
        above[0]["why"] == "Qwen Code reads it in the folders above the workspace, 1 folder above the repository root"
    )
    claude = explain("claude-code", repo, home=home)
    assert not [f for f in claude["files"] if f["trigger"] == "above-root"]  # Claude Code reads CLAUDE.md there only
