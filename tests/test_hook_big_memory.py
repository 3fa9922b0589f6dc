"""Big memory through `context-companion hook` (issue 39): a change of a file of any size is sent as its change;
the state that makes it possible holds each text once; an agent that starts a new process each turn (``copilot -p
--session-id``, ``qwen -p --resume``) has read its own files afresh and never gets their change again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hook_runner import run_hook

SECTION = (
    "Keep each change small and explain why in the commit message; run the formatter and the linter before "
    "pushing, and add a test that fails without the change.\n"
)


def big_agents_md(size: int = 20_000) -> str:
    text = "# Working on this project\n\n"
    i = 0
    while len(text) < size:
        text += f"## Rule {i}\n\n{SECTION}\n"
        i += 1
    return text


def payload(agent: str, session: str, cwd: Path) -> bytes:
    if agent == "copilot-cli":  # its own hooks' shape
        return json.dumps({"sessionId": session, "timestamp": 1, "cwd": str(cwd), "prompt": "go on"}).encode()
    event = "BeforeAgent" if agent == "gemini-cli" else "UserPromptSubmit"
    return json.dumps({"hook_event_name": event, "session_id": session, "cwd": str(cwd), "prompt": "go on"}).encode()


def text_of(agent: str, out: subprocess.CompletedProcess[bytes]) -> str:
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    if not out.stdout:
        return ""
    raw = json.loads(out.stdout)
    text: str = raw["additionalContext"] if agent == "copilot-cli" else raw["hookSpecificOutput"]["additionalContext"]
    return text


# A stand-in for the agent's process: it runs the hook's command line through ``sh -c`` as the agents do (the
# ``; exit`` keeps the shell from replacing itself with the hook), so the hook's parent is a shell.
_AGENT = """
import subprocess, sys
sys.exit(subprocess.run(["sh", "-c", sys.argv[1] + "; exit $?"]).returncode)
"""


def hook_in_new_process(agent: str, data: bytes, runtime: Path) -> subprocess.CompletedProcess[bytes]:
    """The hook as run by a new agent process (one per turn, as ``copilot -p``/``qwen -p`` are)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    command = f"'{sys.executable}' -m context_companion hook --agent {agent}"
    return subprocess.run(
        [sys.executable, "-I", "-c", _AGENT, command], input=data, capture_output=True, env=env, timeout=60
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text(big_agents_md(), encoding="utf-8")
    return root


@pytest.mark.parametrize("agent", ["gemini-cli", "codex", "copilot-cli", "qwen-code", "claude-code"])
def test_a_one_line_edit_of_a_20000_character_agents_md_arrives_as_that_change(
    agent: str, project: Path, runtime: Path
) -> None:
    assert len((project / "AGENTS.md").read_text()) >= 20_000
    first = text_of(agent, run_hook(agent, payload(agent, "s1", project), {"XDG_RUNTIME_DIR": str(runtime)}))
    if agent == "gemini-cli":  # it does not read AGENTS.md (default settings): given whole, 30,000 characters fit
        assert "--- Context from: AGENTS.md (applies: always: project memory) ---" in first and "## Rule 0\n" in first
    else:  # read at start by the agent itself: nothing to say
        assert first == ""
    with (project / "AGENTS.md").open("a", encoding="utf-8") as fh:
        fh.write("NEW-RULE: never commit generated files.\n")
    edited = text_of(agent, run_hook(agent, payload(agent, "s1", project), {"XDG_RUNTIME_DIR": str(runtime)}))
    assert edited.count("NEW-RULE: never commit generated files.") == 1
    assert "--- Changed on disk: AGENTS.md (applies: always: project memory)." in edited
    assert len(edited) < 2_000 and "## Rule 0\n" not in edited and "Left out" not in edited
    assert text_of(agent, run_hook(agent, payload(agent, "s1", project), {"XDG_RUNTIME_DIR": str(runtime)})) == ""


@pytest.mark.parametrize("agent", ["copilot-cli", "qwen-code"])
def test_an_agent_that_reads_its_files_again_in_each_process_never_gets_their_change(
    agent: str, project: Path, runtime: Path
) -> None:
    """``-p`` sessions: every turn is a new agent process that read AGENTS.md afresh; the hook, run through a
    shell, finds that process above the shell and sends nothing of the edit. An interactive session (one process)
    read it once: it gets the change, once."""
    (project / "sub").mkdir()
    (project / "sub" / "AGENTS.md").write_text("SUB-ONLY: the agent never reads this one below its folder.\n")
    assert text_of(agent, hook_in_new_process(agent, payload(agent, "p", project), runtime)) == ""
    with (project / "AGENTS.md").open("a", encoding="utf-8") as fh:
        fh.write("EDITED-LINE: run the slow tests on Fridays.\n")
    assert text_of(agent, hook_in_new_process(agent, payload(agent, "p", project), runtime)) == ""
    assert text_of(agent, hook_in_new_process(agent, payload(agent, "p", project), runtime)) == ""

    # The same edit, seen by an interactive session: one agent process for every turn.
    (project / "AGENTS.md").write_text(big_agents_md(), encoding="utf-8")
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    assert text_of(agent, run_hook(agent, payload(agent, "i", project), env)) == ""
    with (project / "AGENTS.md").open("a", encoding="utf-8") as fh:
        fh.write("EDITED-LINE: run the slow tests on Fridays.\n")
    edited = text_of(agent, run_hook(agent, payload(agent, "i", project), env))
    assert edited.count("EDITED-LINE") == 1 and len(edited) < 2_000
    assert text_of(agent, run_hook(agent, payload(agent, "i", project), env)) == ""


def test_the_agent_process_is_found_above_the_shells_that_run_the_hook(tmp_path: Path) -> None:
    probe = "from context_companion.procs import agent_process; print(agent_process())"
    script = f"'{sys.executable}' -I -c '{probe}'"
    agent = (
        "import os, subprocess, sys\n"
        "from context_companion.procs import process_start_time\n"
        "out = subprocess.run(['sh', '-c', 'bash -c \"' + sys.argv[1] + '; exit $?\"; exit $?'], capture_output=True,"
        " text=True)\n"
        "print(out.stdout.strip(), f'{os.getpid()}:{process_start_time(os.getpid())}')\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", agent, script], capture_output=True, text=True, timeout=60)
    found, expected = out.stdout.split()
    assert found == expected, out.stderr  # through sh and bash, up to the agent


def test_the_state_holds_each_text_once_whatever_the_number_of_sessions() -> None:
    """256 sessions given the same 20,000-character file and its edit keep one copy of each text (the state file
    held one per session before, and none of a file over 16,000 characters)."""
    from context_companion.memory.model import MemoryBlock
    from context_companion.workspace.agent_memory import lacking
    from context_companion.workspace.hooks import HookSessions, deliver, working_copy

    def root(text: str) -> list[MemoryBlock]:
        return [MemoryBlock("AGENTS.md", "/ws/AGENTS.md", "workspace", True, "workspace memory", text, False)]

    text = big_agents_md()
    sessions = HookSessions()
    for i in range(256):
        state = working_copy(None)
        deliver(state, lacking(root(text)), limit=30_000, texts=sessions.texts)
        sessions._by_key[("gemini-cli", f"s{i}")] = state
    size = len(json.dumps(sessions.to_json()))
    assert len(text) < size < len(text) + 256 * 300  # the text once, and about 200 bytes a session
    edited = text + "NEW-RULE: one more line.\n"
    for i in range(256):
        state = sessions.get("gemini-cli", f"s{i}")
        change = deliver(state, lacking(root(edited)), limit=30_000, texts=sessions.texts)
        assert change.changed == ("AGENTS.md",) and len(change.text) < 2_000
    kept = sessions.to_json()
    assert sorted(kept["texts"].values(), key=len) == [edited]  # the old text: no session refers to it now


def test_explain_says_what_a_new_session_gets_prompt_after_prompt(tmp_path: Path) -> None:
    """``explain`` names, for an agent with hooks, what its hook would give a new session prompt after prompt:
    the nearest memory first, what is still to come, a file over the limit in parts."""
    root = tmp_path / "lib"
    (root / ".git").mkdir(parents=True)
    (root / "CLAUDE.md").write_text("Claude: small diffs.\n")
    (root / "pkg" / "models").mkdir(parents=True)
    (root / "pkg" / "AGENTS.md").write_text(big_agents_md(4_400))
    (root / "pkg" / "models" / "AGENTS.md").write_text(big_agents_md(6_700).replace("this project", "models"))
    (root / "pkg" / "models" / "openai.py").write_text("x = 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "AGENTS.md").write_text(big_agents_md(20_700).replace("this project", "tests"))
    (root / "tests" / "x.py").write_text("y = 2\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}

    def explain(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [
            sys.executable,
            "-m",
            "context_companion",
            "explain",
            "--agent",
            "claude-code",
            "--workspace",
            str(root),
        ]
        return subprocess.run([*argv, *args], capture_output=True, text=True, env=env, cwd=root, timeout=60)

    out = explain("--open", "pkg/models/openai.py")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith("hook, prompt ")]
    assert len(lines) == 2 and lines[0].startswith("hook, prompt 1 of a new session: ")
    assert lines[0].endswith(f"characters: pkg/models/AGENTS.md; still to come: {root / 'pkg' / 'AGENTS.md'}")
    assert lines[1].endswith(" characters: pkg/AGENTS.md")
    data = json.loads(explain("--json", "--open", "tests/x.py").stdout)["hookDelivery"]
    assert [step["parts"] for step in data] == [[f"part {n} of 3 of tests/AGENTS.md"] for n in (1, 2, 3)]
    assert [step["stillToCome"] for step in data] == [[str(root / "tests" / "AGENTS.md")]] * 2 + [[]]
    assert all(step["size"] <= 10_000 and step["unit"] == "characters" for step in data)


@pytest.mark.parametrize("unit", ["characters", "bytes"])
def test_parts_are_the_file_cut_at_headings_and_blank_lines_each_within_its_room(unit: str) -> None:
    from context_companion.workspace.hooks import split_parts, utf8_bytes

    count = utf8_bytes if unit == "bytes" else len
    text = (
        big_agents_md(9_000)
        + "A paragraph without a blank line in it, line after line.\n" * 120
        + "関数には必ず型注釈を付けてください。" * 400  # one line of 7,200 characters (21,600 bytes), no newline
        + "\n\n# Last heading\n\nThe end.\n"
    )
    parts = split_parts(text, 3_000, count)
    assert "".join(parts) == text and all(0 < count(p) <= 3_000 for p in parts)
    whole_paragraphs = [p for p in parts[:3] if not p.startswith("A paragraph")]
    assert all(p.startswith(("# ", "## ")) and p.endswith("\n\n") for p in whole_paragraphs)  # cut between them
    assert parts[-1].endswith("# Last heading\n\nThe end.\n")
