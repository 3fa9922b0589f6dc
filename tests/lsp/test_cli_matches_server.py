"""The command line prints what the language server gives an agent: the same instruction, the same
first turn, the same memory, byte for byte, for the same workspace and files (real server, real CLI),
also in a folder whose path has a space, non-ASCII letters and '#' (percent-encoded by the editor)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from context_companion.workspace.updates import MEMORY_PREFACE

pytestmark = pytest.mark.parametrize("workspace", ["ws", "my proj ünï #1"], indirect=True)

SEPARATOR = (
    "======== Memory that comes with the first turn (delivered with the user's first message, "
    "not part of the system instruction above) ========"
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def settle(h) -> None:
    """Let the notifications sent before reach the server."""
    await asyncio.sleep(0.3)


def monorepo(ws: Path) -> Path:
    """Root memory, a sub-folder with AGENTS.md and Codex's override, a glob rule, prose with '@'."""
    (ws / ".git").mkdir(parents=True, exist_ok=True)
    write(ws / "AGENTS.md", "# Monorepo\nUse pnpm. Packages such as @cline/llms live in packages/.\n")
    write(ws / "api" / "AGENTS.md", "API: plain rules (Codex's override replaces them).\n")
    write(ws / "api" / "AGENTS.override.md", "API override: handlers return JSON errors.\n")
    write(ws / "web" / "AGENTS.md", "Web: use @pytest.fixture style helpers; ask @octocat.\n")
    write(ws / ".cursor" / "rules" / "python.mdc", '---\nglobs: "**/*.py"\n---\nPython: type every function.\n')
    write(ws / "api" / "x.py", "import json\n\ndef handler(request):\n    return json.dumps({})\n")
    write(ws / "web" / "y.py", "print('web')\n")
    return ws


def cli(tmp_path: Path, config_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI with the environment the ``start`` fixture gives the server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "CONTEXT_COMPANION_CONFIG_DIR": str(config_dir),
            "CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": env.get("CC_TEST_DEBOUNCE", "50"),
        }
    )
    out = subprocess.run(
        [sys.executable, "-m", "context_companion", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out


async def first_session(h) -> tuple[dict, dict]:
    """The instruction and the first turn context of a new session, as an agent bridge asks for them."""
    await h.command("contextCompanion.startSession", {"sessionId": "agent-1"})
    instruction = await h.command("contextCompanion.getSystemInstruction", {"sessionId": "agent-1"})
    turn = await h.command("contextCompanion.getTurnContext", {"sessionId": "agent-1"})
    return instruction, turn


async def test_instruction_text_is_the_servers_instruction_then_its_first_turn_memory(
    start, workspace, tmp_path, config_dir
):
    ws = monorepo(workspace)
    h = await start(ws)
    h.open("web/y.py")
    x = h.open("api/x.py")
    h.cursor(x, 2, 4, [(2, 0, 2, 3)])
    await settle(h)
    instruction, turn = await first_session(h)
    memory = turn["text"][turn["text"].index(MEMORY_PREFACE) :]
    # What comes with the turn: the sub-folder memory (Codex's override in its folder) and the glob rule.
    paths = [u["path"] for u in turn["memoryUpdates"]]
    assert paths == ["api/AGENTS.override.md", "web/AGENTS.md", ".cursor/rules/python.mdc"]
    assert "handlers return JSON errors" not in instruction["text"]

    out = cli(tmp_path, config_dir, "instruction", "--workspace", str(ws), "--open", "web/y.py", "api/x.py")
    assert out.stdout == f"{instruction['text']}\n\n{SEPARATOR}\n\n{memory}\n"
    only = cli(
        tmp_path,
        config_dir,
        "instruction",
        "--workspace",
        str(ws),
        "--open",
        "web/y.py",
        "api/x.py",
        "--instruction-only",
    )
    assert only.stdout == instruction["text"]  # the bytes: no newline added
    # --json keeps its fields: text is the instruction alone, the memory is in memoryUpdates.
    data = json.loads(
        cli(
            tmp_path,
            config_dir,
            "instruction",
            "--workspace",
            str(ws),
            "--active",
            "api/x.py",
            "--open",
            "web/y.py",
            "--json",
        ).stdout
    )
    assert data["text"] == instruction["text"] and data["etag"] == instruction["etag"]
    assert data["memoryUpdates"] == turn["memoryUpdates"]


async def test_turn_json_is_the_servers_first_turn_context(start, workspace, tmp_path, config_dir):
    ws = monorepo(workspace)
    h = await start(ws)
    h.open("web/y.py")
    x = h.open("api/x.py")
    h.cursor(x, 2, 4, [(2, 0, 2, 3)])  # 0-based: line 3, "def" selected, the cursor after "def "
    await settle(h)
    _instruction, turn = await first_session(h)
    assert turn["kind"] == "full" and turn["context"]["activeFile"]["selectedText"] == "def"

    args = ("turn", "--workspace", str(ws), "--open", "web/y.py", "api/x.py", "--cursor", "3:5")
    as_json = cli(tmp_path, config_dir, *args, "--selection", "3:1:3:4", "--json")
    assert json.loads(as_json.stdout) == turn
    as_text = cli(tmp_path, config_dir, *args, "--selection", "3:1-3:4")
    assert as_text.stdout == turn["text"] + "\n"


async def test_memory_marks_what_comes_with_the_turn_like_the_editors_memory_view(
    start, workspace, tmp_path, config_dir
):
    ws = monorepo(workspace)
    h = await start(ws)
    h.open("api/x.py")
    await settle(h)
    shown = await h.command("contextCompanion.showMemory", {})
    data = json.loads(
        cli(tmp_path, config_dir, "memory", "--workspace", str(ws), "--open", "api/x.py", "--json").stdout
    )
    assert data["files"] == shown["files"]
    assert data["warnings"] == shown["warnings"] == []  # '@cline/llms', '@pytest.fixture', '@octocat' are prose
    with_turn = {f["path"]: f["comesWithTurn"] for f in data["files"]}
    assert with_turn == {
        "AGENTS.md": False,
        "api/AGENTS.override.md": True,
        "api/AGENTS.md": False,  # shadowed by the override: not delivered at all
        "web/AGENTS.md": False,
        ".cursor/rules/python.mdc": True,
    }
    rows = cli(tmp_path, config_dir, "memory", "--workspace", str(ws), "--open", "api/x.py").stdout.splitlines()
    marked = [r.split()[1] for r in rows if r.endswith("(comes with the turn)")]
    assert marked == ["api/AGENTS.override.md", ".cursor/rules/python.mdc"]
    shadowed = next(r for r in rows if r.startswith("- api/AGENTS.md "))
    assert shadowed.endswith("not included: AGENTS.override.md in the same folder takes its place")
