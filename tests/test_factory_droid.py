"""Factory Droid through the commands a user runs (`setup --agent droid`, `hook --agent factory-droid`): its
settings file in the project and in ~/.factory, the user's own entries kept, the answer it reads, what it reads
itself left out, and a resumed session given everything again. The real agent against a recording model stub is
in tests/agents/test_factory_droid_agent.py."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import setup_cli
from hook_runner import run_hook
from setup_cli import BIN, EXE, PLAIN_PATH

# A settings file as a Droid user has it: comments (Droid reads them), a custom model and a hook of their own.
USERS = """{
  // my local model
  "customModels": [{"model": "qwen3", "baseUrl": "http://127.0.0.1:8080/v1", "provider": "generic-chat-completion-api"}],
  "hooks": {
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./scripts/log-prompt.sh"}]}]
  }
}
"""


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return setup_cli.cli(*args, env=env, drop=("FACTORY_", "DROID_"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return setup_cli.user_env(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return setup_cli.project(tmp_path)


def setup(ws: Path, env: dict[str, str], agent: str, *more: str) -> subprocess.CompletedProcess[str]:
    return cli("setup", "--agent", agent, "--workspace", str(ws), *more, env=env)


def without_comments(text: str) -> Any:
    return json.loads("\n".join(line for line in text.splitlines() if not line.strip().startswith("//")))


OURS = [{"hooks": [{"type": "command", "command": f"{EXE} hook --agent factory-droid"}]}]


def test_setup_adds_both_events_to_the_projects_settings_keeping_the_users_and_remove_gives_them_back(
    ws: Path, env: dict[str, str]
) -> None:
    path = ws / ".factory" / "settings.json"
    path.parent.mkdir()
    path.write_text(USERS)
    path.chmod(0o640)

    out = setup(ws, env, "droid")  # the short name is factory-droid
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(
        f"Factory Droid: added the hooks SessionStart, UserPromptSubmit to {path} "
        f"(command: {EXE} hook --agent factory-droid)\n"
    )
    assert "Note: " in out.stdout  # a file teams commit names this machine's program: said in one line
    text = path.read_text()
    assert text.startswith('{\n  // my local model\n  "customModels": [')
    hooks = without_comments(text)["hooks"]
    assert hooks["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": "./scripts/log-prompt.sh"}]},
        *OURS,
    ]  # the user's hook first, as it was
    assert hooks["SessionStart"] == OURS
    assert without_comments(text)["customModels"][0]["model"] == "qwen3"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns

    again = setup(ws, env, "factory-droid")
    assert again.returncode == 0 and "already set up (SessionStart, UserPromptSubmit)" in again.stdout
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # not even rewritten

    removed = setup(ws, env, "droid", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("Factory Droid: removed the hooks SessionStart, UserPromptSubmit from")
    assert path.read_text() == USERS
    assert "no Context Companion hooks in" in setup(ws, env, "droid", "--remove").stdout


def test_a_file_setup_created_goes_with_remove_and_so_does_its_folder(ws: Path, env: dict[str, str]) -> None:
    on_path = {**env, "PATH": f"{BIN}:{PLAIN_PATH}"}
    out = setup(ws, on_path, "droid")
    assert out.returncode == 0 and "Note: " not in out.stdout, out.stdout
    path = ws / ".factory" / "settings.json"
    entry = [{"hooks": [{"type": "command", "command": "context-companion hook --agent factory-droid"}]}]
    assert json.loads(path.read_text()) == {"hooks": {"SessionStart": entry, "UserPromptSubmit": entry}}
    gone = setup(ws, on_path, "droid", "--remove")
    assert gone.returncode == 0 and "the file is deleted (setup had created it)" in gone.stdout
    assert not (ws / ".factory").exists()


def test_user_setup_writes_the_factory_folder_in_home_and_keeps_its_custom_models(
    ws: Path, env: dict[str, str]
) -> None:
    path = Path(env["HOME"]) / ".factory" / "settings.json"
    path.parent.mkdir()
    path.write_text(USERS)
    out = setup(ws, env, "droid", "--user")
    assert out.returncode == 0, out.stderr
    data = without_comments(path.read_text())
    assert data["customModels"][0]["provider"] == "generic-chat-completion-api"
    assert data["hooks"]["SessionStart"] == OURS and data["hooks"]["UserPromptSubmit"][-1] == OURS[0]
    assert not (ws / ".factory").exists()
    assert setup(ws, env, "droid", "--user", "--remove").returncode == 0 and path.read_text() == USERS


def test_a_trailing_comma_droid_would_ignore_the_file_for_is_refused_untouched(ws: Path, env: dict[str, str]) -> None:
    path = ws / ".factory" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "custom:Stub-0",}\n')
    refused = setup(ws, env, "droid")
    assert refused.returncode == 2 and refused.stdout == ""
    assert "trailing comma" in refused.stderr and "Factory Droid 0.225.2" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert path.read_text() == '{"model": "custom:Stub-0",}\n'


# ------------------------------------------------------------------------------------------------ hook


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / "AGENTS.md").write_text("Run make check.\n")  # read by Droid itself
    (ws / "CLAUDE.md").write_text("Claude: small diffs.\n")  # read by Droid itself
    (ws / "CLAUDE.local.md").write_text("Local: my own notes.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    return ws


def droid_input(event: str, session: str, cwd: Path, **more: str) -> bytes:
    """What Factory Droid 0.225.2 sends its hooks (Claude Code's fields, measured)."""
    payload = {
        "session_id": session,
        "transcript_path": f"/home/u/.factory/sessions/x/{session}.jsonl",
        "cwd": str(cwd),
        "permission_mode": "off",
        "hook_event_name": event,
        **more,
    }
    return json.dumps(payload).encode()


def hook(data: bytes, runtime: Path) -> subprocess.CompletedProcess[bytes]:
    return run_hook("droid", data, {"XDG_RUNTIME_DIR": str(runtime), "CLAUDE_PROJECT_DIR": "/x"})


def added(out: subprocess.CompletedProcess[bytes]) -> str:
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    if not out.stdout:
        return ""
    data = json.loads(out.stdout)
    assert list(data) == ["hookSpecificOutput"] and data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return str(data["hookSpecificOutput"]["additionalContext"])


def test_the_hook_gives_what_droid_does_not_read_itself_once_and_again_after_a_resume(
    project: Path, runtime: Path
) -> None:
    """Droid resumes a session in a new process without the earlier hook messages (0.225.2, measured): its
    SessionStart with source "resume" starts the session's deliveries afresh."""
    start = hook(droid_input("SessionStart", "d1", project, source="startup"), runtime)
    assert (start.returncode, start.stdout, start.stderr) == (0, b"", b"")
    prompt = {"prompt": "hello", "message_id": "m1", "has_images": "false"}
    first = added(hook(droid_input("UserPromptSubmit", "d1", project, **prompt), runtime))
    assert "Local: my own notes." in first and "Always: be kind." in first
    assert "Run make check." not in first and "Claude: small diffs." not in first
    assert added(hook(droid_input("UserPromptSubmit", "d1", project, **prompt), runtime)) == ""  # nothing new

    resumed = hook(droid_input("SessionStart", "d1", project, source="resume"), runtime)
    assert (resumed.returncode, resumed.stdout, resumed.stderr) == (0, b"", b"")
    again = added(hook(droid_input("UserPromptSubmit", "d1", project, **prompt), runtime))
    assert "Local: my own notes." in again and "Always: be kind." in again


def test_a_resume_of_another_agent_keeps_what_its_session_has() -> None:
    from context_companion.hooks.client import _Parsed, read_input

    def source(agent: str) -> str:
        raw = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": "/", "source": "resume"}
        return read_input(_Parsed(raw), agent)["source"]

    assert source("factory-droid") == "startup"
    assert source("claude-code") == "resume"


def test_explain_says_what_droid_reads_itself(project: Path, env: dict[str, str]) -> None:
    out = cli("explain", "--agent", "droid", "--workspace", str(project), "--json", env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["agent"] == "factory-droid"
    assert data["checked"] == "0.225.2"
    assert [(f["path"], f["reading"]) for f in data["files"]] == [("AGENTS.md", "start"), ("CLAUDE.md", "start")]
    assert {f if isinstance(f, str) else f["path"] for f in data["onlyContextCompanion"]} == {
        "CLAUDE.local.md",
        ".cursor/rules/all.mdc",
    }


def test_every_list_of_agents_with_hooks_names_droid_and_reads_its_module() -> None:
    from context_companion.agents import factory_droid, registry
    from context_companion.bridges import hook_channel
    from context_companion.cli import parser
    from context_companion.hooks import client as agent_hook
    from context_companion.memory import agents
    from context_companion.setup import command as agent_setup
    from context_companion.workspace import hooks

    assert registry.load("factory-droid") is factory_droid
    for listed in (registry.HOOK_AGENTS, agent_hook.AGENTS, hook_channel.AGENTS, parser.AGENT_HOOK_IDS):
        assert "factory-droid" in listed
    assert registry.hook_agent("Droid") == agent_hook.hook_agent("Droid") == agents.agent_id("droid") == "factory-droid"
    assert (hooks.HOOK_LIMITS["factory-droid"], hooks.HOOK_UNITS["factory-droid"]) == (30_000, "characters")
    assert agents.AGENTS["factory-droid"] == factory_droid.rules()
    assert agent_setup.AGENT_HOOKS["factory-droid"] == factory_droid.setup_file()
    assert factory_droid.answer("UserPromptSubmit", "x") == agent_hook.output("factory-droid", "UserPromptSubmit", "x")


def test_its_module_is_light_when_the_hook_loads_it() -> None:
    """The hook imports it before every prompt: no dataclass, no row of ours, nothing of the domain."""
    code = (
        "import sys; import context_companion; before = set(sys.modules); "
        "import context_companion.agents.factory_droid; print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.replace("'", '"')) == [
        "__future__",
        "context_companion.agents",
        "context_companion.agents.factory_droid",
        "context_companion.agents.registry",  # the hook has loaded it already: the common answer's shape
    ]
