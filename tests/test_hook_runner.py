"""Who runs ``context-companion hook``: VS Code's own agent runs a Claude Code hook too (VS Code 1.139 with
``chat.useClaudeHooks``, and the ``.github/hooks`` files), and then gets only what VS Code's chat lacks.

The inputs and environments below have the shape the real runners gave a recording hook (VS Code 1.139.1 with
GitHub Copilot Chat 0.67.0 in code-server 4.139.1, 2026-11-27; Claude Code's fields from its 2.1.331 hook
schema; GitHub Copilot CLI 1.0.102 for the Claude-format hooks it runs), with our own paths and values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from context_companion.hooks.client import VSCODE, hook_runner
from hook_runner import run_hook

SESSION = "5f0c2a9e-1b7d-4c1e-9a3f-0d2b6c8e4a71"
STORAGE = "/home/ana/.config/Code/User/workspaceStorage/3fa1c0de/GitHub.copilot-chat"


def vscode_prompt(cwd: str = "/home/ana/shop", session: str = SESSION) -> dict[str, Any]:
    """VS Code's agent before a request: the ISO time, its transcript in Copilot Chat's storage, the workspace."""
    return {
        "timestamp": "2026-11-27T09:15:02.118Z",
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "transcript_path": f"{STORAGE}/transcripts/{session}.jsonl",
        "prompt": "rename the cart total",
        "cwd": cwd,
    }


def vscode_start(cwd: str = "/home/ana/shop") -> dict[str, Any]:
    return {
        "timestamp": "2026-11-27T09:15:01.904Z",
        "hook_event_name": "SessionStart",
        "session_id": SESSION,
        "transcript_path": f"{STORAGE}/transcripts/{SESSION}.jsonl",
        "source": "new",
        "model": "some-model:latest",
        "cwd": cwd,
    }


def claude_prompt(cwd: str = "/home/ana/shop") -> dict[str, Any]:
    """Claude Code: no timestamp, its transcript under ~/.claude/projects."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/ana/.claude/projects/-home-ana-shop/{SESSION}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "rename the cart total",
    }


def copilot_cli_claude_format(cwd: str = "/home/ana/shop") -> dict[str, Any]:
    """GitHub Copilot CLI running a hook of .claude/settings.json: an ISO time too, no transcript."""
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": SESSION,
        "timestamp": "2026-11-27T09:15:02.118Z",
        "cwd": cwd,
        "prompt": "rename the cart total",
    }


# VS Code's extension host (what its hooks inherit) and a VS Code terminal (what Claude Code started there has).
EXTENSION_HOST_ENV = {
    "VSCODE_ESM_ENTRYPOINT": "vs/workbench/api/node/extensionHostProcess",
    "VSCODE_HANDLES_UNCAUGHT_ERRORS": "true",
    "VSCODE_IPC_HOOK_CLI": "/run/user/1000/vscode-ipc-1a2b.sock",
    "VSCODE_NLS_CONFIG": '{"locale": "en"}',
    "ELECTRON_RUN_AS_NODE": "1",
}
TERMINAL_ENV = {
    "TERM_PROGRAM": "vscode",
    "TERM_PROGRAM_VERSION": "1.139.1",
    "VSCODE_IPC_HOOK_CLI": "/run/user/1000/vscode-ipc-3c4d.sock",
    "VSCODE_PROXY_URI": "http://127.0.0.1:8080/proxy/{{port}}/",
    "CLAUDE_CODE_SSE_PORT": "49281",
}


def without(raw: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in keys}


@pytest.mark.parametrize(
    ("raw", "environ", "runner"),
    [
        (vscode_prompt(), EXTENSION_HOST_ENV, VSCODE),
        (vscode_start(), EXTENSION_HOST_ENV, VSCODE),
        (vscode_prompt(), {}, VSCODE),  # the transcript in Copilot Chat's storage says it alone
        (without(vscode_prompt(), "transcript_path"), EXTENSION_HOST_ENV, VSCODE),  # a window with no folder
        (without(vscode_prompt(), "transcript_path"), TERMINAL_ENV, ""),
        (without(vscode_prompt(), "transcript_path"), {}, ""),
        (claude_prompt(), TERMINAL_ENV, ""),  # Claude Code in a VS Code terminal
        (claude_prompt(), EXTENSION_HOST_ENV, ""),  # Claude Code started by its own VS Code extension
        (copilot_cli_claude_format(), TERMINAL_ENV | {"COPILOT_CLI": "1"}, ""),
        (copilot_cli_claude_format(), EXTENSION_HOST_ENV | {"COPILOT_CLI": "1"}, ""),  # Copilot CLI inside VS Code
        ({**vscode_prompt(), "transcript_path": "/tmp/other-tool/transcripts/x.jsonl"}, EXTENSION_HOST_ENV, ""),
        ({**vscode_prompt(), "timestamp": 1795754051450}, EXTENSION_HOST_ENV, ""),  # a number is no ISO time
        ({**vscode_prompt(), "timestamp": "yesterday"}, EXTENSION_HOST_ENV, ""),
        ({**vscode_prompt(), "transcript_path": None}, EXTENSION_HOST_ENV, VSCODE),
    ],
    ids=[
        "vscode-prompt",
        "vscode-session-start",
        "vscode-transcript-alone",
        "vscode-no-folder",
        "no-transcript-in-a-terminal",
        "no-transcript-no-environment",
        "claude-in-vscode-terminal",
        "claude-from-its-extension",
        "copilot-cli",
        "copilot-cli-in-extension-host",
        "transcript-elsewhere",
        "numeric-timestamp",
        "not-a-time",
        "null-transcript",
    ],
)
def test_the_runner_is_told_by_what_it_sends(raw: dict[str, Any], environ: dict[str, str], runner: str) -> None:
    assert hook_runner(raw, environ) == runner


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """What VS Code's chat reads itself (root AGENTS.md, CLAUDE.md, .github/copilot-instructions.md) and what it
    does not (GEMINI.md, an always-on Cursor rule)."""
    ws = tmp_path / "shop"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run make check before a commit.\n")
    (ws / "CLAUDE.md").write_text("Claude: keep diffs small.\n")
    (ws / ".github").mkdir()
    (ws / ".github" / "copilot-instructions.md").write_text("Copilot: prices are integers in cents.\n")
    (ws / "GEMINI.md").write_text("Gemini: the cart lives in shop/cart.py.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "tone.mdc").write_text("---\nalwaysApply: true\n---\nWrite plain English.\n")
    return ws


VSCODE_READS = ("Run make check", "Claude: keep diffs small", "Copilot: prices are integers")
VSCODE_LACKS = ("Gemini: the cart lives", "Write plain English")


def test_vscode_running_the_claude_hook_without_our_extension_gets_only_what_its_chat_lacks_once(
    project: Path, runtime: Path
) -> None:
    """No editor's server: the memory on disk that VS Code's chat does not read itself, in VS Code's shape; the
    same text once although VS Code runs the hook of each settings file that has it (local, project, user),
    and the Claude Code session of the same id is a session of its own."""
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    first = run_hook("claude-code", json.dumps(vscode_prompt(str(project))).encode(), env)
    assert (first.returncode, first.stderr) == (0, b"")
    out = json.loads(first.stdout)
    assert list(out) == ["hookSpecificOutput"] and out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text = out["hookSpecificOutput"]["additionalContext"]
    assert all(t in text for t in VSCODE_LACKS), text
    assert not any(t in text for t in VSCODE_READS), text
    for _other_settings_file in range(2):  # the same prompt, the next hook entry: nothing new
        again = run_hook("claude-code", json.dumps(vscode_prompt(str(project))).encode(), env)
        assert (again.returncode, again.stdout, again.stderr) == (0, b"", b"")
    # A new chat: SessionStart says nothing (and composes nothing), its first prompt gets the memory afresh.
    start = run_hook("claude-code", json.dumps(vscode_start(str(project))).encode(), env)
    assert (start.returncode, start.stdout, start.stderr) == (0, b"", b"")
    other_chat = run_hook("claude-code", json.dumps(vscode_prompt(str(project), session="chat-2")).encode(), env)
    assert "Write plain English" in json.loads(other_chat.stdout)["hookSpecificOutput"]["additionalContext"]

    (project / "GEMINI.md").write_text("Gemini: the cart moved to shop/basket.py.\n")
    changed = json.loads(run_hook("claude-code", json.dumps(vscode_prompt(str(project))).encode(), env).stdout)
    assert "shop/basket.py" in changed["hookSpecificOutput"]["additionalContext"]
    assert "Write plain English" not in changed["hookSpecificOutput"]["additionalContext"]

    claude = json.loads(run_hook("claude-code", json.dumps(claude_prompt(str(project))).encode(), env).stdout)
    claude_text = claude["hookSpecificOutput"]["additionalContext"]
    assert "Run make check" in claude_text and "Claude: keep diffs small" not in claude_text  # Claude's own table


# A desktop whose two children are an editor's language server (another editor's, or one started in a VS Code
# terminal) and a VS Code extension host; the extension host starts our extension's server and, later, runs the
# hook as VS Code runs it (through /bin/sh, with the hook input on stdin). Prints the pids, then the hook's output.
DESKTOP = r"""
import json, os, subprocess, sys
clean = {k: v for k, v in os.environ.items() if not k.startswith("VSCODE_")}
sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
other = subprocess.Popen(sleeper, env=clean)
host_env = dict(clean, VSCODE_ESM_ENTRYPOINT="vs/workbench/api/node/extensionHostProcess")
host = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], env=host_env, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, text=True)
ours = int(host.stdout.readline())
print(json.dumps({"other": other.pid, "ours": ours}), flush=True)
sys.stdin.readline()  # the test has announced a server
host.stdin.write("go\n")
host.stdin.flush()
print(host.stdout.read(), end="", flush=True)
other.kill()
host.wait()
"""
EXTENSION_HOST = r"""
import os, subprocess, sys
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(server.pid, flush=True)
sys.stdin.readline()
hook = f"{sys.executable} -m context_companion hook --agent claude-code"
out = subprocess.run(["/bin/sh", "-c", hook], input=sys.argv[1].encode(), capture_output=True)
sys.stdout.write(out.stdout.decode() + "STDERR:" + out.stderr.decode())
server.kill()
"""


def _announce(runtime: Path, pid: int, folder: Path) -> None:
    from context_companion.procs import process_start_time

    directory = runtime / "context-companion"
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / f"hook-{pid}-1.json"
    raw = {"pid": pid, "startTime": process_start_time(pid), "port": 1, "transport": "agent-hook", "token": "t"}
    path.write_text(json.dumps({**raw, "workspaceFolders": [str(folder)]}))
    path.chmod(0o600)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="process ancestry is read from /proc")
@pytest.mark.parametrize("serving", ["ours", "other"])
def test_vscode_with_our_extension_gets_nothing_another_editors_server_does_not_count(
    project: Path, runtime: Path, serving: str
) -> None:
    """Our extension's server, started by the extension host that runs the hook: its chat instructions give the
    chat what it lacks, the hook adds nothing (the server is not even asked: it answers for Claude Code). A
    server of another editor for the folder: VS Code's chat does not get its memory, the hook gives it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "VSCODE_"))}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    desktop = subprocess.Popen(
        [sys.executable, "-c", DESKTOP, EXTENSION_HOST, json.dumps(vscode_prompt(str(project)))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert desktop.stdout is not None and desktop.stdin is not None
        pids = json.loads(desktop.stdout.readline())
        _announce(runtime, pids[serving], project)
        desktop.stdin.write("go\n")
        desktop.stdin.flush()
        out, _ = desktop.communicate(timeout=60)
    finally:
        desktop.kill()
    stdout, stderr = out.split("STDERR:", 1)
    assert stderr == ""
    if serving == "ours":
        assert stdout == ""
    else:
        text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
        assert all(t in text for t in VSCODE_LACKS) and not any(t in text for t in VSCODE_READS), text


_RUN_AND_LIST_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
from context_companion.cli import main
sys.exit(main())
"""
HEAVY = ("pydantic", "tiktoken", "watchdog", "lsprotocol", "pygls", "yaml", "context_companion.workspace")


def test_vscode_chat_start_and_a_quiet_prompt_compose_nothing(project: Path, runtime: Path) -> None:
    """VS Code runs each hook file's SessionStart at every new chat and each prompt hook before every request:
    neither imports the domain when there is nothing to say (a new chat has nothing to forget)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env["XDG_RUNTIME_DIR"] = str(runtime)

    def hook(payload: dict[str, Any]) -> tuple[str, set[str]]:
        out = subprocess.run(
            [sys.executable, "-c", _RUN_AND_LIST_MODULES, "hook", "--agent", "claude-code"],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
            timeout=60,
        )
        err = out.stderr.decode()
        assert out.returncode == 0 and err.startswith("MODULES "), err
        return out.stdout.decode(), set(json.loads(err.removeprefix("MODULES ")))

    text, modules = hook(vscode_start(str(project)))
    assert text == "" and not any(m.startswith(HEAVY) for m in modules), sorted(modules)
    text, _ = hook(vscode_prompt(str(project)))
    assert "Write plain English" in text
    text, modules = hook(vscode_prompt(str(project)))
    assert text == "" and not any(m.startswith(HEAVY) for m in modules), sorted(modules)
