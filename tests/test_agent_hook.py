"""`context-companion hook` as an agent runs it, with no editor running: composed from disk, with
per-session state in an owner-only file; and what it does with input it cannot use (exit 0, one
line on stderr, nothing on stdout: exit 2 would block the user's prompt)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from context_companion.agents import registry
from hook_runner import run_hook


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run make check.\n")
    (ws / "CLAUDE.md").write_text("Claude: small diffs.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    (ws / ".cursor" / "rules" / "py.mdc").write_text('---\nglobs: "*.py"\n---\nPython only.\n')
    (ws / "pkg").mkdir()
    (ws / "pkg" / "AGENTS.md").write_text("Package memory.\n")
    return ws


def hook(agent: str, payload: Any, runtime: Path, raw: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return run_hook(agent, raw if raw is not None else json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})


def prompt(session: str, cwd: Path, event: str = "UserPromptSubmit") -> dict[str, str]:
    return {"hook_event_name": event, "session_id": session, "cwd": str(cwd), "prompt": "hello"}


def test_without_an_editor_it_composes_from_disk_once(project: Path, runtime: Path) -> None:
    out = hook("claude-code", prompt("s1", project / "pkg"), runtime)  # started in a sub-folder
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert text.splitlines()[2] == (
        "(No editor is connected for this folder: this is the memory on disk for the project as a whole; memory "
        "that applies only to particular files is not included.)"
    )
    assert " I " not in text and "open in the editor" not in text and "active file" not in text
    assert "Run make check." in text and "Always: be kind." in text
    assert "Claude: small diffs." not in text and "Python only." not in text and "Package memory." not in text
    state = runtime / "context-companion" / "hook-sessions.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600

    assert hook("claude-code", prompt("s1", project), runtime).stdout == b""  # nothing new: zero bytes
    (project / "AGENTS.md").write_text("Run make lint.\n")
    changed = json.loads(hook("claude-code", prompt("s1", project), runtime).stdout)
    assert "Run make lint." in changed["hookSpecificOutput"]["additionalContext"]
    assert "be kind" not in changed["hookSpecificOutput"]["additionalContext"]

    cleared = hook("claude-code", {**prompt("s1", project, "SessionStart"), "source": "clear"}, runtime)
    assert (cleared.returncode, cleared.stdout, cleared.stderr) == (0, b"", b"")
    again = json.loads(hook("claude-code", prompt("s1", project), runtime).stdout)
    assert "be kind" in again["hookSpecificOutput"]["additionalContext"]


def test_gemini_names_its_own_event(project: Path, runtime: Path) -> None:
    out = json.loads(hook("gemini-cli", prompt("g", project, "BeforeAgent"), runtime).stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    # The short name users type is the same agent (and the same session state).
    assert hook("gemini", prompt("g", project, "BeforeAgent"), runtime).stdout == b""
    assert "Claude: small diffs." in out["hookSpecificOutput"]["additionalContext"]


def test_gemini_settings_with_comments_keep_agents_md_out_of_the_gemini_hook(project: Path, runtime: Path) -> None:
    """Gemini CLI reads AGENTS.md itself when its settings name it, comments or not: not sent twice."""
    without = json.loads(hook("gemini-cli", prompt("plain", project, "BeforeAgent"), runtime).stdout)
    assert "Run make check." in without["hookSpecificOutput"]["additionalContext"]

    (project / ".gemini").mkdir()
    settings = project / ".gemini" / "settings.json"
    settings.write_text('{\n  // ours\n  "context": {"fileName": ["AGENTS.md", "GEMINI.md"]} /* both */\n}\n')
    named = json.loads(hook("gemini-cli", prompt("named", project, "BeforeAgent"), runtime).stdout)
    text = named["hookSpecificOutput"]["additionalContext"]
    assert "Run make check." not in text and "Claude: small diffs." in text

    settings.unlink()
    os.mkfifo(settings)  # never opened for writing: reading it must not wait
    stalled = hook("gemini-cli", prompt("fifo", project, "BeforeAgent"), runtime)
    assert stalled.returncode == 0 and b"Run make check." in stalled.stdout


@pytest.mark.parametrize(
    ("args", "data", "error"),
    [
        (
            ["--agent", "vim"],
            b"{}",
            f"--agent: expected one of {', '.join(registry.HOOK_AGENTS)}, got 'vim'",
        ),
        (
            [],
            b"{}",
            f"--agent: expected one of {', '.join(registry.HOOK_AGENTS)}, got None",
        ),
        (
            ["--agent", "codex"],
            b"not json",
            "the hook input on stdin is not JSON (Expecting value: line 1 column 1 (char 0))",
        ),
        (["--agent", "codex"], b"[1]", "the hook input on stdin is not a JSON object"),
        (["--agent", "codex"], b'{"hook_event_name": "UserPromptSubmit"}', "session_id: missing in the hook input"),
        (["--agent", "codex"], b'{"hook_event_name": 3}', "hook_event_name: expected a string in the hook input"),
    ],
)
def test_bad_input_exits_0_with_one_line(runtime: Path, args: list[str], data: bytes, error: str) -> None:
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    out = subprocess.run(
        [sys.executable, "-m", "context_companion", "hook", *args], input=data, capture_output=True, env=env, timeout=60
    )
    assert (out.returncode, out.stdout) == (0, b"")
    assert out.stderr.decode() == f"context-companion hook: {error}\n"


def test_other_events_print_nothing(project: Path, runtime: Path) -> None:
    out = hook("codex", prompt("s", project, "Stop"), runtime)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


def _announce(
    directory: Path, pid: int, port: int, folders: list[str], mtime: float, start: int | str | None = "real"
) -> None:
    from context_companion.procs import process_start_time

    path = directory / f"hook-{pid}-{port}.json"
    started = process_start_time(pid) if start == "real" else start
    raw = {"pid": pid, "startTime": started, "port": port, "transport": "agent-hook", "token": "t"}
    path.write_text(json.dumps({**raw, "workspaceFolders": folders}))
    path.chmod(0o600)
    os.utime(path, (mtime, mtime))


EDITOR = """
import json, subprocess, sys
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(server.pid, flush=True)
sys.stdin.readline()  # the announcements are written
code = "import json, sys; from context_companion.hooks import client; " \
       "print(json.dumps([s['port'] for s in client.servers(sys.argv[1], sys.argv[2])]))"
hook = subprocess.run([sys.executable, "-c", code, *sys.argv[1:]], capture_output=True, text=True)
print(hook.stdout.strip() or hook.stderr, flush=True)
server.kill()
"""


def _stranger() -> int:
    """A live process of another user: init when the tests do not run as root, else a process started
    as nobody (65534)."""
    if os.getuid() != 0:
        return 1
    proc = subprocess.Popen(["sleep", "60"], user=65534, group=65534)
    _STRANGERS.append(proc)
    return proc.pid


_STRANGERS: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_strangers_left() -> Any:
    yield
    while _STRANGERS:
        proc = _STRANGERS.pop()
        proc.kill()
        proc.wait()


def test_the_server_chosen_is_the_editor_whose_terminal_runs_the_agent(tmp_path: Path) -> None:
    """Two editors' servers hold the folder: the hook takes the one that shares its nearest ancestor
    process (the editor whose terminal runs the agent), even when the other one is newer; a server
    of another folder or a dead one never, nor one whose pid now names another process (another
    start time: the pid was reused) or another user's process."""
    directory = tmp_path / "cc"
    directory.mkdir(mode=0o700)
    folder = tmp_path / "proj"
    editor = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(folder / "sub"), str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # another editor's server
    try:
        assert editor.stdout is not None and editor.stdin is not None
        ours = int(editor.stdout.readline())
        _announce(directory, ours, 1, [str(folder)], 100.0)
        _announce(directory, other.pid, 2, [str(folder)], 200.0)  # newer
        _announce(directory, os.getpid(), 3, [str(tmp_path / "elsewhere")], 300.0)
        _announce(directory, 2**22 + 7, 4, [str(folder)], 400.0)  # no such process
        _announce(directory, other.pid, 5, [str(folder)], 500.0, start=12345)  # the pid, reused since
        _announce(directory, other.pid, 6, [str(folder)], 600.0, start=None)  # no start time: never believed
        stranger = _stranger()
        _announce(directory, stranger, 7, [str(folder)], 700.0)  # another user's process
        editor.stdin.write("\n")
        editor.stdin.flush()
        assert json.loads(editor.stdout.readline()) == [1, 2]
    finally:
        other.kill()
        editor.kill()
        other.wait()
        editor.wait()


def test_session_states_are_bounded_and_a_lost_one_delivers_everything_again() -> None:
    """The server and the state file keep at most ``limit`` sessions, least recently used out first;
    a session that is gone (or a state file that is damaged) starts afresh: a full delivery, never a
    missed change."""
    from context_companion.workspace.hooks import HookSessions

    sessions = HookSessions(limit=2)
    sessions.get("codex", "a").given["/p/AGENTS.md"] = ("AGENTS.md", "f1")
    sessions.get("codex", "b")
    sessions.get("codex", "a")  # used again: b is now the oldest
    sessions.get("codex", "c")
    assert len(sessions) == 2
    kept = HookSessions.from_json(json.loads(json.dumps(sessions.to_json())), limit=2)
    assert kept.get("codex", "a").given == {"/p/AGENTS.md": ("AGENTS.md", "f1")}
    assert kept.get("codex", "b").given == {} and not kept.get("codex", "b").started
    for damaged in (None, {"x": 1}, [["codex", "a", {"given": {"/p": [1, 2]}}]], [["codex"]]):
        assert all(not s.given for s in [HookSessions.from_json(damaged).get("codex", "a")])


def test_hundreds_of_files_stay_under_the_limit_and_come_on_the_next_prompts() -> None:
    """What does not fit one prompt is named as still to come (the last line counts what it cannot name) and
    arrives with the next prompts, until the agent has all of it; then nothing."""
    from context_companion.memory.model import MemoryBlock
    from context_companion.workspace.agent_memory import lacking
    from context_companion.workspace.hooks import HookState, deliver

    blocks = [
        MemoryBlock(
            f"m{i}/AGENTS.md", f"/ws/module-{i:03d}/AGENTS.md", "jit", True, "open file", f"rule {i} " * 60, True
        )
        for i in range(300)
    ]
    state = HookState()
    first = deliver(state, lacking(blocks), limit=9_500)
    assert len(first.text) < 9_500 and 0 < len(first.files) < 300
    last = first.text.splitlines()[-1]
    assert last.startswith(
        "Still to come with your next prompts (each stays under 9,500 characters; read them yourself if you need "
        "them now): /ws/module-"
    )
    assert last.endswith(
        f" and {300 - len(first.files) - last.count('/AGENTS.md')} more (context-companion memory lists them)"
    )
    assert len(first.pending) == 300 - len(first.files)
    got = list(first.files)
    for _turn in range(40):
        more = deliver(state, lacking(blocks), limit=9_500)
        if not more.text:
            break
        assert len(more.text) < 9_500 and more.files and not set(more.files) & set(got)
        got += more.files
    assert sorted(got) == sorted(b.path for b in blocks)  # every file once, in about 13 prompts
    assert deliver(state, lacking(blocks), limit=9_500).text == ""


def test_a_changed_file_too_large_to_send_comes_in_parts_and_the_state_round_trips() -> None:
    """A changed file whose change and whole text are both over the agent's limit comes in parts, one a prompt,
    marked as replacing the earlier copy; the state (with its parts sent) survives the state file, the text given
    is kept once in the store all sessions share, and a state file written before those existed still loads."""
    from context_companion.memory.model import MemoryBlock
    from context_companion.workspace.agent_memory import lacking
    from context_companion.workspace.hooks import HookSessions, HookState, TextStore, deliver

    def root(text: str) -> list[MemoryBlock]:
        return [MemoryBlock("AGENTS.md", "/ws/AGENTS.md", "workspace", True, "workspace memory", text, False)]

    store = TextStore()
    state = HookState()
    first = deliver(state, lacking(root("old line\n" * 500)), limit=10_000, texts=store)
    assert first.files == ("AGENTS.md",) and first.size == len(first.text) <= 10_000
    assert store.get(state.given["/ws/AGENTS.md"][1]) == "old line\n" * 500  # kept to diff a later change
    new = "".join(f"new line {i}\n" for i in range(1060))
    changed = deliver(state, lacking(root(new)), limit=10_000, texts=store)
    assert changed.parts == ("part 1 of 2 of AGENTS.md",) and changed.pending == ("/ws/AGENTS.md",)
    assert "--- Context from: AGENTS.md, part 1 of 2 (applies: always: project memory; changed on disk" in changed.text
    assert (
        changed.text.splitlines()[-1].startswith("Still to come with your next prompts") and len(changed.text) <= 10_000
    )
    sessions = HookSessions()
    sessions._by_key[("codex", "s")] = state
    sessions.texts = store
    kept = HookSessions.from_json(json.loads(json.dumps(sessions.to_json())))
    again = kept.get("codex", "s")
    assert again == state and again.parts == {"/ws/AGENTS.md": (state.parts["/ws/AGENTS.md"][0], 1)}
    second = deliver(again, lacking(root(new)), limit=10_000, texts=kept.texts)
    assert second.parts == ("part 2 of 2 of AGENTS.md",) and second.pending == () and second.files == ("AGENTS.md",)
    assert "new line 1059" in second.text and "new line 0\n" not in second.text
    assert "(part 2 of 2: the whole file is given) ---" in second.text and "Still to come" not in second.text
    assert deliver(again, lacking(root(new)), limit=10_000, texts=kept.texts).text == ""
    old = HookState.from_json({"given": {"/ws/AGENTS.md": ["AGENTS.md", "f1"]}, "started": True, "texts": {"f1": "x"}})
    assert (old.given, old.started, old.left, old.parts) == ({"/ws/AGENTS.md": ("AGENTS.md", "f1")}, True, {}, {})
    listed = HookSessions.from_json([["codex", "a", {"given": {"/p": ["p", "f"]}}]])  # the file's earlier shape
    assert listed.get("codex", "a").given == {"/p": ("p", "f")}


_COUNT_LISTINGS = """
import sys
seen = []
def audit(event, args):
    if event in ("os.scandir", "os.listdir") and args and isinstance(args[0], str):
        seen.append(args[0])
sys.addaudithook(audit)
from context_companion.cli import main
code = main(["hook", "--agent", "gemini-cli"])
root = sys.argv[1]
import json
sys.stderr.write("LISTED " + json.dumps(sorted(p for p in seen if p.startswith(root))) + "\\n")
sys.exit(code)
"""


def test_without_a_repository_the_disk_path_lists_the_folder_and_never_walks_below_it(
    tmp_path: Path, runtime: Path
) -> None:
    """No ``.git`` above the agent's folder: the disk path takes the folder as the project, looks up its
    memory and ignore files by name, lists only its rule folders, and walks nothing below (in /tmp or / a
    walk cost 2.7-7.5 s a prompt)."""
    folder = tmp_path / "scratch"
    for i in range(300):
        (folder / f"d{i:03d}" / "deeper").mkdir(parents=True)
        (folder / f"d{i:03d}" / "AGENTS.md").write_text(f"sub {i}\n")
    (folder / "AGENTS.md").write_text("Scratch root memory.\n")
    (folder / ".cursor" / "rules").mkdir(parents=True)
    (folder / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    out = subprocess.run(
        [sys.executable, "-c", _COUNT_LISTINGS, str(folder)],
        input=json.dumps(prompt("s", folder, "BeforeAgent")).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Scratch root memory." in text and "Always: be kind." in text and "sub 1" not in text
    listed = out.stderr.decode().split("LISTED ", 1)[1]
    directories = {Path(p) for p in json.loads(listed)}
    assert directories <= {folder / ".cursor" / "rules", folder / ".cursor"}, sorted(directories)[:10]
    # Started in a sub-folder (here its own project: no repository above it): still no walk.
    inner = folder / "d007"
    out = subprocess.run(
        [sys.executable, "-c", _COUNT_LISTINGS, str(folder)],
        input=json.dumps(prompt("s2", inner, "BeforeAgent")).encode(),
        capture_output=True,
        env=env,
        timeout=60,
    )
    listed = out.stderr.decode().split("LISTED ", 1)[1]
    directories = {Path(p) for p in json.loads(listed)}
    assert all(".cursor" in p.parts for p in directories), sorted(directories)


def test_the_state_lock_is_not_held_while_the_memory_is_composed(
    project: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks of other agents and projects share one state file: its lock is held to read it and to merge
    one session back, never while a hook composes (a hook in a small repository waited 13.8 s behind
    three agents composing in /tmp)."""
    import fcntl
    import io

    from context_companion.hooks import client as agent_hook
    from context_companion.workspace.companion import Companion

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    free: list[bool] = []
    compose = Companion.hook_outcome

    def watching(self: Companion, *args: Any, **kwargs: Any) -> Any:
        lock = runtime / "context-companion" / "hook-sessions.json.lock"
        with open(lock, "rb") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                free.append(True)
                fcntl.flock(fh, fcntl.LOCK_UN)
            except BlockingIOError:
                free.append(False)
        return compose(self, *args, **kwargs)

    monkeypatch.setattr(Companion, "hook_outcome", watching)
    stdout = io.StringIO()
    agent_hook.run(["--agent", "codex"], io.BytesIO(json.dumps(prompt("locks", project)).encode()), stdout)
    assert "Always: be kind." in stdout.getvalue()
    assert free and all(free)  # (composed twice: the second time to know the session is quiet)
    state = json.loads((runtime / "context-companion" / "hook-sessions.json").read_text())
    assert [s[:2] for s in state["sessions"]] == [["codex", "locks"]]  # merged back after the print


def test_warnings_of_the_composition_make_one_stderr_line(project: Path, runtime: Path) -> None:
    """Each ignore file cut at memory.maxIgnorePatterns is a warning: the hook says the first and counts
    the rest in one line, as documented (it wrote one line each)."""
    many = "".join(f"generated-{i}.tmp\n" for i in range(10_050))
    (project / ".gitignore").write_text(many)
    (project / ".context-companion-ignore").write_text(many)
    out = hook("gemini-cli", prompt("warned", project, "BeforeAgent"), runtime)
    assert "Always: be kind." in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("context-companion hook: warning: ") and lines[0].endswith("(and 1 more)")


def test_with_no_runtime_folder_it_can_trust_the_hook_falls_back_to_disk_and_keeps_state_elsewhere(
    project: Path, tmp_path: Path
) -> None:
    """``XDG_RUNTIME_DIR`` unset and the fallback folder (``<tmp>/runtime-<uid>``) made by another user
    first: no server can be found there (none could announce itself), so the memory comes from disk,
    and the sessions' state goes to the user's state folder (before, the hook printed nothing)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    hijacked = temp / f"runtime-{os.getuid()}"
    if os.getuid() == 0:
        hijacked.mkdir(mode=0o777)
        os.chown(hijacked, 65534, 65534)
    else:
        hijacked.symlink_to(tmp_path)  # not a directory of this user's either
    state = tmp_path / "state"
    env = {"TMPDIR": str(temp), "XDG_STATE_HOME": str(state), "XDG_RUNTIME_DIR": ""}
    first = run_hook("claude-code", json.dumps(prompt("s", project)).encode(), env)
    assert first.stderr == b"", first.stderr
    assert "Always: be kind." in json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
    kept = state / "context-companion" / "hook-sessions.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert list(hijacked.iterdir()) == []
    again = run_hook("claude-code", json.dumps(prompt("s", project)).encode(), env)
    assert (again.returncode, again.stdout, again.stderr) == (0, b"", b"")  # the state was kept


_COUNT_READS = """
import json, sys
opened, listed = [], []
def audit(event, args):
    if event == "open" and args and isinstance(args[0], str) and args[0].endswith(".mdc"):
        opened.append(args[0])
    elif event in ("os.scandir", "os.listdir") and args and isinstance(args[0], str) and "rules" in args[0]:
        listed.append(args[0])
sys.addaudithook(audit)
from context_companion.cli import main
code = main(["hook", "--agent", "claude-code"])
composed = "context_companion.memory" in sys.modules
sys.stderr.write("READ " + json.dumps({"opened": len(set(opened)), "listed": len(listed), "composed": composed}) + "\\n")
sys.exit(code)
"""


def _counted_hook(payload: dict[str, str], runtime: Path) -> tuple[str, dict[str, Any]]:
    """The hook's text (as Claude Code reads it, "" for nothing) and what it read: rule files opened (each file
    once), rule folders
    listed, whether it composed at all (imported the domain)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    out = subprocess.run(
        [sys.executable, "-c", _COUNT_READS],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=120,
    )
    head, _, read = out.stderr.decode().partition("READ ")
    assert out.returncode == 0 and head == "", out.stderr
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] if out.stdout else ""
    return text, json.loads(read)


def test_forty_thousand_rule_files_are_read_500_at_most_said_once_and_the_quiet_prompt_reads_none(
    tmp_path: Path, runtime: Path
) -> None:
    """A repository with 40,000 ``.cursor/rules/*.mdc`` made every prompt without an editor take 17-18 s, and with
    more than 20,000 paths no quiet record was kept: every prompt composed again. Now the first 500 rule files are
    read (the same ones every prompt), the rest named once; a prompt with nothing new reads no rule file at all."""
    import shutil

    project = tmp_path / "big"
    (project / ".git").mkdir(parents=True)
    rules = project / ".cursor" / "rules"
    rules.mkdir(parents=True)
    always = {i for i in range(40_000) if i % 50 == 0} | {499}  # r00499: the last one within the limit
    for i in range(40_000):
        if i in always:
            (rules / f"r{i:05d}.mdc").write_text(f"---\nalwaysApply: true\n---\nAlways rule {i}.\n")
        else:
            (rules / f"r{i:05d}.mdc").write_text(f"---\nglobs: src/m{i}/**\n---\nGlob rule {i}.\n")
    try:
        texts: list[str] = []
        reads: list[dict[str, Any]] = []
        for _ in range(30):  # a reading cut by the time budget (a loaded machine) goes on at the next prompt
            text, read = _counted_hook(prompt("s", project), runtime)
            texts.append(text)
            reads.append(read)
            if not read["composed"]:
                break
        assert texts[0].startswith("Context Companion:") and "Always rule 0.\n" in texts[0]
        assert all(read["opened"] <= 500 for read in reads), reads
        every = "\n".join(texts)
        note = (
            "Not read: 39,500 more rule files in .cursor/rules, over the limit of 500 rule files a prompt without an "
            "editor (open the project in an editor with Context Companion, or read them yourself when they matter)."
        )
        assert every.count(note) == 1 and note in texts[0]
        for i in sorted(always):
            assert every.count(f"Always rule {i}.\n") == (1 if i < 500 else 0), i
        # The quiet prompt: nothing new, nothing read, nothing of the domain imported.
        assert (texts[-1], reads[-1]) == ("", {"opened": 0, "listed": 0, "composed": False}), reads
        assert len(texts) >= 2

        # A new rule within the first 500 pushes r00499 over the limit: the new one comes, r00499 (given before,
        # not read now) is not taken back, and the count of what is not read changes, so it is said again.
        (rules / "r00000b.mdc").write_text("---\nalwaysApply: true\n---\nAlways rule new.\n")
        text, read = _counted_hook(prompt("s", project), runtime)
        assert "Always rule new." in text and "r00499" not in text and "no longer applies" not in text
        assert "Not read: 39,501 more rule files in .cursor/rules" in text
        assert read["opened"] <= 500
    finally:
        shutil.rmtree(rules)  # 40,000 files: not kept for pytest's last three runs


def test_a_reading_cut_by_the_time_budget_goes_on_at_the_next_prompts_and_loses_nothing(
    tmp_path: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the time budget spent before the first rule file (a loaded machine, a slow disk), each prompt still reads
    50 rule files, says once that the others come later, and the next prompt reads on where it stopped: every rule is
    delivered once, none is taken back, and the session is not taken as quiet until a whole reading was done."""
    import io

    from context_companion.hooks import client as agent_hook
    from context_companion.hooks import quiet as hook_quiet

    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    rules = project / ".cursor" / "rules"
    rules.mkdir(parents=True)
    for i in range(120):
        (rules / f"r{i:03d}.mdc").write_text(f"---\nalwaysApply: true\n---\nRule {i} applies.\n")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(agent_hook, "DISK_CPU_S", 0.0)

    def ask() -> str:
        stdout = io.StringIO()
        agent_hook.run(["--agent", "opencode"], io.BytesIO(json.dumps(prompt("cut", project)).encode()), stdout)
        return json.loads(stdout.getvalue())["hookSpecificOutput"]["additionalContext"] if stdout.getvalue() else ""

    texts = [ask() for _ in range(4)]
    every = "\n".join(texts)
    late = (
        "Not read in time: 70 rule files in .cursor/rules (the hook's time budget ran out); they are read on the "
        "next prompts."
    )
    assert late in texts[0] and every.count(late) == 1
    assert [sum(f"Rule {i} applies." in t for i in range(120)) for t in texts] == [50, 50, 20, 0]
    assert all(every.count(f"Rule {i} applies.\n") == 1 for i in range(120))
    assert "no longer applies" not in every
    quiet = runtime / "context-companion" / hook_quiet.FOLDER
    assert not any("cut" in p.read_text() for p in quiet.glob("*.json") if not p.name.endswith(".resume.json"))

    monkeypatch.setattr(agent_hook, "DISK_CPU_S", 1e9)  # time enough: one whole reading, and the session is quiet
    assert ask() == ""
    assert any('"cut"' in p.read_text() for p in quiet.glob("*.json") if not p.name.endswith(".resume.json"))
    assert ask() == ""


def test_qwen_md_reaches_the_agents_that_do_not_read_it_and_not_qwen_code(project: Path, runtime: Path) -> None:
    (project / "QWEN.md").write_text("Qwen notes: answer in short sentences.\n")
    for agent in ("claude-code", "codex", "copilot-cli", "opencode"):
        out = hook(agent, prompt(f"q-{agent}", project), runtime)
        assert out.returncode == 0 and b"Qwen notes: answer in short sentences." in out.stdout, (agent, out)
    qwen = hook("qwen-code", prompt("q-qwen", project), runtime)
    assert b"Qwen notes" not in qwen.stdout and b"Claude: small diffs." in qwen.stdout


@pytest.mark.parametrize("how", ["link", "copy"])
def test_a_qwen_md_linked_to_or_copied_from_agents_md_is_sent_once(project: Path, runtime: Path, how: str) -> None:
    if how == "link":
        (project / "QWEN.md").symlink_to("AGENTS.md")
    else:
        (project / "QWEN.md").write_text((project / "AGENTS.md").read_text())
    text = json.loads(hook("claude-code", prompt(how, project), runtime).stdout)["hookSpecificOutput"]
    assert text["additionalContext"].count("Run make check.") == 1
    assert hook("qwen-code", prompt(how, project), runtime).stdout.count(b"Run make check.") == 0  # it reads both


def test_copilot_cli_is_not_sent_what_claude_md_imports(project: Path, runtime: Path) -> None:
    """Copilot CLI 1.0.102 expands CLAUDE.md's imports itself (an <imported_custom_instruction>): CLAUDE.local.md
    imported by CLAUDE.md is not sent; without the import it is (Copilot CLI never reads CLAUDE.local.md)."""
    (project / "CLAUDE.local.md").write_text("Local: run the slow tests too.\n")
    plain = json.loads(hook("copilot-cli", prompt("c1", project), runtime).stdout)
    assert "Local: run the slow tests too." in plain["additionalContext"]
    (project / "CLAUDE.md").write_text("Claude: small diffs.\n@CLAUDE.local.md\n")
    imported = hook("copilot-cli", prompt("c2", project), runtime)
    assert b"Local: run the slow tests too." not in imported.stdout and b"be kind" in imported.stdout


def test_a_file_dropped_from_memory_file_names_is_taken_back_with_that_reason(project: Path, runtime: Path) -> None:
    first = json.loads(hook("codex", prompt("s", project), runtime).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Claude: small diffs." in first
    (project / ".context-companion.toml").write_text('[memory]\nfileNames = ["AGENTS.md"]\n')
    again = json.loads(hook("codex", prompt("s", project), runtime).stdout)["hookSpecificOutput"]["additionalContext"]
    assert (
        "CLAUDE.md no longer applies (no longer a memory file name in the settings (memory.fileNames)): "
        "disregard what it said." in again
    )
    assert "no longer exists" not in again
    (project / ".context-companion.toml").write_text('[memory]\nsources = ["agents", "cursor"]\n')
    (project / "CLAUDE.md").unlink()
    assert b"CLAUDE.md" not in hook("codex", prompt("s2", project), runtime).stdout  # never given: nothing to say
    (project / "QWEN.md").write_text("Qwen.\n")
    given = hook("codex", prompt("s3", project), runtime).stdout
    assert b"Qwen." not in given  # the qwen family is off
    (project / ".cursor" / "rules" / "all.mdc").unlink()
    gone = hook("codex", prompt("s", project), runtime).stdout.decode()
    assert ".cursor/rules/all.mdc no longer applies (the file no longer exists)" in gone


def test_gemini_hook_sends_project_memory_to_a_gemini_that_does_not_trust_the_folder(
    project: Path, runtime: Path, tmp_path: Path
) -> None:
    """Gemini CLI 0.61 with folder trust on reads neither an untrusted folder's settings nor its GEMINI.md: the
    hook (run from the user's settings) sends them; once the folder is trusted it does not."""
    (project / "GEMINI.md").write_text("Gemini: prefer small modules.\n")
    env = {"XDG_RUNTIME_DIR": str(runtime), "GEMINI_CLI_TRUST_WORKSPACE": ""}
    untrusted = run_hook("gemini-cli", json.dumps(prompt("u", project, "BeforeAgent")).encode(), env)
    assert b"Gemini: prefer small modules." in untrusted.stdout
    (tmp_path / "home" / ".gemini").mkdir(parents=True, exist_ok=True)
    (tmp_path / "home" / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    trusted = run_hook("gemini-cli", json.dumps(prompt("t", project, "BeforeAgent")).encode(), env)
    assert b"Gemini: prefer small modules." not in trusted.stdout and b"Run make check." in trusted.stdout


def test_qwen_rules_and_local_memory_go_to_the_other_agents_only(project: Path, runtime: Path) -> None:
    (project / ".qwen" / "rules").mkdir(parents=True)
    (project / ".qwen" / "rules" / "always.md").write_text("Qwen rule: write tests first.\n")
    (project / ".qwen" / "QWEN.local.md").write_text("Qwen local: staging is read-only.\n")
    claude = hook("claude-code", prompt("r1", project), runtime).stdout
    assert b"Qwen rule: write tests first." in claude and b"Qwen local: staging is read-only." in claude
    qwen = hook("qwen-code", prompt("r2", project), runtime).stdout
    assert b"Qwen rule" not in qwen and b"Qwen local" not in qwen and b"Claude: small diffs." in qwen
