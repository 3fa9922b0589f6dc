"""`context-companion hook` against the editor's running language server: what each agent's hook
prints, prompt after prompt, while the editor's files and the memory on disk change."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from context_companion.agents import registry
from context_companion.procs import process_start_time
from hook_runner import Channel, ask_channel, connect, run_hook
from lsp_harness import Harness

PROMPT = {
    "claude-code": "UserPromptSubmit",
    "codex": "UserPromptSubmit",
    "gemini-cli": "BeforeAgent",
    "opencode": "UserPromptSubmit",
    "qwen-code": "UserPromptSubmit",
}


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime dir for the server (inherits the environment) and the hooks."""
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    return run


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / ".git").mkdir()
    (workspace / "AGENTS.md").write_text("# Team\nRun make check before committing.\n")
    (workspace / "CLAUDE.md").write_text("Claude: prefer small diffs.\n")
    (workspace / ".cursor" / "rules").mkdir(parents=True)
    (workspace / ".cursor" / "rules" / "api.mdc").write_text('---\nglobs: "api/**"\n---\nAPI handlers return JSON.\n')
    (workspace / ".github" / "instructions").mkdir(parents=True)
    (workspace / ".github" / "instructions" / "py.instructions.md").write_text(
        '---\napplyTo: "**/*.py"\n---\nType every Python function.\n'
    )
    (workspace / "api").mkdir()
    (workspace / "api" / "AGENTS.md").write_text("API folder: keep handlers thin.\n")
    (workspace / "api" / "app.py").write_text("x = 1\n")
    (workspace / "web").mkdir()
    (workspace / "web" / "AGENTS.md").write_text("Web folder: no inline styles.\n")
    (workspace / "web" / "page.py").write_text("y = 2\n")
    (workspace / ".env").write_text("API_TOKEN=hunter2-very-secret\n")
    return workspace


def hook(
    agent: str, event: str, session: str, cwd: Path, source: str = "", raw: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    payload = {"hook_event_name": event, "session_id": session, "cwd": str(cwd), "prompt": "go on", "source": source}
    return run_hook(agent, raw if raw is not None else json.dumps(payload).encode())


def context(out: subprocess.CompletedProcess[bytes], agent: str) -> str:
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["hookSpecificOutput"]
    assert data["hookSpecificOutput"]["hookEventName"] == PROMPT[agent]
    text: str = data["hookSpecificOutput"]["additionalContext"]
    return text


def nothing(out: subprocess.CompletedProcess[bytes]) -> None:
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


async def synced(h: Harness) -> None:
    """Every notification sent before has been handled (a request is answered after them); a
    session is started, so that a memory change on disk shows as a push to wait for."""
    await h.command("contextCompanion.getSystemInstruction", {})


async def seen(h: Harness, path: str, text: str | None) -> None:
    """Until the server's memory has ``path`` with ``text`` in it (None: until it is gone)."""
    for _ in range(400):
        memory = await h.command("contextCompanion.showMemory", {})
        files = {f["path"] for f in memory["files"]}
        if (text is None and path not in files) or (text is not None and path in files and text in memory["text"]):
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"the server never saw {path} {'gone' if text is None else 'with ' + text}")


async def announcement(runtime: Path) -> dict[str, Any]:
    """The channel's discovery file, once the server wrote it (after its start-up)."""
    for _ in range(200):
        files = [p for p in (runtime / "context-companion").glob("hook-*.json") if '"agent-hook"' in p.read_text()]
        if files:
            assert len(files) == 1, files
            assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
            data: dict[str, Any] = json.loads(files[0].read_text())
            return data
        await asyncio.sleep(0.05)
    raise AssertionError(f"no agent-hook discovery file in {runtime}")


@pytest.mark.parametrize("workspace", ["ws", "my proj ünï #1"], indirect=True)
async def test_claude_code_gets_what_it_does_not_read_once_then_only_changes(
    start: Any, project: Path, runtime: Path
) -> None:
    """Also in a folder whose path has a space, non-ASCII letters and '#' (editors percent-encode it)."""
    conventions = "".join(f"Convention {i}: name things for what they hold, not for their type.\n" for i in range(8))
    (project / "AGENTS.md").write_text("# Team\nRun make check before committing.\n" + conventions)
    h = await start(project)
    app = h.open("api/app.py")
    h.cursor(app, 0, 0)
    await synced(h)
    assert (await announcement(runtime))["workspaceFolders"] == [str(project)]

    first = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    # Claude Code does not read AGENTS.md beside a CLAUDE.md, nor Cursor's or Copilot's rules, nor a
    # sub-folder's AGENTS.md: all delivered, the active file's folder and its rules first.
    for text in (
        "Run make check before committing.",
        "API handlers return JSON.",
        "Type every Python function.",
        "API folder: keep handlers thin.",
    ):
        assert first.count(text) == 1, first
    # Nearest first, then outward: the active file's folder, the rules matching it, then the root memory.
    assert first.index("API folder: keep handlers thin.") < first.index("API handlers return JSON.")
    assert first.index("API handlers return JSON.") < first.index("Run make check before committing.")
    assert "prefer small diffs" not in first  # CLAUDE.md: Claude Code reads and tracks it itself
    assert "Web folder" not in first and "hunter2" not in first and "<" not in first
    assert "No editor is connected" not in first
    # It speaks as the system, names the editor's active file, and says per file why it applies.
    assert first.splitlines()[0].startswith("Context Companion: project memory and rules")
    assert first.splitlines()[2] == "The editor's active file is api/app.py."
    assert " I " not in first and ".env" not in first
    assert "--- Context from: api/AGENTS.md (applies: active file api/app.py is under api/) ---" in first
    assert "--- Context from: AGENTS.md (applies: always: project memory) ---" in first
    assert "--- Context from: .cursor/rules/api.mdc (applies: glob 'api/**' matches api/app.py) ---" in first

    nothing(hook("claude-code", "UserPromptSubmit", "s1", project))  # nothing changed: zero bytes

    (project / "AGENTS.md").write_text("# Team\nRun make lint before committing.\n" + conventions)
    await seen(h, "AGENTS.md", "make lint")
    edited = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    # The change itself, marked as replacing the copy given earlier, with line numbers.
    assert "--- Changed on disk: AGENTS.md (applies: always: project memory)." in edited
    assert "replace the same lines of the earlier copy" in edited
    assert (
        "@@ -1,3 +1,3 @@\n # Team\n-Run make check before committing.\n+Run make lint before committing.\n Convention 0"
    ) in edited
    assert "API folder" not in edited and "Type every" not in edited and "Convention 5" not in edited

    (project / ".cursor" / "rules" / "api.mdc").unlink()
    await seen(h, ".cursor/rules/api.mdc", None)
    gone = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert ".cursor/rules/api.mdc no longer applies" in gone and "API handlers" not in gone

    page = h.open("web/page.py")
    h.close("api/app.py")
    h.cursor(page, 0, 0)
    await synced(h)
    moved = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert "Web folder: no inline styles." in moved
    assert moved.splitlines()[2] == "The editor's active file is web/page.py."
    # A closed tab takes nothing back: the agent may still be working on api/ files.
    assert "api/AGENTS.md" not in moved and "no longer applies" not in moved
    assert "Type every Python function." not in moved  # still applies (web/page.py), already given
    # Back to api/: api/AGENTS.md is unchanged and the agent has it: nothing new.
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    nothing(hook("claude-code", "UserPromptSubmit", "s1", project))

    # A compacted history lost what was delivered: the next prompt has it all again.
    nothing(hook("claude-code", "SessionStart", "s1", project, source="compact"))
    again = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert "Run make lint before committing." in again and "Web folder" in again and "no longer applies" not in again
    # Another session is another history.
    assert "Run make lint" in context(hook("claude-code", "UserPromptSubmit", "s2", project), "claude-code")


async def test_copilot_cli_opencode_and_qwen_code_get_what_they_lack_from_the_editor_in_their_shape(
    start: Any, project: Path, runtime: Path
) -> None:
    """Issue 35: the editor's server answers the three next agents' hooks, each without the files it reads
    itself, Copilot CLI in its own top-level shape (also when it runs a Claude Code hook)."""
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)

    def copilot(session: str, env: dict[str, str] | None = None, *, as_claude: bool = False) -> str:
        if as_claude:
            payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "timestamp": "t"}
            out = run_hook("claude-code", json.dumps({**payload, "cwd": str(project), "prompt": "go"}).encode(), env)
        else:
            payload = {"sessionId": session, "timestamp": 1, "cwd": str(project), "prompt": "go"}
            out = run_hook("copilot-cli", json.dumps(payload).encode(), env)
        assert out.returncode == 0 and out.stderr == b"", out.stderr
        if not out.stdout:
            return ""
        data = json.loads(out.stdout)
        assert list(data) == ["additionalContext"]
        text: str = data["additionalContext"]
        return text

    given = copilot("cp1")
    # Copilot CLI reads AGENTS.md and CLAUDE.md at the root and lists the applyTo instructions (the model may
    # read them when it touches a matching file): those come, the Cursor rule and api/AGENTS.md too.
    assert "Run make check" not in given and "Claude: prefer small diffs." not in given
    assert "Type every Python function." in given and "API handlers return JSON." in given
    assert "API folder: keep handlers thin." in given and "The editor's active file is api/app.py" in given
    # The Claude Code hook Copilot CLI runs for the same prompt has nothing more to say.
    assert copilot("cp1", {"COPILOT_CLI": "1"}, as_claude=True) == ""
    assert copilot("cp1") == ""
    # A Claude Code hook Copilot CLI runs in a project set up only for Claude Code delivers in Copilot's shape.
    assert "Type every Python function." in copilot("cp2", {"COPILOT_CLI": "1"}, as_claude=True)

    opencode = context(hook("opencode", "UserPromptSubmit", "o1", project), "opencode")
    qwen = context(hook("qwen-code", "UserPromptSubmit", "q1", project), "qwen-code")
    # OpenCode reads the root AGENTS.md (not CLAUDE.md beside it); Qwen Code AGENTS.md (and QWEN.md).
    for text in (opencode, qwen):
        assert "Run make check" not in text and "Claude: prefer small diffs." in text
        assert "API folder: keep handlers thin." in text and "Type every Python function." in text
    nothing(hook("opencode", "UserPromptSubmit", "o1", project))
    nothing(hook("qwen-code", "UserPromptSubmit", "q1", project))


async def test_codex_and_gemini_get_their_start_files_only_when_they_change(
    start: Any, project: Path, runtime: Path
) -> None:
    (project / "GEMINI.md").write_text("Gemini: answer briefly.\n")
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)

    codex = context(hook("codex", "UserPromptSubmit", "c1", project), "codex")
    gemini = context(hook("gemini-cli", "BeforeAgent", "g1", project), "gemini-cli")
    # Codex reads AGENTS.md itself at start; Gemini CLI reads GEMINI.md: neither is repeated...
    assert "Run make check" not in codex and "Claude: prefer small diffs." in codex
    assert "Gemini: answer briefly." not in gemini and "Run make check" in gemini
    assert "Gemini: answer briefly." in codex and "Claude: prefer small diffs." in gemini
    # Codex reads AGENTS.md from the repository root down to the folder it runs in: started in api/,
    # it read api/AGENTS.md itself; started at the root, it did not.
    assert "API folder: keep handlers thin." in codex
    in_api = context(hook("codex", "UserPromptSubmit", "c2", project / "api"), "codex")
    assert "API folder: keep handlers thin." not in in_api and "Claude: prefer small diffs." in in_api

    # ...until it changes: neither agent sees the edit of a file it read at start.
    (project / "AGENTS.md").write_text("# Team\nRun make lint before committing.\n")
    (project / "GEMINI.md").write_text("Gemini: answer in full sentences.\n")
    await seen(h, "AGENTS.md", "make lint")
    await seen(h, "GEMINI.md", "full sentences")
    codex = context(hook("codex", "UserPromptSubmit", "c1", project), "codex")
    gemini = context(hook("gemini-cli", "BeforeAgent", "g1", project), "gemini-cli")
    assert "Run make lint before committing." in codex and "answer in full sentences" in codex
    assert "answer in full sentences" in gemini and "Run make lint before committing." in gemini
    nothing(hook("codex", "UserPromptSubmit", "c1", project))
    nothing(hook("gemini-cli", "BeforeAgent", "g1", project))


async def test_large_memory_stays_under_the_limit_active_folder_first(start: Any, project: Path, runtime: Path) -> None:
    (project / "AGENTS.md").write_text("# Team\n" + "Root line that is fairly long and says little.\n" * 400)
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)
    text = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert len(text) <= 10_000
    assert "API folder: keep handlers thin." in text and "API handlers return JSON." in text
    # The root memory (19,207 characters) is over Claude Code's whole limit: it comes in parts, one a prompt.
    assert "--- Context from: AGENTS.md, part 1 of 3 (applies: always: project memory) ---" in text
    assert text.splitlines()[-1] == (
        "Still to come with your next prompts (each stays under 10,000 characters; read them yourself if you need "
        f"them now): {project / 'AGENTS.md'} (parts 2 to 3 of 3)"
    )
    second = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    third = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert "AGENTS.md, part 2 of 3 (" in second and "AGENTS.md, part 3 of 3 (" in third
    assert max(len(second), len(third)) <= 10_000 and "API folder" not in second + third
    joined = "".join(
        t.split(" ---\n", 1)[1].split("\n--- End of", 1)[0] + "\n"
        for t in (
            text[text.index("--- Context from: AGENTS.md, part 1") :],
            second.split("\n\n", 2)[2],
            third.split("\n\n", 2)[2],
        )
    )
    assert joined == (project / "AGENTS.md").read_text()  # the parts are the file, cut at line ends
    nothing(hook("claude-code", "UserPromptSubmit", "s1", project))
    # Gemini CLI takes 30,000 characters whole: the same root memory (19,207 characters) goes in.
    gemini = context(hook("gemini-cli", "BeforeAgent", "g1", project), "gemini-cli")
    assert "Root line that is fairly long" in gemini and "Left out" not in gemini and len(gemini) <= 30_000


async def test_channel_refuses_a_wrong_proof_and_oversized_requests(start: Any, project: Path, runtime: Path) -> None:
    h = await start(project)
    await synced(h)
    entry = await announcement(runtime)
    assert entry["startTime"] == process_start_time(h.server_pid)

    def refused(*lines: bytes) -> dict[str, Any]:
        channel = Channel(entry)
        try:
            for line in lines:
                channel.send_raw(line)
            return channel.receive()
        finally:
            channel.close()

    request = {"agent": "codex", "event": "UserPromptSubmit", "sessionId": "x", "cwd": str(project)}
    # The first version's request (the token first) is refused: the server never asks for the token.
    assert refused(json.dumps({"token": entry["token"], "request": request}).encode() + b"\n") == {
        "error": "this hook speaks an older protocol (it sends the token first): update context-companion"
    }
    assert refused(b'{"hello": "context-companion-hook", "version": 2, "nonce": "xyz"}\n') == {
        "error": "nonce: expected 32 to 128 hexadecimal characters"
    }
    channel = Channel(entry)
    greeting = channel.greet()
    assert "text" not in greeting and set(greeting) == {"nonce", "proof"}  # nothing said before the hook's proof
    assert channel.request("not the token", request, greeting) == {"error": "proof: wrong or missing"}
    channel.close()
    channel = Channel(entry)
    channel.greet()
    channel.send_raw(b"x" * (70 * 1024) + b"\n")
    with pytest.raises((AssertionError, ConnectionError)):
        channel.receive()  # closed without an answer: a line over 64 KiB is never read whole
    channel.close()
    bad = ask_channel(entry, entry["token"], {**request, "agent": "vim"})
    assert bad == {"error": f"request.agent: expected one of {', '.join(registry.HOOK_AGENTS)}"}
    good = ask_channel(entry, entry["token"], request)
    assert "Claude: prefer small diffs." in good["text"]


async def test_turned_off_the_hook_composes_from_disk(start: Any, project: Path, runtime: Path) -> None:
    h = await start(project, settings={"companion": {"agentHooks": {"enabled": False}}})
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    assert not list((runtime / "context-companion").glob("hook-*.json"))
    text = context(hook("claude-code", "UserPromptSubmit", "s1", project), "claude-code")
    assert text.splitlines()[2].startswith("(No editor is connected for this folder")
    assert "Run make check" in text and "API folder" not in text  # no open files on disk


HEAVY = ("pydantic", "tiktoken", "watchdog", "lsprotocol", "pygls", "platformdirs", "argparse", "yaml")
HOOK_PATH_MODULES = [
    "context_companion",
    "context_companion.agents",
    "context_companion.agents.claude_code",
    "context_companion.agents.registry",
    "context_companion.cli",
    "context_companion.hooks",
    "context_companion.hooks.client",
    "context_companion.ownership",
    "context_companion.procs",
    "context_companion.proofs",
]
_HOOK_AND_LIST_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("sys.modules at exit: " + json.dumps(sorted(sys.modules)) + "\\n"))
from context_companion.cli import main
sys.argv[0] = "context-companion"
sys.exit(main())
"""


async def test_the_hook_path_imports_nothing_heavy_when_a_server_answers(
    start: Any, project: Path, runtime: Path
) -> None:
    """It runs before every prompt: with the editor's server answering, the console entry point
    loads none of the domain's libraries (tests/lsp/test_lazy_imports.py does the same for the server)."""
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(project)}
    out = subprocess.run(
        [sys.executable, "-c", _HOOK_AND_LIST_MODULES, "hook", "--agent", "claude-code"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")},
        timeout=60,
    )
    assert "API folder: keep handlers thin." in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    line = out.stderr.decode().strip()
    assert line.startswith("sys.modules at exit: "), line
    modules = set(json.loads(line.removeprefix("sys.modules at exit: ")))
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY or m.startswith("context_companion.workspace"))
    assert loaded == []
    # Of ours: the command line's entry, the hook client and its light helpers, the registry and the one agent's
    # module (no other agent's, no typed rows: dataclasses stays unloaded).
    assert sorted(m for m in modules if m.startswith("context_companion")) == HOOK_PATH_MODULES
    assert "dataclasses" not in modules


SECTION = (
    "Run the unit tests of a package with its own test script before pushing; the shared fixtures live in the "
    "test-utils package and are never copied into a package. Keep each module small and named for what it holds.\n"
)
API = "# API handlers\n\nAPI-RULE: every handler checks permissions first and returns typed errors.\n"


@pytest.fixture
def monorepo(workspace: Path) -> Path:
    """Shaped like a monorepo issue 33 tried: a ~7,000-character root AGENTS.md, CLAUDE.md a link to it,
    each rule kept in .cursor/rules and .claude/rules with the same text, and many small back-end rules."""
    (workspace / ".git").mkdir()
    (workspace / "AGENTS.md").write_text(
        "# Working in this monorepo\n\n" + "".join(f"## Part {i}\n\n{SECTION}\n" for i in range(24))
    )
    (workspace / "CLAUDE.md").symlink_to("AGENTS.md")
    for folder, front in ((".cursor/rules", 'globs: "back/**/*.ts"'), (".claude/rules", 'paths:\n  - "back/**/*.ts"')):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / ("api.mdc" if "cursor" in folder else "api.md")).write_text(f"---\n{front}\n---\n{API}")
    for i in range(30):
        (workspace / ".cursor/rules" / f"small-{i:02d}.mdc").write_text(
            f'---\nglobs: "back/**/*.ts"\n---\nSMALL-{i:02d}: keep back-end file {i} short.\n'
        )
    (workspace / "back" / "src").mkdir(parents=True)
    (workspace / "back" / "src" / "app.ts").write_text("export const app = 1;\n")
    (workspace / "front").mkdir()
    (workspace / "front" / "page.ts").write_text("export const page = 1;\n")
    (workspace / ".env").write_text("API_TOKEN=hunter2-very-secret\n")
    return workspace


async def test_an_editor_on_a_monorepo_each_agent_gets_what_it_lacks_once_in_its_own_limit(
    start: Any, monorepo: Path, runtime: Path
) -> None:
    h = await start(monorepo)
    h.open("front/page.ts")
    h.open(".env")
    h.cursor(h.open("back/src/app.ts"), 0, 0)
    await synced(h)
    await announcement(runtime)

    claude = context(hook("claude-code", "UserPromptSubmit", "c", monorepo), "claude-code")
    # CLAUDE.md is a link to AGENTS.md: Claude Code has it. Its own copy of the API rule (read just in time)
    # is the one named; the .cursor copy never.
    assert "## Part" not in claude and ".cursor/rules/api.mdc" not in claude
    assert claude.count("API-RULE") == 1 and "--- Context from: .claude/rules/api.md (applies: " in claude
    assert claude.splitlines()[2] == "The editor's active file is back/src/app.ts; also open: front/page.ts."
    assert len(claude) <= 10_000

    gemini = context(hook("gemini-cli", "BeforeAgent", "g", monorepo), "gemini-cli")
    # Gemini CLI takes 30,000 characters: the rule of the active file first, then the root memory, nothing left out.
    assert gemini.count("## Part 23") == 1 and gemini.count("API-RULE") == 1
    assert all(f"SMALL-{i:02d}" in gemini for i in range(30)) and "Left out" not in gemini
    assert gemini.index("API-RULE") < gemini.index("## Part 0") and len(gemini) <= 30_000

    codex = context(hook("codex", "UserPromptSubmit", "x", monorepo), "codex")
    assert "## Part" not in codex and codex.count("API-RULE") == 1 and len(codex.encode()) <= 9_800
    for text in (claude, gemini, codex):
        assert "hunter2" not in text and ".env" not in text

    # The snapshot VS Code reads is one file too: AGENTS.md, never CLAUDE.md beside it.
    snapshot = await h.command("contextCompanion.getAgentMemory", {"agent": "gemini-cli"})
    paths = [f["path"] for f in snapshot["files"]]
    assert "AGENTS.md" in paths and "CLAUDE.md" not in paths and snapshot["text"].count("## Part 23") == 1


async def test_what_did_not_fit_comes_later_and_what_was_closed_is_never_taken_back(
    start: Any, monorepo: Path, runtime: Path
) -> None:
    (monorepo / "AGENTS.md").write_text("# Big\n\n" + SECTION * 120)  # over Claude Code's 10,000 characters
    (monorepo / "CLAUDE.md").unlink()
    (monorepo / "CLAUDE.md").write_text("Claude: short answers.\n")
    h = await start(monorepo)
    h.cursor(h.open("back/src/app.ts"), 0, 0)
    await synced(h)
    await announcement(runtime)
    first = context(hook("claude-code", "UserPromptSubmit", "c", monorepo), "claude-code")
    assert first.splitlines()[-1].startswith("Still to come with your next prompts (each stays under 10,000 characters")
    assert str(monorepo / "AGENTS.md") in first.splitlines()[-1] and "SMALL-00" in first
    # The back-end file is closed: the rules it brought stay with the agent; the root AGENTS.md, over the whole
    # limit, comes in parts with the next prompts, and then nothing.
    h.close("back/src/app.ts")
    h.cursor(h.open("front/page.ts"), 0, 0)
    await synced(h)
    for n in range(1, 5):
        part = context(hook("claude-code", "UserPromptSubmit", "c", monorepo), "claude-code")
        assert f"--- Context from: AGENTS.md, part {n} of 4 (applies: always: project memory) ---" in part
        assert "no longer applies" not in part and "SMALL-" not in part and len(part) <= 10_000
    nothing(hook("claude-code", "UserPromptSubmit", "c", monorepo))
    # A rule's own text changes so that it no longer applies to the back end: that one is taken back.
    (monorepo / ".cursor/rules/small-03.mdc").write_text('---\nglobs: "docs/**"\n---\nSMALL-03: docs only.\n')
    for _ in range(400):
        files = (await h.command("contextCompanion.showMemory", {}))["files"]
        if any(f["path"] == ".cursor/rules/small-03.mdc" and "docs/" in f["reason"] for f in files):
            break
        await asyncio.sleep(0.025)
    back = context(hook("claude-code", "UserPromptSubmit", "c", monorepo), "claude-code")
    assert back.count("no longer applies") == 1 and ".cursor/rules/small-03.mdc no longer applies" in back
    assert "AGENTS.md" not in back


async def test_a_delivery_counts_only_once_the_hook_has_it(start: Any, project: Path, runtime: Path) -> None:
    """The server commits what it answered only when the hook acknowledges it: an answer the hook never
    took (it gave up, its deadline passed) is sent again at the next prompt, never lost."""
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    entry = await announcement(runtime)
    request = {"agent": "codex", "event": "UserPromptSubmit", "sessionId": "acks", "cwd": str(project)}
    first = ask_channel(entry, entry["token"], request, ack=False)
    assert "API folder: keep handlers thin." in first["text"] and first["delivery"]
    again = ask_channel(entry, entry["token"], request)  # not acknowledged: not committed
    assert again["text"] == first["text"]
    assert ask_channel(entry, entry["token"], request)["text"] == ""  # acknowledged: delivered
    # An answer the server cannot give within the hook's budget is not given (and nothing is committed).
    other = {**request, "sessionId": "late"}
    channel = Channel(entry)
    late = channel.request(entry["token"], other, channel.greet(), budget_ms=0)
    channel.close()
    assert late == {"error": "the editor's server could not answer within the hook's deadline"}
    assert "API folder: keep handlers thin." in ask_channel(entry, entry["token"], other)["text"]


async def test_a_server_stopped_for_seconds_loses_no_delivery(start: Any, project: Path, runtime: Path) -> None:
    """The editor's server stops (SIGSTOP: a long pause, a swap storm) while a hook asks: the hook gives
    up after its deadline and prints the memory from disk; the server, once it runs again, has not
    recorded the open files' memory as delivered, so the next prompt gets it."""
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)
    os.kill(h.server_pid, signal.SIGSTOP)
    try:
        stopped = context(hook("claude-code", "UserPromptSubmit", "paused", project), "claude-code")
    finally:
        os.kill(h.server_pid, signal.SIGCONT)
    assert stopped.splitlines()[2].startswith("(No editor is connected for this folder")
    assert "API folder: keep handlers thin." not in stopped
    await synced(h)  # the server ran the stale exchange by now
    after = context(hook("claude-code", "UserPromptSubmit", "paused", project), "claude-code")
    assert "API folder: keep handlers thin." in after and "No editor is connected" not in after
    nothing(hook("claude-code", "UserPromptSubmit", "paused", project))


async def test_an_agent_started_through_a_symlink_finds_the_editors_server(
    start: Any, project: Path, runtime: Path, tmp_path: Path
) -> None:
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    await announcement(runtime)
    link = tmp_path / "link-to-proj"
    link.symlink_to(project)
    text = context(hook("gemini-cli", "BeforeAgent", "via-link", link / "api"), "gemini-cli")
    assert "API folder: keep handlers thin." in text and "No editor is connected" not in text


async def test_connections_that_never_prove_the_token_are_capped_and_logged_once(
    start: Any, project: Path, runtime: Path, tmp_path: Path
) -> None:
    """Hundreds of connections that say nothing: past the cap the oldest waiting one is closed for each
    new one, so the hook (which greets at once) still gets its answer, and the log gets one line, not one
    per connection."""
    log = tmp_path / "server.log"
    h = await start(project, args=["--log-file", str(log)])
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    entry = await announcement(runtime)
    idle = [connect(entry) for _ in range(200)]
    try:
        for sock in idle[:20]:  # the oldest, past the cap: closed by the server without a word
            sock.settimeout(10)
            assert sock.recv(1) == b""
        text = context(hook("claude-code", "UserPromptSubmit", "crowd", project), "claude-code")
        assert "API folder: keep handlers thin." in text
    finally:
        for sock in idle:
            sock.close()
    await synced(h)
    refusals = [line for line in log.read_text().splitlines() if "agent hooks' channel: " in line]
    assert len(refusals) == 1, refusals


OTHER_UID = 54321
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user (setuid) needs root")


class Intruder:
    """A process of another user (uid 54321: forked, then setuid) that opens ``count`` connections to the channel an
    announcement names and holds them, idle, until :meth:`leave`. It connects to the socket by its name from inside
    the socket's folder (its working folder, entered before it gave up root): no folder above it is in its way, only
    that folder's own mode. ``greet``: it sends a greeting on each and records what comes back."""

    def __init__(self, entry: dict[str, Any], count: int, folder: Path, *, greet: bool = False) -> None:
        import errno

        report_r, report_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.close(report_r)
                os.close(done_w)
                os.chdir(folder)
                os.setgroups([])
                os.setgid(OTHER_UID)
                os.setuid(OTHER_UID)
                held: list[socket.socket] = []
                errors: dict[str, int] = {}
                answers: list[str] = []
                for _ in range(count):
                    try:
                        if entry.get("socket"):
                            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                            sock.settimeout(5)
                            sock.connect(os.path.basename(entry["socket"]))
                        else:  # not create_connection: its name lookup imports a codec, unreadable as that user
                            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                            sock.settimeout(5)
                            sock.connect(("127.0.0.1", entry["port"]))
                        held.append(sock)
                    except OSError as exc:
                        name = errno.errorcode.get(exc.errno or 0, str(exc))
                        errors[name] = errors.get(name, 0) + 1
                        continue
                    if greet:
                        try:
                            sock.sendall(b'{"hello": "context-companion-hook", "version": 2, "nonce": "' + b"ab" * 16)
                            sock.sendall(b'"}\n')
                            answers.append(sock.recv(4096).decode(errors="replace"))
                        except OSError as exc:  # reset: closed without a word
                            answers.append(errno.errorcode.get(exc.errno or 0, str(exc)))
                report: dict[str, Any] = {"connected": len(held), "errors": errors, "answers": answers}
                os.write(report_w, json.dumps(report).encode() + b"\n")
                os.read(done_r, 1)
            except BaseException as exc:
                os.write(report_w, json.dumps({"failed": repr(exc)}).encode() + b"\n")
            finally:
                os._exit(0)
        os.close(report_w)
        os.close(done_r)
        self.pid, self._done = pid, done_w
        with os.fdopen(report_r) as fh:
            self.report: dict[str, Any] = json.loads(fh.readline())

    def leave(self) -> None:
        os.close(self._done)
        os.waitpid(self.pid, 0)


def _private_socket(entry: dict[str, Any], runtime: Path) -> Path:
    """The announced socket, checked: version 2, in the runtime folder, the folder 0700 and the socket 0600, ours."""
    folder = runtime / "context-companion"
    path = Path(entry["socket"])
    assert entry["version"] == 2 and entry["port"] == 0 and path.parent == folder
    st = folder.lstat()
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    st = path.lstat()
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    return path


@needs_root
async def test_another_users_idle_connections_cannot_reach_the_channel_and_the_editor_answers(
    start: Any, project: Path, runtime: Path
) -> None:
    """Another user opening idle connections to the channel pushed 4 of 4 of the victim's prompts to the disk path
    (1.5-3.7 s, no editor memory) while it was a loopback port. On a socket in the 0700 runtime folder they cannot
    connect at all, and the victim's prompt is answered by the editor's server (its active file, its folder memory)."""
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    entry = await announcement(runtime)
    path = _private_socket(entry, runtime)
    intruder = Intruder(entry, 300, path.parent)
    try:
        assert intruder.report == {"connected": 0, "errors": {"EACCES": 300}, "answers": []}
        text = context(hook("claude-code", "UserPromptSubmit", "victim", project), "claude-code")
        assert "The editor's active file is api/app.py" in text and "API folder: keep handlers thin." in text
    finally:
        intruder.leave()


@needs_root
async def test_a_peer_of_another_user_is_refused_even_where_the_folder_lets_it_in(
    start: Any, project: Path, runtime: Path, tmp_path: Path
) -> None:
    """Defence in depth: with the folder and the socket left loose (0711, 0666), another user can connect, and the
    server closes each such connection before a word (the peer's uid, SO_PEERCRED); one log line for all."""
    log = tmp_path / "server.log"
    h = await start(project, args=["--log-file", str(log)])
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    entry = await announcement(runtime)
    path = _private_socket(entry, runtime)
    os.chmod(path.parent, 0o711)
    os.chmod(path, 0o666)
    try:
        intruder = Intruder(entry, 3, path.parent, greet=True)
        intruder.leave()
    finally:
        os.chmod(path.parent, 0o700)
        os.chmod(path, 0o600)
    assert intruder.report["connected"] == 3 and intruder.report["errors"] == {}
    # Closed without a greeting, a proof or a nonce (a reset, or an end of stream).
    assert set(intruder.report["answers"]) <= {"", "ECONNRESET", "EPIPE"}, intruder.report
    text = context(hook("claude-code", "UserPromptSubmit", "victim", project), "claude-code")
    assert "The editor's active file is api/app.py" in text
    await synced(h)
    refusals = [line for line in log.read_text().splitlines() if "refused a connection of another user" in line]
    assert len(refusals) == 1, refusals


async def test_a_runtime_folder_too_deep_for_sun_path_still_gets_the_socket(
    start: Any, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sun_path`` holds 108 bytes (104 on macOS), and a runtime folder may be deeper (the tests' own are): the
    socket is bound and reached through a descriptor of its folder (``/proc/self/fd/N/hook-<pid>.sock``), so the
    channel stays a socket; only where there is no ``/proc`` would it be a loopback port."""
    run = tmp_path / ("r" * 60) / ("u" * 40)
    run.mkdir(parents=True)
    os.chmod(run, 0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    h = await start(project)
    h.cursor(h.open("api/app.py"), 0, 0)
    await synced(h)
    entry = await announcement(run)
    assert len(entry["socket"]) > 108
    _private_socket(entry, run)
    text = context(hook("claude-code", "UserPromptSubmit", "deep", project), "claude-code")
    assert "The editor's active file is api/app.py" in text


def _memory(title: str, marker: str, size: int) -> str:
    text = f"# {title}\n\n{marker}\n\n"
    i = 0
    while len(text) < size:
        text += f"## {title} rule {i}\n\nEach {title.lower()} change comes with a test of what a user sees, {i}.\n\n"
        i += 1
    return text


async def test_the_nearest_memory_comes_first_and_the_rest_on_the_next_prompts(
    start: Any, workspace: Path, runtime: Path
) -> None:
    """Issue 39.2, as on pydantic-ai: the editor on ``pkg/models/openai.py``, whose folder's memory (6,700
    characters) and its parent's (4,400) are over Claude Code's 10,000 together: the nearest in the first prompt,
    the parent in the next; a ``tests/AGENTS.md`` over the whole limit comes in parts, one a prompt; Gemini CLI,
    with room for all of it, gets it in one prompt."""
    (workspace / ".git").mkdir()
    (workspace / "CLAUDE.md").write_text("Claude: prefer small diffs.\n")
    (workspace / "pkg" / "models").mkdir(parents=True)
    (workspace / "pkg" / "AGENTS.md").write_text(_memory("Package", "PARENT-MEMORY", 4_400))
    (workspace / "pkg" / "models" / "AGENTS.md").write_text(_memory("Models", "NEAREST-MEMORY", 6_700))
    (workspace / "pkg" / "models" / "openai.py").write_text("x = 1\n")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "AGENTS.md").write_text(_memory("Tests", "TESTS-MEMORY", 20_700))
    (workspace / "tests" / "test_openai.py").write_text("y = 2\n")
    h = await start(workspace)
    h.cursor(h.open("pkg/models/openai.py"), 0, 0)
    await synced(h)
    await announcement(runtime)

    turn1 = context(hook("claude-code", "UserPromptSubmit", "c", workspace), "claude-code")
    assert "NEAREST-MEMORY" in turn1 and "PARENT-MEMORY" not in turn1 and len(turn1) <= 10_000
    assert turn1.splitlines()[-1] == (
        "Still to come with your next prompts (each stays under 10,000 characters; read them yourself if you need "
        f"them now): {workspace / 'pkg' / 'AGENTS.md'}"
    )
    turn2 = context(hook("claude-code", "UserPromptSubmit", "c", workspace), "claude-code")
    assert "PARENT-MEMORY" in turn2 and "NEAREST-MEMORY" not in turn2 and "Still to come" not in turn2
    nothing(hook("claude-code", "UserPromptSubmit", "c", workspace))

    h.cursor(h.open("tests/test_openai.py"), 0, 0)
    await synced(h)
    parts = [context(hook("claude-code", "UserPromptSubmit", "c", workspace), "claude-code") for _ in range(3)]
    for n, text in enumerate(parts, 1):
        assert f"--- Context from: tests/AGENTS.md, part {n} of 3 (applies: " in text and len(text) <= 10_000
    assert "TESTS-MEMORY" in parts[0] and "Tests rule 0\n" in parts[0]
    assert parts[0].splitlines()[-1].endswith(f"{workspace / 'tests' / 'AGENTS.md'} (parts 2 to 3 of 3)")
    assert parts[1].splitlines()[-1].endswith(f"{workspace / 'tests' / 'AGENTS.md'} (part 3 of 3)")
    assert "Still to come" not in parts[2] and "(part 3 of 3: the whole file is given) ---" in parts[2]
    nothing(hook("claude-code", "UserPromptSubmit", "c", workspace))

    # Gemini CLI (30,000 characters) on the same files: the active file's memory first; of what the other open
    # file brings, what fits the room left (31,800 characters in all), the rest with the next prompt.
    gemini = context(hook("gemini-cli", "BeforeAgent", "g", workspace), "gemini-cli")
    assert gemini.index("TESTS-MEMORY") < gemini.index("PARENT-MEMORY") and "NEAREST-MEMORY" not in gemini
    assert gemini.splitlines()[-1].endswith(f"now): {workspace / 'pkg' / 'models' / 'AGENTS.md'}")
    assert len(gemini) <= 30_000
    assert "NEAREST-MEMORY" in context(hook("gemini-cli", "BeforeAgent", "g", workspace), "gemini-cli")
    nothing(hook("gemini-cli", "BeforeAgent", "g", workspace))
