"""`context-companion setup --agent ...`, run as a user runs it: which file, what it holds after,
and what it never does (lose a key or a hook, write a file it cannot parse, write outside)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXE = str(Path(sys.executable).parent / "context-companion")


def run(*args: str, env: dict[str, str], executable: str = sys.executable) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "CLAUDE_", "CODEX_"))}
    full.update(env)
    return subprocess.run(
        [executable, "-m", "context_companion", *args], capture_output=True, text=True, env=full, timeout=60
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg")}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "my project"
    folder.mkdir()
    return folder


def ours(agent: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": f"{EXE} hook --agent {agent}"}]}


def test_claude_code_project_setup_merges_idempotently_and_keeps_the_mode(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    user_hook = {"matcher": "", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings.write_text(
        json.dumps({"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"UserPromptSubmit": [user_hook]}})
    )
    settings.chmod(0o640)

    out = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        f"Claude Code: added the hooks SessionStart, UserPromptSubmit to {settings} "
        f"(command: {EXE} hook --agent claude-code)\n"
    )
    data = json.loads(settings.read_text())
    assert data == {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"UserPromptSubmit": [user_hook, ours("claude-code")], "SessionStart": [ours("claude-code")]},
    }
    assert stat.S_IMODE(settings.stat().st_mode) == 0o640
    before = settings.read_bytes()

    again = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    assert settings.read_bytes() == before

    removed = run("setup", "--agent", "claude-code", "--workspace", str(ws), "--remove", env=env)
    assert removed.returncode == 0 and removed.stdout.startswith("Claude Code: removed the hooks")
    assert json.loads(settings.read_text()) == {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"UserPromptSubmit": [user_hook]},
    }
    nothing = run("setup", "--agent", "claude-code", "--workspace", str(ws), "--remove", env=env)
    assert "no Context Companion hooks in" in nothing.stdout


def test_dry_run_prints_the_change_and_writes_nothing(ws: Path, env: dict[str, str]) -> None:
    out = run("setup", "--agent", "gemini-cli", "--workspace", str(ws), "--dry-run", env=env)
    assert out.returncode == 0, out.stderr
    assert f"+++ {ws}/.gemini/settings.json (after setup)" in out.stdout
    assert '+    "BeforeAgent": [' in out.stdout and '+    "SessionStart": [' in out.stdout
    assert out.stdout.splitlines()[-1].startswith("Gemini CLI: would add the hooks SessionStart, BeforeAgent to")
    assert not (ws / ".gemini").exists()


def test_codex_says_the_user_will_review_the_hooks_and_honours_codex_home(tmp_path: Path, env: dict[str, str]) -> None:
    codex_home = tmp_path / "codex home"
    dry = run("setup", "--agent", "codex", "--user", "--dry-run", env={**env, "CODEX_HOME": str(codex_home)})
    assert 'Codex will ask "Hooks need review"' in dry.stdout and not codex_home.exists()
    out = run("setup", "--agent", "codex", "--user", env={**env, "CODEX_HOME": str(codex_home)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1].startswith('Codex will ask "Hooks need review"')
    data = json.loads((codex_home / "hooks.json").read_text())
    assert data == {"hooks": {"SessionStart": [ours("codex")], "UserPromptSubmit": [ours("codex")]}}
    assert "trusted_hash" not in out.stdout and not (codex_home / "config.toml").exists()


def test_user_settings_follow_claude_config_dir_and_home(tmp_path: Path, env: dict[str, str]) -> None:
    moved = tmp_path / "claude-config"
    assert (
        run("setup", "--agent", "claude-code", "--user", env={**env, "CLAUDE_CONFIG_DIR": str(moved)}).returncode == 0
    )
    assert "UserPromptSubmit" in json.loads((moved / "settings.json").read_text())["hooks"]
    assert run("setup", "--agent", "gemini-cli", "--user", env=env).returncode == 0
    gemini = json.loads((Path(env["HOME"]) / ".gemini" / "settings.json").read_text())
    assert gemini == {"hooks": {"SessionStart": [ours("gemini-cli")], "BeforeAgent": [ours("gemini-cli")]}}


@pytest.mark.parametrize(
    "content",
    [
        '{\n  // Gemini CLI allows comments\n  "ui": {"theme": "Dracula"}\n}\n',
        '{"hooks": []}',
        "[1, 2]",
        '{"hooks": {"BeforeAgent": {"not": "a list"}}}',
    ],
)
def test_a_file_it_cannot_merge_is_refused_and_left_untouched(ws: Path, env: dict[str, str], content: str) -> None:
    settings = ws / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(content)
    out = run("setup", "--agent", "gemini-cli", "--workspace", str(ws), env=env)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.splitlines()) == 1 and out.stderr.startswith(f"context-companion: {settings}: ")
    assert out.stderr.rstrip().endswith("left untouched")
    assert settings.read_text() == content


def test_dry_run_on_a_file_with_comments_shows_what_to_add_by_hand(ws: Path, env: dict[str, str]) -> None:
    settings = ws / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{ /* mine */ "ui": {} }\n')
    out = run("setup", "--agent", "gemini-cli", "--workspace", str(ws), "--dry-run", env=env)
    assert out.returncode == 2 and "comments" in out.stderr
    assert out.stdout.startswith(f"# {settings} cannot be merged automatically; add by hand:\n")
    assert json.loads(out.stdout.split("\n", 1)[1]) == {
        "hooks": {"SessionStart": [ours("gemini-cli")], "BeforeAgent": [ours("gemini-cli")]}
    }


def test_never_writes_through_a_symlink_out_of_the_project(ws: Path, tmp_path: Path, env: dict[str, str]) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (ws / ".claude").symlink_to(outside, target_is_directory=True)
    out = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env)
    assert out.returncode == 2 and "refused to write" in out.stderr and len(out.stderr.splitlines()) == 1
    assert list(outside.iterdir()) == []


def test_the_command_written_runs_from_a_folder_with_spaces(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    """An install in a path with spaces: the command is quoted so the agent's shell runs it."""
    venv = tmp_path / "my tools"
    venv.symlink_to(Path(sys.prefix), target_is_directory=True)  # the same virtualenv, seen through a path with a space
    tools = venv / "bin"
    out = run("setup", "--agent", "claude-code", "--workspace", str(ws), env=env, executable=str(tools / "python"))
    assert out.returncode == 0, out.stderr
    command = json.loads((ws / ".claude" / "settings.local.json").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][
        0
    ]["command"]
    assert command == f"'{tools}/context-companion' hook --agent claude-code"
    (ws / ".cursorrules").write_text("Spaces are fine.\n")  # a file Claude Code does not read itself
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    hook_input = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(ws)})
    ran = subprocess.run(
        ["sh", "-c", command],
        input=hook_input,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env, "XDG_RUNTIME_DIR": str(runtime)},
    )
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert "Spaces are fine." in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
