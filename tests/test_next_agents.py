"""Issue 35, the next agents users run: GitHub Copilot CLI, OpenCode and Qwen Code, through the commands a
user runs (`setup`, `hook`, `explain`) and OpenCode's plugin run by Node as OpenCode runs it. The real agents
against a recording model stub are in tests/agents/test_copilot_opencode_qwen.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import setup_cli
from hook_runner import run_hook
from setup_cli import EXE


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return setup_cli.cli(*args, env=env, drop=("COPILOT_", "QWEN_"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**setup_cli.user_env(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config")}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return setup_cli.project(tmp_path)


def setup(ws: Path, env: dict[str, str], agent: str, *more: str) -> subprocess.CompletedProcess[str]:
    return cli("setup", "--agent", agent, "--workspace", str(ws), *more, env=env)


# ------------------------------------------------------------------------------------------------ setup


def test_copilot_cli_setup_writes_its_own_hook_file_and_remove_takes_it_away(ws: Path, env: dict[str, str]) -> None:
    out = setup(ws, env, "copilot")  # the short name is copilot-cli
    assert out.returncode == 0, out.stderr
    path = ws / ".github" / "hooks" / "context-companion.json"
    command = f"{EXE} hook --agent copilot-cli"
    assert json.loads(path.read_text()) == {
        "version": 1,
        "hooks": {"userPromptSubmitted": [{"type": "command", "bash": command, "timeoutSec": 10}]},
    }
    # Copilot CLI's own event name, never VS Code's (VS Code's agent reads .github/hooks and runs UserPromptSubmit).
    assert "UserPromptSubmit" not in path.read_text()
    assert out.stdout.startswith(f"GitHub Copilot CLI: added the hooks userPromptSubmitted to {path}")
    assert "teammates may not have" in out.stdout  # .github is committed: a machine's path is said in one line
    before = path.read_bytes()
    again = setup(ws, env, "copilot-cli")
    assert "nothing changed" in again.stdout and path.read_bytes() == before

    gone = setup(ws, env, "copilot-cli", "--remove")
    assert gone.returncode == 0 and not path.exists() and not (ws / ".github").exists(), gone.stdout


def test_copilot_cli_setup_keeps_the_users_hooks_and_refuses_a_comment(ws: Path, env: dict[str, str]) -> None:
    path = ws / ".github" / "hooks" / "context-companion.json"
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "bash": "./notify.sh"}
    text = json.dumps({"version": 1, "hooks": {"userPromptSubmitted": [mine], "sessionEnd": [mine]}}, indent=2) + "\n"
    path.write_text(text)
    assert setup(ws, env, "copilot-cli").returncode == 0
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["userPromptSubmitted"][0] == mine and hooks["sessionEnd"] == [mine]
    assert setup(ws, env, "copilot-cli", "--remove").returncode == 0
    assert path.read_text() == text

    path.write_text('{\n  // mine\n  "version": 1\n}\n')
    refused = setup(ws, env, "copilot-cli")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "plain JSON" in refused.stderr and str(path) in refused.stderr
    assert path.read_text() == '{\n  // mine\n  "version": 1\n}\n'


def test_copilot_cli_user_hooks_go_to_copilot_home(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env, "copilot-cli", "--user").returncode == 0
    assert (Path(env["HOME"]) / ".copilot" / "hooks" / "context-companion.json").is_file()
    moved = tmp_path / "copilot-home"
    assert setup(ws, {**env, "COPILOT_HOME": str(moved)}, "copilot-cli", "--user").returncode == 0
    assert "userPromptSubmitted" in (moved / "hooks" / "context-companion.json").read_text()


def test_qwen_code_setup_keeps_comments_and_refuses_a_trailing_comma(ws: Path, env: dict[str, str]) -> None:
    path = ws / ".qwen" / "settings.json"
    path.parent.mkdir()
    original = '{\n  // my model\n  "model": {"name": "qwen3-coder"}\n}\n'
    path.write_text(original)
    out = setup(ws, env, "qwen")
    assert out.returncode == 0, out.stderr
    text = path.read_text()
    assert text.startswith('{\n  // my model\n  "model": {"name": "qwen3-coder"},')
    hooks = json.loads("\n".join(line for line in text.splitlines() if "//" not in line))["hooks"]
    entry = [{"hooks": [{"type": "command", "command": f"{EXE} hook --agent qwen-code"}]}]
    assert hooks == {"SessionStart": entry, "UserPromptSubmit": entry}
    assert setup(ws, env, "qwen-code", "--remove").returncode == 0 and path.read_text() == original

    path.write_text('{"model": {"name": "x"},}\n')
    refused = setup(ws, env, "qwen-code")
    assert refused.returncode == 2 and "trailing comma" in refused.stderr and "Qwen Code" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_qwen_code_user_settings_follow_qwen_home(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env, "qwen-code", "--user").returncode == 0
    assert "qwen-code" in (Path(env["HOME"]) / ".qwen" / "settings.json").read_text()
    moved = tmp_path / "qwen-home"
    assert setup(ws, {**env, "QWEN_HOME": str(moved)}, "qwen-code", "--user").returncode == 0
    assert "qwen-code" in (moved / "settings.json").read_text()


def test_opencode_setup_writes_its_plugin_once_and_removes_only_its_own(ws: Path, env: dict[str, str]) -> None:
    from context_companion.agents.opencode import MARKER

    plugin = ws / ".opencode" / "plugins" / "context-companion.js"
    dry = setup(ws, env, "opencode", "--dry-run")
    assert dry.returncode == 0 and not plugin.exists() and f"+{MARKER}" in dry.stdout
    out = setup(ws, env, "opencode")
    assert out.returncode == 0, out.stderr
    text = plugin.read_text()
    assert text.splitlines()[0] == MARKER
    assert f"const COMMAND = {json.dumps([EXE, 'hook', '--agent', 'opencode'])};" in text
    assert "system" not in text.replace("system prompt", "")  # it never touches the system part
    before = plugin.stat().st_mtime_ns
    assert "nothing changed" in setup(ws, env, "opencode").stdout and plugin.stat().st_mtime_ns == before

    # Ours with another command (an older setup, another installation): brought to today's.
    plugin.write_text(text.replace(EXE, "/old/bin/context-companion"))
    assert "updated the plugin" in setup(ws, env, "opencode").stdout and plugin.read_text() == text

    gone = setup(ws, env, "opencode", "--remove")
    assert gone.returncode == 0 and not plugin.exists() and not (ws / ".opencode").exists(), gone.stdout
    assert "nothing changed" in setup(ws, env, "opencode", "--remove").stdout

    # A plugin of the user's under that name is never written over nor deleted.
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = async () => ({});\n")
    for more in ((), ("--remove",)):
        refused = setup(ws, env, "opencode", *more)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
        assert "did not write" in refused.stderr and str(plugin) in refused.stderr
    assert plugin.read_text() == "export const Mine = async () => ({});\n"


def test_opencode_user_plugin_goes_to_its_config_folder(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env, "opencode", "--user").returncode == 0
    assert (Path(env["XDG_CONFIG_HOME"]) / "opencode" / "plugins" / "context-companion.js").is_file()
    assert not (ws / ".opencode").exists()


# ------------------------------------------------------------------------------------------------- hook


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / "AGENTS.md").write_text("Run make check.\n")
    (ws / "CLAUDE.md").write_text("Claude: small diffs.\n")
    (ws / "QWEN.md").write_text("Qwen: answer briefly.\n")  # read by Qwen Code itself (and not our memory file)
    (ws / "CLAUDE.local.md").write_text("Local: my own notes.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    (ws / ".claude" / "rules").mkdir(parents=True)
    (ws / ".claude" / "rules" / "house.md").write_text("House: plain words.\n")
    return ws


def hook(agent: str, payload: Any, runtime: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    return run_hook(agent, json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime), **env})


def copilot_input(session: str, cwd: Path) -> dict[str, Any]:
    """What Copilot CLI 1.0.102 sends its own userPromptSubmitted hooks."""
    return {"sessionId": session, "timestamp": 1795754051450, "cwd": str(cwd), "prompt": "hello"}


def claude_format_from_copilot(session: str, cwd: Path) -> dict[str, Any]:
    """What Copilot CLI 1.0.102 sends the hooks of .claude/settings(.local).json (no transcript_path)."""
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "timestamp": "2026-11-27T04:34:11.450Z",
        "cwd": str(cwd),
        "prompt": "hello",
    }


def test_copilot_cli_hook_answers_its_input_with_a_top_level_additional_context(project: Path, runtime: Path) -> None:
    out = hook("copilot-cli", copilot_input("c1", project), runtime)
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["additionalContext"]  # Copilot CLI ignores hookSpecificOutput
    text = data["additionalContext"]
    # It reads AGENTS.md, CLAUDE.md and .claude/rules itself; not CLAUDE.local.md nor .cursor/rules.
    assert "Always: be kind." in text and "Local: my own notes." in text
    assert "Run make check." not in text and "Claude: small diffs." not in text and "House: plain words." not in text
    assert hook("copilot", copilot_input("c1", project), runtime).stdout == b""  # nothing new: nothing

    bad = hook("copilot-cli", {"sessionId": "c1", "timestamp": 1, "cwd": str(project)}, runtime)
    assert (bad.returncode, bad.stdout) == (0, b"")
    assert bad.stderr.decode().startswith("context-companion hook: prompt: missing in the hook input")
    bad = hook("copilot-cli", {"sessionId": 7, "cwd": str(project), "prompt": "x"}, runtime)
    assert bad.stderr.decode() == "context-companion hook: sessionId: expected a string in the hook input\n"


def test_a_project_set_up_for_claude_code_and_copilot_cli_gives_copilot_each_text_once(
    project: Path, runtime: Path
) -> None:
    """Copilot CLI runs its own hook, then the Claude Code hooks of .claude/settings*.json, one after the other,
    and keeps the last non-empty additionalContext: the Claude Code hook answers as the same session's
    copilot-cli hook, so the second has nothing new; alone, it delivers in Copilot's shape."""
    first = json.loads(hook("copilot-cli", copilot_input("both", project), runtime).stdout)["additionalContext"]
    assert "Always: be kind." in first
    second = hook("claude-code", claude_format_from_copilot("both", project), runtime, COPILOT_CLI="1")
    assert (second.returncode, second.stdout, second.stderr) == (0, b"", b"")

    alone = hook("claude-code", claude_format_from_copilot("claude-only", project), runtime, COPILOT_CLI="1")
    data = json.loads(alone.stdout)
    assert list(data) == ["additionalContext"] and data["additionalContext"] == first

    # Claude Code itself (it always sends transcript_path), even started from a shell inside Copilot CLI,
    # gets its own nested shape and its own session: what Claude Code reads itself stays out.
    claude = {**claude_format_from_copilot("real-claude", project), "transcript_path": "/tmp/t.jsonl"}
    own = json.loads(hook("claude-code", claude, runtime, COPILOT_CLI="1").stdout)
    assert list(own) == ["hookSpecificOutput"] and "Always: be kind." in own["hookSpecificOutput"]["additionalContext"]
    assert "Claude: small diffs." not in own["hookSpecificOutput"]["additionalContext"]


def test_codex_never_gets_a_top_level_key_even_under_copilot(project: Path, runtime: Path) -> None:
    payload = {**claude_format_from_copilot("cx", project), "transcript_path": None}
    del payload["transcript_path"]
    out = json.loads(hook("codex", payload, runtime, COPILOT_CLI="1").stdout)
    assert list(out) == ["hookSpecificOutput"]


def test_qwen_code_and_opencode_hooks_leave_out_what_each_reads_itself(project: Path, runtime: Path) -> None:
    def text(agent: str, session: str) -> str:
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(project), "prompt": "x"}
        out = hook(agent, payload, runtime)
        assert out.returncode == 0 and out.stderr == b"", out.stderr
        data = json.loads(out.stdout)
        assert list(data) == ["hookSpecificOutput"]
        context: str = data["hookSpecificOutput"]["additionalContext"]
        return context

    qwen = text("qwen", "q1")
    assert "Run make check." not in qwen and "Claude: small diffs." in qwen and "Always: be kind." in qwen
    opencode = text("opencode", "o1")  # AGENTS.md is the first of its names: CLAUDE.md beside it is not read
    assert "Run make check." not in opencode and "Claude: small diffs." in opencode

    # Qwen Code's context.fileName (its settings take comments, as it reads them) names what it reads.
    (project / ".qwen").mkdir()
    (project / ".qwen" / "settings.json").write_text('{\n  // only ours\n  "context": {"fileName": "QWEN.md"}\n}\n')
    assert "Run make check." in text("qwen-code", "q2")


# ------------------------------------------------------------------------------------- OpenCode's plugin

DRIVER = """
import { pathToFileURL } from "node:url";
const [plugin, directory, session] = process.argv.slice(2);
const mod = await import(pathToFileURL(plugin).href);
const hooks = await mod.ContextCompanion({ directory });
const output = { message: { id: "msg_1" }, parts: [{ id: "prt_0", type: "text", text: "the user's words" }] };
const started = Date.now();
await hooks["chat.message"]({ sessionID: session }, output);
console.log(JSON.stringify({ parts: output.parts, ms: Date.now() - started }));
"""


def run_plugin(tmp_path: Path, command: list[str], timeout_ms: int | None = None) -> dict[str, Any]:
    """OpenCode's chat.message, as OpenCode calls it, on the plugin setup writes for ``command``."""
    from context_companion.agents.opencode import plugin_text

    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run OpenCode's plugin", pytrace=False)
    text = plugin_text(" ".join(command))
    if timeout_ms is not None:
        text = text.replace("const TIMEOUT_MS = 10000;", f"const TIMEOUT_MS = {timeout_ms};")
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(text)
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    out = subprocess.run(
        [node, str(driver), str(plugin), str(tmp_path), "ses_1"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def fake_hook(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake_hook.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


def test_opencode_plugin_adds_the_hook_text_as_a_part_of_the_users_message(tmp_path: Path) -> None:
    command = fake_hook(
        tmp_path,
        """
        import json, sys
        seen = json.load(sys.stdin)
        text = "MEMORY for " + seen["session_id"] + " in " + seen["cwd"] + " at " + seen["hook_event_name"]
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}))
        """,
    )
    parts = run_plugin(tmp_path, command)["parts"]
    assert parts[0] == {"id": "prt_0", "type": "text", "text": "the user's words"}  # the user's part untouched
    added = parts[1]
    assert added["text"] == f"MEMORY for ses_1 in {tmp_path} at UserPromptSubmit"
    assert added["type"] == "text" and added["synthetic"] is True
    assert added["sessionID"] == "ses_1" and added["messageID"] == "msg_1"
    assert added["id"].startswith("prt_") and len(added["id"]) == 30 and added["id"] > parts[0]["id"]


@pytest.mark.parametrize(
    "body",
    [
        "import sys; sys.exit(1)",  # fails
        "print('not json')",  # prints something else
        "pass",  # nothing new
        "import time; time.sleep(30)",  # hangs: the plugin's time bound
    ],
)
def test_opencode_plugin_adds_nothing_when_the_hook_fails_or_hangs(tmp_path: Path, body: str) -> None:
    result = run_plugin(tmp_path, fake_hook(tmp_path, body), timeout_ms=1500)
    assert result["parts"] == [{"id": "prt_0", "type": "text", "text": "the user's words"}]
    assert result["ms"] < 10_000


def test_opencode_plugin_adds_nothing_when_the_command_is_missing(tmp_path: Path) -> None:
    result = run_plugin(tmp_path, [str(tmp_path / "no-such-program")])
    assert len(result["parts"]) == 1


# ---------------------------------------------------------------------------------------------- explain


def explain(agent: str, ws: Path, env: dict[str, str]) -> dict[str, Any]:
    out = cli("explain", "--agent", agent, "--workspace", str(ws), "--json", env=env)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def test_explain_says_what_each_next_agent_loads_as_measured(project: Path, env: dict[str, str]) -> None:
    loaded = {a: {f["path"] for f in explain(a, project, env)["files"]} for a in ("copilot-cli", "opencode", "qwen")}
    assert loaded["copilot-cli"] == {"AGENTS.md", "CLAUDE.md", ".claude/rules/house.md"}
    assert loaded["opencode"] == {"AGENTS.md"}
    assert loaded["qwen"] >= {"AGENTS.md"} and "CLAUDE.md" not in loaded["qwen"]
    data = explain("qwen-code", project, env)
    assert data["checked"] == "0.24.4" and any("QWEN.md" in note for note in data["assumed"])
    assert {explain(a, project, env)["checked"] for a in ("copilot-cli", "opencode")} == {"1.0.102", "1.18.33"}
