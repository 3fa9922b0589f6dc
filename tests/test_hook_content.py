"""What the hooks say, on repositories shaped like the ones issue 33 tried (written in our own words):
through `context-companion hook` (no editor: from disk) and `explain`, as a user runs them.

- a monorepo whose ``CLAUDE.md`` is a title and ``@AGENTS.md``, with a large root AGENTS.md (~7,000
  characters) and each rule kept twice, in ``.cursor/rules`` and ``.claude/rules``, same text;
- a library whose ``CLAUDE.md`` and ``GEMINI.md`` are links to ``AGENTS.md``, in the root and in sub-folders;
- agents started in a sub-folder that holds memory of its own (``svc/AGENTS.md``, ``packages/core/GEMINI.md``);
- a rule in Japanese, small in characters, large in bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hook_runner import run_hook

PROMPT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini-cli": "BeforeAgent"}
SECTION = (
    "Run the unit tests of a package with its own test script before pushing; the shared fixtures live in "
    "the test-utils package and are never copied into a package. Keep each module small and named for what "
    "it holds.\n"
)
ROOT_AGENTS = "# Working in this monorepo\n\n" + "".join(f"## Part {i}\n\n{SECTION}\n" for i in range(24))
OVERVIEW = (
    "# Layout\n\nFront end in packages/front-end, back end in packages/back-end, shared code in packages/shared.\n"
)
API = "# API handlers\n\nEvery handler checks permissions first and returns typed errors.\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)
    return root


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    return write(
        tmp_path / "mono",
        {
            "AGENTS.md": ROOT_AGENTS,
            "CLAUDE.md": "# Claude Code Instructions\n\n@AGENTS.md\n",
            ".cursor/rules/overview.mdc": f"---\ndescription: layout\nalwaysApply: true\n---\n{OVERVIEW}",
            ".claude/rules/overview.md": OVERVIEW,
            ".cursor/rules/backend/api.mdc": f'---\nglobs: "packages/back-end/**/*.ts"\n---\n{API}',
            ".claude/rules/backend/api.md": f'---\npaths:\n  - "packages/back-end/**/*.ts"\n---\n{API}',
            "packages/back-end/src/app.ts": "export const app = 1;\n",
        },
    )


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    root = write(
        tmp_path / "lib",
        {
            "AGENTS.md": "# Library\n\nLINKED-ROOT: run the whole test suite with make test.\n",
            "src/models/AGENTS.md": "# Models\n\nLINKED-MODELS: each model class wraps one provider.\n",
        },
    )
    for folder in (root, root / "src" / "models"):
        (folder / "CLAUDE.md").symlink_to("AGENTS.md")
        (folder / "GEMINI.md").symlink_to("AGENTS.md")
    (root / ".gemini").mkdir()
    (root / ".gemini" / "settings.json").write_text('{"context": {"fileName": ["AGENTS.md", "GEMINI.md"]}}')
    return root


def hook(agent: str, cwd: Path, runtime: Path, session: str = "s1") -> str:
    payload = {"hook_event_name": PROMPT[agent], "session_id": session, "cwd": str(cwd), "prompt": "go on"}
    out = run_hook(agent, json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    if not out.stdout:
        return ""
    text: str = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def explain(agent: str, root: Path, *open_files: str) -> dict:
    args = ["explain", "--agent", agent, "--workspace", str(root), "--json", "-q"]
    if open_files:
        args += ["--open", *open_files]
    out = cli(*args, cwd=root)
    assert out.returncode == 0, out.stderr
    data: dict = json.loads(out.stdout)
    return data


def test_a_title_and_an_import_is_no_block_and_copies_the_agent_reads_are_not_sent(
    monorepo: Path, runtime: Path
) -> None:
    # Claude Code loads CLAUDE.md with the AGENTS.md it imports, and its own copy of the layout rule:
    # with no editor, nothing is left to send.
    assert hook("claude-code", monorepo, runtime) == ""
    # Gemini CLI reads none of them: the root memory whole and the rule once, no title-only block.
    gemini = hook("gemini-cli", monorepo, runtime)
    assert gemini.count("## Part 23") == 1 and gemini.count("Front end in packages/front-end") == 1
    assert "Claude Code Instructions" not in gemini and "CLAUDE.md" not in gemini
    assert "Left out" not in gemini
    # Codex reads AGENTS.md itself: only the rule.
    codex = hook("codex", monorepo, runtime)
    assert "## Part" not in codex and codex.count("Front end in packages/front-end") == 1
    # The memory report says why CLAUDE.md adds nothing of its own.
    memory = json.loads(cli("memory", "--workspace", str(monorepo), "--json", "-q", cwd=monorepo).stdout)
    claude = next(f for f in memory["files"] if f["path"] == "CLAUDE.md")
    assert (claude["included"], claude["reason"]) == (False, "not included: only repeats AGENTS.md")


def test_editing_one_copy_of_a_rule_sends_that_copy_only_and_takes_nothing_back(monorepo: Path, runtime: Path) -> None:
    first = hook("gemini-cli", monorepo, runtime)
    assert "--- Context from: .cursor/rules/overview.mdc (applies: always) ---" in first
    # The .claude copy now says more: the agent gets that copy; the .cursor copy it has is unchanged.
    (monorepo / ".claude/rules/overview.md").write_text(OVERVIEW + "Docs live in docs/.\n")
    edited = hook("gemini-cli", monorepo, runtime)
    assert "--- Context from: .claude/rules/overview.md (applies: always) ---" in edited
    assert ".cursor/rules/overview.mdc" not in edited and "no longer applies" not in edited
    # The .cursor copy catches up: its text is now the .claude copy's, which the agent has.
    (monorepo / ".cursor/rules/overview.mdc").write_text(
        f"---\ndescription: layout\nalwaysApply: true\n---\n{OVERVIEW}Docs live in docs/.\n"
    )
    caught_up = hook("gemini-cli", monorepo, runtime)
    assert "Docs live in docs/." not in caught_up and "no longer applies" not in caught_up
    assert "its text is now the one given earlier as .claude/rules/overview.md" in caught_up
    assert hook("gemini-cli", monorepo, runtime) == ""


def test_explain_counts_an_import_once_and_names_the_copy_the_agent_loads(monorepo: Path) -> None:
    claude = explain("claude-code", monorepo)
    files = {f["path"]: f for f in claude["files"]}
    assert files["AGENTS.md"]["why"] == "imported by CLAUDE.md (its text is counted there)"
    assert files["AGENTS.md"]["inTotal"] is False and "inTotal" not in files["CLAUDE.md"]
    assert claude["tokens"] == sum(f["tokens"] for f in claude["files"] if f.get("inTotal", True))
    assert claude["tokens"] < files["CLAUDE.md"]["tokens"] + files["AGENTS.md"]["tokens"]
    skipped = {f["path"]: f["reason"] for f in claude["notLoaded"]}
    assert skipped[".cursor/rules/overview.mdc"] == (
        "Claude Code does not read .cursor/rules; its text is the same as .claude/rules/overview.md, "
        "which Claude Code loads"
    )


def test_links_are_one_file_for_explain_and_the_hook(linked: Path, runtime: Path) -> None:
    for agent in ("claude-code", "gemini-cli", "codex"):
        assert hook(agent, linked, runtime) == "", agent  # each reads the root file under its own name
    claude = {f["path"]: f["reason"] for f in explain("claude-code", linked)["notLoaded"]}
    assert claude["AGENTS.md"] == "the same file as CLAUDE.md (a link), which Claude Code loads"
    assert claude["src/models/AGENTS.md"].startswith("the same file as src/models/CLAUDE.md (a link): no open file")
    codex = explain("codex", linked)
    assert {f["path"]: f["reason"] for f in codex["notLoaded"]}["CLAUDE.md"] == (
        "the same file as AGENTS.md (a link), which Codex loads"
    )
    assert "CLAUDE.md" not in codex["onlyContextCompanion"] and "GEMINI.md" not in codex["onlyContextCompanion"]


@pytest.mark.parametrize(
    ("agent", "folder", "memory", "edit"),
    [
        ("codex", "svc", "svc/AGENTS.md", "# Service\n\nSVC-TWO: the service answers in JSON.\n"),
        ("gemini-cli", "packages/core", "packages/core/GEMINI.md", "# Core\n\nCORE-TWO: core has no I/O.\n"),
    ],
)
def test_an_agent_started_in_a_sub_folder_gets_the_edit_of_that_folders_memory(
    tmp_path: Path, runtime: Path, agent: str, folder: str, memory: str, edit: str
) -> None:
    root = write(
        tmp_path / "repo",
        {
            "AGENTS.md": "# Root\n\nROOT: make check.\n",
            "svc/AGENTS.md": "# Service\n\nSVC-ONE: the service answers in XML.\n",
            "packages/core/GEMINI.md": "# Core\n\nCORE-ONE: core does I/O.\n",
        },
    )
    first = hook(agent, root / folder, runtime)
    assert "-ONE" not in first  # the agent read it itself at start
    (root / memory).write_text(edit)
    edited = hook(agent, root / folder, runtime)
    assert edit.splitlines()[-1] in edited
    assert f"--- Context from: {memory} (applies: sub-folder memory of {folder}/, where the agent runs; " in edited
    assert "changed on disk: this text replaces the earlier copy" in edited
    assert hook(agent, root / folder, runtime) == ""


def test_each_agent_is_sized_in_its_own_unit_and_a_file_over_it_comes_in_parts(tmp_path: Path, runtime: Path) -> None:
    # 3,100 characters of Japanese: 9,300 UTF-8 bytes, over what one of Codex's prompts takes (9,800 bytes in all).
    rule = "# 日本語の規則\n\n" + "".join(f"{i}: 関数には必ず型注釈を付けてください。\n" for i in range(160))
    root = write(
        tmp_path / "ja",
        {
            "AGENTS.md": "# Root\n\nROOT-JA: make check.\n",
            ".cursor/rules/ja.mdc": f"---\nalwaysApply: true\n---\n{rule}",
            ".github/copilot-instructions.md": "COPILOT-ALL: keep diffs small.\n",
        },
    )
    claude = hook("claude-code", root, runtime)
    assert "159: 関数" in claude and "Still to come" not in claude and len(claude) <= 10_000
    codex = hook("codex", root, runtime)
    assert len(codex.encode()) <= 9_800 and "COPILOT-ALL" in codex
    assert ".cursor/rules/ja.mdc, part 1 of 2 (applies: always) ---" in codex and "\n0: 関数" in codex
    assert codex.splitlines()[-1] == (
        "Still to come with your next prompts (each stays under 9,800 bytes; read them yourself if you need them "
        f"now): {root / '.cursor/rules/ja.mdc'} (part 2 of 2)"
    )
    rest = hook("codex", root, runtime)  # the next prompt: the rest, from the line the first part ended before
    assert len(rest.encode()) <= 9_800 and ".cursor/rules/ja.mdc, part 2 of 2 (applies: always) ---" in rest
    assert "\n159: 関数" in rest and "COPILOT-ALL" not in rest and "Still to come" not in rest
    cut = codex.split("--- End of part 1 of 2")[0].rsplit("\n", 2)[-2]  # the last line of part 1
    assert cut.split(":")[0].isdigit() and f"\n{int(cut.split(':')[0]) + 1}: 関数" in rest
    assert hook("codex", root, runtime) == ""  # all given: nothing


def test_an_override_does_not_hide_a_file_claude_md_still_imports(tmp_path: Path) -> None:
    root = write(
        tmp_path / "ov",
        {
            "AGENTS.md": "# Team\n\nRun make check.\n",
            "AGENTS.override.md": "Local override: skip the slow tests.\n",
            "CLAUDE.md": "# Claude\n\n@AGENTS.md\n",
        },
    )
    memory = json.loads(cli("memory", "--workspace", str(root), "--json", "-q", cwd=root).stdout)
    agents = next(f for f in memory["files"] if f["path"] == "AGENTS.md")
    assert agents["reason"] == "imported by CLAUDE.md (AGENTS.override.md takes its place as a file of its own)"
    ours = explain("context-companion", root)
    assert any(f["path"] == "AGENTS.md" and f["trigger"] == "import" for f in ours["files"])
    assert ours["tokens"] == sum(f["tokens"] for f in ours["files"] if f.get("inTotal", True))


def test_two_claude_md_importing_their_own_agents_md_compare_after_imports(tmp_path: Path, runtime: Path) -> None:
    root = write(
        tmp_path / "two",
        {
            "web/AGENTS.md": "WEB-RULES: no inline styles.\n",
            "web/CLAUDE.md": "# Claude\n@AGENTS.md\n",
            "api/AGENTS.md": "API-RULES: handlers stay thin.\n",
            "api/CLAUDE.md": "# Claude\n@AGENTS.md\n",
            "web/docs/CLAUDE.md": "# Claude\nAsk before adding a dependency.\n@AGENTS.md\n",
            "web/docs/AGENTS.md": "DOCS-WEB: one page per topic.\n",
            "api/docs/CLAUDE.md": "# Claude\nAsk before adding a dependency.\n@AGENTS.md\n",
            "api/docs/AGENTS.md": "DOCS-API: one page per endpoint.\n",
            "web/docs/a.md": "x\n",
            "api/docs/b.md": "y\n",
            "web/page.ts": "x\n",
            "api/app.ts": "y\n",
        },
    )
    opened = ("web/page.ts", "api/app.ts", "web/docs/a.md", "api/docs/b.md")
    out = cli("memory", "--workspace", str(root), "--json", "-q", "--open", *opened, cwd=root)
    reasons = {f["path"]: f["reason"] for f in json.loads(out.stdout)["files"]}
    assert reasons["web/CLAUDE.md"] == "not included: only repeats web/AGENTS.md"
    assert reasons["api/CLAUDE.md"] == "not included: only repeats api/AGENTS.md"
    # The same own line, importing different files: two different texts, neither a copy of the other.
    assert reasons["web/docs/CLAUDE.md"] == "open file web/docs/a.md is under web/docs/"
    assert reasons["api/docs/CLAUDE.md"] == "active file api/docs/b.md is under api/docs/"
    claude = explain("claude-code", root, "web/page.ts", "api/app.ts")
    assert {f["path"] for f in claude["files"]} >= {"web/CLAUDE.md", "api/CLAUDE.md", "web/AGENTS.md", "api/AGENTS.md"}
