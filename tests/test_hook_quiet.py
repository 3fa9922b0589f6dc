"""The hook without an editor on a quiet prompt: answered from the record of what the last composition read
(``hooks/quiet.py``), without importing the domain, and never quiet when anything that composition depended on
moved. Each change below is one a user makes while an agent works; each must reach the next prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("pydantic", "tiktoken", "watchdog", "lsprotocol", "pygls", "yaml", "context_companion.workspace")
_RUN_AND_LIST_MODULES = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
from context_companion.cli import main
sys.exit(main())
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Run make check.\n")
    (ws / "CLAUDE.md").write_text("Claude: small diffs.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    (ws / "src").mkdir()
    return ws


class Hook:
    def __init__(self, runtime: Path, project: Path, agent: str = "claude-code") -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
        self.env["XDG_RUNTIME_DIR"] = str(runtime)
        self.project = project
        self.agent = agent

    def __call__(self, session: str = "s1", event: str = "UserPromptSubmit", **extra: str) -> tuple[str, bool]:
        """The additionalContext printed ('' for nothing), and whether the domain was imported."""
        payload = {"hook_event_name": event, "session_id": session, "cwd": str(self.project), **extra}
        out = subprocess.run(
            [sys.executable, "-c", _RUN_AND_LIST_MODULES, "hook", "--agent", self.agent],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=self.env,
            timeout=60,
        )
        err = out.stderr.decode()
        modules = json.loads(err.split("MODULES ", 1)[1])
        assert err.split("MODULES ", 1)[0] == "", err
        composed = any(m.split(".")[0] in HEAVY or m.startswith(HEAVY) for m in modules)
        text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] if out.stdout else ""
        return text, composed


def test_a_quiet_prompt_is_answered_without_composing(runtime: Path, project: Path) -> None:
    hook = Hook(runtime, project)
    first, composed = hook()
    assert "Always: be kind." in first and composed
    for _ in range(2):
        assert hook() == ("", False)  # nothing new, and none of the domain's libraries loaded
    # A file created where the agent works, that no memory depends on, keeps it quiet.
    (project / "src" / "new_module.py").write_text("x = 1\n")
    (project / "notes.txt").write_text("scratch\n")
    assert hook() == ("", False)
    # Another session has had nothing yet: composed, delivered.
    other, composed = hook("s2")
    assert "Always: be kind." in other and composed


def _edit_same_size_and_mtime(path: Path, text: str) -> None:
    st = path.stat()
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # an editor that keeps the time: the change time moves


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ("edit a rule, same size, same mtime", "Always: be calm."),
        ("add a rule", "Also: write tests."),
        ("delete a rule", "no longer"),
        ("add AGENTS.md's import", "Imported guidance."),
        ("replace CLAUDE.md by a link", "Run make check."),
        ("a setting in the project", "AGENTS.md no longer applies"),
        ("an environment variable", None),
    ],
)
def test_every_change_a_composition_depended_on_reaches_the_next_prompt(
    runtime: Path, project: Path, change: str, expect: str | None
) -> None:
    agents = {"replace CLAUDE.md by a link": "codex", "add AGENTS.md's import": "gemini-cli"}
    hook = Hook(runtime, project, agent=agents.get(change, "claude-code"))
    event = "BeforeAgent" if hook.agent == "gemini-cli" else "UserPromptSubmit"
    hook(event=event)
    assert hook(event=event) == ("", False)
    rules = project / ".cursor" / "rules"
    if change == "edit a rule, same size, same mtime":
        _edit_same_size_and_mtime(rules / "all.mdc", "---\nalwaysApply: true\n---\nAlways: be calm.\n")
    elif change == "add a rule":
        (rules / "tests.mdc").write_text("---\nalwaysApply: true\n---\nAlso: write tests.\n")
    elif change == "delete a rule":
        (rules / "all.mdc").unlink()
    elif change == "add AGENTS.md's import":
        (project / "docs").mkdir()
        (project / "docs" / "guide.md").write_text("Imported guidance.\n")
        (project / "AGENTS.md").write_text("Run make check.\n@docs/guide.md\n")  # Gemini CLI does not read AGENTS.md
    elif change == "replace CLAUDE.md by a link":
        # Codex reads AGENTS.md itself, never CLAUDE.md; CLAUDE.md becoming a link to AGENTS.md is one file now.
        (project / "CLAUDE.md").unlink()
        (project / "CLAUDE.md").symlink_to("AGENTS.md")
    elif change == "a setting in the project":
        (project / ".context-companion.toml").write_text('[memory]\nfileNames = ["CLAUDE.md"]\n')
    else:
        hook.env["CONTEXT_COMPANION_MEMORY__IMPORT_MAX_DEPTH"] = "2"
    text, composed = hook(event="BeforeAgent" if hook.agent == "gemini-cli" else "UserPromptSubmit")
    assert composed, f"{change}: answered from the record"
    if expect is not None and change != "replace CLAUDE.md by a link":
        assert expect in text, text
    assert hook(event=event)[1] is False  # quiet again at the new record


def test_a_new_conversation_gets_everything_again(runtime: Path, project: Path) -> None:
    hook = Hook(runtime, project)
    hook()
    assert hook() == ("", False)
    assert hook(event="SessionStart", source="clear")[0] == ""
    again, composed = hook()
    assert "Always: be kind." in again and composed
