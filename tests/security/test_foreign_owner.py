"""A neighbour's folder is not your project (docs/reliability.md, "Threat model"): another local user who
runs ``mkdir /tmp/.git`` and writes ``/tmp/AGENTS.md`` and ``/tmp/.cursor/rules/x.mdc`` must not speak to
the agents this user starts in ``/tmp/work``. Shown through what the user touches: the ``memory`` and
``explain`` commands, the ``hook`` command as an agent runs it, the ``instruction`` command (the language
server's instruction: tests/lsp/test_another_users_folder.py). The files are planted below the test's own folder
(its ``shared`` plays ``/tmp``) and handed to an unused uid: root may ``chown`` to any uid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hook_runner import run_hook
from planted import PLANTED, STRANGER, plant

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="handing files to another uid (chown) needs root"
)


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """``/tmp`` as another user left it (the folder itself is root's, as ``/tmp`` is)."""
    folder = tmp_path / "shared"
    plant(folder, STRANGER)
    return folder


@pytest.fixture
def work(shared: Path) -> Path:
    """The victim's folder below it, with no ``.git`` of its own."""
    ws = shared / "work"
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Mine: run make check.\n")
    (ws / ".cursor" / "rules" / "mine.mdc").write_text("---\nalwaysApply: true\n---\nMine: be kind.\n")
    return ws


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args], capture_output=True, text=True, env=full, timeout=60
    )


def test_memory_takes_no_root_of_another_user_and_says_so(shared: Path, work: Path) -> None:
    out = cli("memory", "--workspace", str(work))
    assert out.returncode == 0, out.stderr
    assert PLANTED not in out.stdout and "../AGENTS.md" not in out.stdout
    assert "+ AGENTS.md" in out.stdout and "+ .cursor/rules/mine.mdc" in out.stdout
    assert (
        f"! skipped {shared / '.git'}: owned by another user (uid {STRANGER}); {shared} is not taken as the "
        "project root\n"
    ) in out.stdout
    data = json.loads(cli("memory", "--workspace", str(work), "--json").stdout)
    assert [f["path"] for f in data["files"]] == ["AGENTS.md", ".cursor/rules/mine.mdc"]
    assert any(w.startswith(f"skipped {shared / '.git'}: owned by another user") for w in data["warnings"])


def test_instruction_holds_none_of_it(shared: Path, work: Path) -> None:
    out = cli("instruction", "--workspace", str(work), "--json")
    text = json.loads(out.stdout)["text"]
    assert "Mine: run make check." in text and "Mine: be kind." in text
    assert PLANTED not in text and "owned by another user" not in text


def test_explain_says_what_was_skipped_and_why(shared: Path, work: Path) -> None:
    out = cli("explain", "--agent", "codex", "--workspace", str(work))
    assert out.returncode == 0, out.stderr
    assert f"! skipped {shared / '.git'}: owned by another user (uid {STRANGER})" in out.stdout
    assert "+ AGENTS.md" in out.stdout and "../AGENTS.md" not in out.stdout
    wire = json.loads(cli("explain", "--agent", "claude-code", "--workspace", str(work), "--json").stdout)
    assert wire["skipped"] == [
        f"skipped {shared / '.git'}: owned by another user (uid {STRANGER}); {shared} is not taken as the project root"
    ]
    # Claude Code itself reads CLAUDE.md in every folder above, up to /: explain says so, and whose it is.
    above = [f for f in wire["files"] if f["trigger"] == "above-root"]
    assert [f["path"] for f in above] == [str(shared / "CLAUDE.md")]
    assert f"owned by another user (uid {STRANGER}), and our instruction leaves it out" in above[0]["why"]


def test_the_hook_delivers_none_of_it_and_never_says_why(shared: Path, work: Path, runtime: Path) -> None:
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(work), "prompt": "hi"}
    for agent in ("claude-code", "codex", "gemini-cli"):
        raw = dict(payload, hook_event_name="BeforeAgent") if agent == "gemini-cli" else payload
        out = run_hook(agent, json.dumps(raw).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
        assert out.returncode == 0, out.stderr
        text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "Mine: be kind." in text, agent
        assert PLANTED not in text and "owned by another user" not in text and "uid" not in text, agent
        assert PLANTED.encode() not in out.stderr


def test_files_of_another_user_below_a_root_of_ours_are_no_memory(tmp_path: Path, runtime: Path) -> None:
    """The root is this user's (or root's): a memory file, a rule and an import target in it that another
    user owns are skipped, each said on its row."""
    repo = tmp_path / "repo"
    plant(repo, STRANGER, marker=False)
    (repo / ".git").mkdir()  # ours (root's: the tests run as root, and root is trusted like git trusts it)
    (repo / "shared.md").write_text(f"{PLANTED}: imported\n")
    os.chown(repo / "shared.md", STRANGER, STRANGER)
    ws = repo / "app"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Mine.\n@../shared.md\n")
    out = cli("memory", "--workspace", str(ws))
    assert PLANTED not in out.stdout
    assert f"- ../AGENTS.md  workspace      0 tokens  skipped: owned by another user (uid {STRANGER})" in out.stdout
    assert "+ AGENTS.md" in out.stdout
    assert f"import ../shared.md failed: owned by another user (uid {STRANGER})" in out.stdout
    rules = cli("memory", "--workspace", str(repo))
    assert (
        "- .cursor/rules/x.mdc" in rules.stdout and f"skipped: owned by another user (uid {STRANGER})" in rules.stdout
    )
    text = json.loads(cli("instruction", "--workspace", str(ws), "--json").stdout)["text"]
    assert "Mine." in text and PLANTED not in text and "@../shared.md" in text  # the import left as written
    # The hook: the project is the repository; none of the other user's files reach the agent.
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": str(ws), "prompt": "hi"}
    hooked = run_hook("codex", json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
    assert PLANTED.encode() not in hooked.stdout and b"owned by another user" not in hooked.stdout


def test_root_owned_files_are_taken(tmp_path: Path) -> None:
    """Root is trusted (as git trusts it): a root-owned root and memory above the folder are the project."""
    repo = tmp_path / "sys"
    plant(repo, uid=0)
    ws = repo / "work"
    ws.mkdir()
    out = cli("memory", "--workspace", str(ws))
    assert "+ ../AGENTS.md" in out.stdout and "skipped" not in out.stdout


def test_a_file_handed_to_another_user_is_dropped_at_the_next_look(tmp_path: Path) -> None:
    """The read cache knows the owner: ``chown`` alone (no new bytes, same mtime) changes the verdict."""
    from context_companion.workspace.companion import Companion

    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Mine for now.\n")
    store = Companion.open([ws]).memory
    assert "Mine for now." in store.compose([]).text
    os.chown(ws / "AGENTS.md", STRANGER, STRANGER)
    store.apply_changes([ws / "AGENTS.md"])  # what the watcher does on the attribute change
    result = store.compose([])
    assert "Mine for now." not in result.text
    assert f"AGENTS.md: skipped: owned by another user (uid {STRANGER})" in result.warnings


def test_gemini_discovery_folder_of_another_user_is_said_once_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Another user made ``<temp dir>/gemini`` first: our discovery file cannot be written there (and Gemini
    CLI would ignore it). The log says so once, with the fix; ``explain --agent gemini-cli`` says it too."""
    from context_companion.bridges.gemini.companion import GeminiCompanion
    from context_companion.bridges.gemini.discovery import IdeInfo
    from context_companion.workspace.companion import Companion

    temp = tmp_path / "tmp"
    (temp / "gemini").mkdir(parents=True)
    os.chown(temp / "gemini", STRANGER, STRANGER)
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    gemini = GeminiCompanion(
        Companion.open([ws]),
        {},
        object(),
        ide_pid=os.getpid(),
        ide=IdeInfo("neovim", "Neovim"),  # type: ignore[arg-type]
        directory=temp / "gemini" / "ide",
    )
    with caplog.at_level("WARNING"):
        for _ in range(3):  # start, then two changes of the workspace folders
            gemini._write_discovery()
    said = [r.getMessage() for r in caplog.records if "Gemini CLI" in r.getMessage()]
    assert said == [
        f"Gemini CLI's discovery file is off: {temp / 'gemini'} is owned by another user (uid {STRANGER}); a gemini "
        f"started outside the editor's terminal will not find this editor (remove {temp / 'gemini'} as its owner or "
        "root, or set TMPDIR to a folder of your own for both the editor and gemini)"
    ]
    out = cli("explain", "--agent", "gemini-cli", "--workspace", str(ws), env={"TMPDIR": str(temp)})
    assert f"! {said[0]}\n" in out.stdout
    assert (
        "discovery file is off"
        not in cli("explain", "--agent", "codex", "--workspace", str(ws), env={"TMPDIR": str(temp)}).stdout
    )
