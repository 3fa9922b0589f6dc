"""The memory GitHub Copilot CLI, OpenCode and Qwen Code do not read themselves reaches each through its own way
in (issue 35): Copilot CLI's ``userPromptSubmitted`` hook, OpenCode's plugin, Qwen Code's ``UserPromptSubmit``
hook, each set up only by ``context-companion setup --agent X`` (for Copilot CLI also ``--agent claude-code``:
Copilot CLI runs Claude Code's project hooks too, and must still get each text once). The real agents, installed
from the npm registry at the measured versions (``next_agents.py``), run one session of several turns against
the recording model stub, with an editor's server running (Neovim with our plugin, ``editor_terminal.py``) that
holds the open files: ``src/app.py`` active, an excluded ``.env`` open beside it.

The workspace carries one marker word per file: a root ``AGENTS.md`` (all three read it themselves), a
``CLAUDE.md`` (Copilot CLI reads it; OpenCode, beside an ``AGENTS.md``, and Qwen Code do not), a ``.cursor/rules``
glob rule and a ``.github/instructions`` ``applyTo`` rule matching the active file (none reads them; Copilot CLI
only lists the second), ``src/AGENTS.md`` (the active file's folder; none reads it at start).

1. first prompt: every text that applies is in the request exactly once, read by the agent or delivered by us,
   and nothing the agent reads itself comes from us;
2. nothing changed: the hooks add nothing;
3. after ``src/AGENTS.md`` is edited: the new text in this turn's hook context, once;
4. after the cursor rule is deleted: one line saying it no longer applies, not its text.

Through turns 1-4 the agent's system message (its cached prefix) is byte-identical. The ``.env`` secret never
reaches a request. (Each agent reads the files it reads itself again when a new process resumes the session, so
the edits here are of files none of them reads; an edit of those is its own business.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from editor_terminal import EditorTerminal
from model_stub import ModelStub, Recorded, common_prefix
from next_agents import NextAgent, agents
from nvim_harness import ACTIVE_FILE_LUA, lua_str
from test_agent_memory_hooks import context_companion, make_workspace

SECRET = "sk-stub-never-in-a-request-3571"
ROOT = "ROOT-MEMORY-NEXT"
CLAUDE_OWN = "CLAUDE-OWN-NEXT"
CURSOR_RULE = "CURSOR-RULE-NEXT"
COPILOT_RULE = "COPILOT-RULE-NEXT"
SRC_V1, SRC_V2 = "SRC-MEMORY-ONE", "SRC-MEMORY-TWO"
MARKERS = (ROOT, CLAUDE_OWN, CURSOR_RULE, COPILOT_RULE, SRC_V1, SRC_V2)
CURSOR_PATH = ".cursor/rules/python-style.mdc"

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    "CLAUDE.md": f"# Working here\n\n{CLAUDE_OWN}: changelog entries are written in the imperative.\n",
    CURSOR_PATH: (
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
        f"{CURSOR_RULE}: every function has type hints.\n"
    ),
    ".github/instructions/python.instructions.md": (
        f'---\napplyTo: "src/**/*.py"\n---\n\n{COPILOT_RULE}: docstrings say what, not how.\n'
    ),
    "src/AGENTS.md": f"# src\n\n{SRC_V1}: src holds the application code.\n",
    "src/app.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
    ".env": f"API_KEY={SECRET}\n",
    ".gitignore": ".env\n",
}
# What each agent reads itself (never from us), as measured (docs/agents.md).
READS_ITSELF = {"copilot-cli": {ROOT, CLAUDE_OWN}, "opencode": {ROOT}, "qwen-code": {ROOT}}
NO_LONGER = re.compile(r"no longer appl", re.I)


@dataclass
class Run:
    agent: NextAgent
    editor: EditorTerminal
    stub: ModelStub
    env: dict[str, str]
    turns: list[tuple[str, Recorded, str]] = field(default_factory=list)

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        """One more turn of the session; its main request and the text the hooks added to it."""
        after = self.stub.next_seq
        self.agent.run(prompt, self.editor.workspace, self.env)
        try:
            rec = self.stub.wait_for(lambda r: self.agent.is_turn(r, prompt), timeout=30, after=after)
        except TimeoutError as exc:
            sent = [f"{r.seq} {r.path}: …{r.text[-800:]}" for r in self.stub.requests[after:]]
            raise AssertionError(f"turn {label}: {exc}\n" + "\n".join(sent)) from None
        hooked = "\n".join(self.agent.hook_texts(rec, prompt))
        self.turns.append((label, rec, hooked))
        return rec, hooked

    def wait_memory(self, holds: Any, what: str, timeout: float = 30) -> None:
        self.editor.wait_memory(holds, what, timeout)


@pytest.fixture(params=sorted(agents()))
def run(request: pytest.FixtureRequest, tmp_path: Path, model_stub: ModelStub) -> Iterator[Run]:
    agent = agents()[request.param]()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    agent.seed(home, ws, model_stub)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path})
    env = {**editor.env, **agent.env(model_stub, ws)}
    try:
        yield Run(agent, editor, model_stub, env)
    finally:
        editor.stop()


def set_up(run: Run) -> None:
    """The user's setup, then the editor with src/app.py active and the excluded .env open."""
    ws = run.editor.workspace
    names = [run.agent.name, "claude-code"] if run.agent.name == "copilot-cli" else [run.agent.name]
    for name in names:
        done = subprocess.run(
            [context_companion(run.env), "setup", "--agent", name, "--workspace", str(ws)],
            env=run.env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"setup --agent {name} failed: {done.stderr}"
    run.editor.start(["src/app.py", ".env"])
    active = str(ws / "src" / "app.py")
    run.editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(active)}", "src/app.py active")


def counts(rec: Recorded) -> dict[str, int]:
    return {marker: rec.text.count(marker) for marker in MARKERS}


def assert_once(label: str, rec: Recorded, applies: set[str], seen: set[str]) -> None:
    found = counts(rec)
    for marker, n in found.items():
        if marker in applies:
            assert n == 1, f"turn {label}: {marker} is in the request {n} times, not once: {found}"
        elif marker in seen:
            assert n <= 1, f"turn {label}: {marker} is in the request {n} times: {found}"
        else:
            assert n == 0, f"turn {label}: {marker} does not apply, yet is in the request {n} times: {found}"


def test_the_next_agents_get_what_they_lack_once_live_and_with_their_prefix_kept(run: Run, agent_figures: Any) -> None:
    agent, stub, ws = run.agent, run.stub, run.editor.workspace
    set_up(run)
    base = {ROOT, CLAUDE_OWN, CURSOR_RULE, COPILOT_RULE, SRC_V1}
    seen = set(base)

    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, seen)
    own = [m for m in READS_ITSELF[agent.name] if m in hooked]
    assert not own, f"we sent what {agent.name} reads itself: {own}\n{hooked}"
    lacking = base - READS_ITSELF[agent.name]
    assert all(m in hooked for m in lacking), f"turn 1: not every missing text came from the hook:\n{hooked}"

    second, hooked = run.turn("2", "Turn two: anything else to know.")
    assert hooked == "", f"turn 2: nothing changed, yet the hooks added:\n{hooked}"
    assert_once("2", second, base, seen)

    (ws / "src" / "AGENTS.md").write_text(f"# src\n\n{SRC_V2}: src holds the application code.\n", encoding="utf-8")
    run.wait_memory(lambda r: SRC_V2 in str(r), "the edited src/AGENTS.md")
    applies = (base - {SRC_V1}) | {SRC_V2}
    seen |= applies
    third, hooked = run.turn("3", "Turn three: tell me what changed.")
    assert SRC_V2 in hooked, f"turn 3: the edit of src/AGENTS.md is not in the hook context:\n{hooked}"
    assert_once("3", third, applies, seen)

    (ws / CURSOR_PATH).unlink()
    run.wait_memory(lambda r: CURSOR_PATH not in str(r.get("files")), f"{CURSOR_PATH} gone")
    applies -= {CURSOR_RULE}
    fourth, hooked = run.turn("4", "Turn four: and now, what changed.")
    lines = [line for line in hooked.splitlines() if CURSOR_PATH in line]
    assert len(lines) == 1 and NO_LONGER.search(lines[0]), f"turn 4: want one line for {CURSOR_PATH}:\n{hooked}"
    assert CURSOR_RULE not in hooked
    assert_once("4", fourth, applies, seen)

    systems = [agent.system_part(rec) for _label, rec, _hooked in run.turns]
    same = min(common_prefix(systems[0], s) for s in systems)
    for rec in stub.requests:
        assert SECRET not in rec.text, f"the .env secret is in {rec.method} {rec.path} (request {rec.seq})"
    for label, _rec, text in run.turns:
        assert ".env" not in text, f"turn {label}: the hook context names the excluded .env:\n{text}"

    agent_figures(agent.name, "version", agent.version())
    agent_figures(
        agent.name,
        "identical system part, turns 1-4",
        f"{100 * same / max(len(systems[0]), 1):.1f}% of {len(systems[0])} B",
    )
    agent_figures(agent.name, "hook context per turn (chars)", ", ".join(f"{t}: {len(h)}" for t, _r, h in run.turns))
    assert all(s == systems[0] for s in systems), f"the system part changed: {same} of {len(systems[0])} bytes same"


@pytest.fixture
def copilot_run(tmp_path: Path, model_stub: ModelStub) -> Iterator[Run]:
    agent = agents()["copilot-cli"]()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    agent.seed(home, ws, model_stub)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path})
    try:
        yield Run(agent, editor, model_stub, {**editor.env, **agent.env(model_stub, ws)})
    finally:
        editor.stop()


def test_copilot_cli_in_a_project_set_up_only_for_claude_code_gets_the_memory_in_its_own_shape(
    copilot_run: Run,
) -> None:
    """Copilot CLI runs `.claude/settings.local.json`'s hook (what `setup --agent claude-code` writes) and reads
    only a top-level additionalContext: the Claude Code hook tells it is run by Copilot CLI and answers so."""
    run, ws = copilot_run, copilot_run.editor.workspace
    done = subprocess.run(
        [context_companion(run.env), "setup", "--agent", "claude-code", "--workspace", str(ws)],
        env=run.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    run.editor.start(["src/app.py"])
    base = {ROOT, CLAUDE_OWN, CURSOR_RULE, COPILOT_RULE, SRC_V1}
    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, base)
    assert {CURSOR_RULE, COPILOT_RULE, SRC_V1} <= {m for m in MARKERS if m in hooked}, hooked
    assert not {ROOT, CLAUDE_OWN} & {m for m in MARKERS if m in hooked}, hooked
    second, hooked = run.turn("2", "Turn two: anything else to know.")
    assert hooked == "" and counts(second) == counts(first)


def _big(marker: str, size: int = 20_000) -> str:
    """A memory file of ``size`` characters with ``marker`` in its first and (``-END``) last line."""
    text = f"# {marker}\n\n{marker}: the first rule.\n\n"
    i = 0
    while len(text) < size:
        text += f"## Rule {i}\n\nKeep each change small and say why in the commit message ({marker.lower()} {i}).\n\n"
        i += 1
    return text + f"{marker}-END: the last rule.\n"


BIG_ROOT, BIG_SRC = "BIG-ROOT-MEMORY", "BIG-SRC-MEMORY"
ROOT_EDIT, SRC_EDIT = "ROOT-EDIT-LINE", "SRC-EDIT-LINE"
BIG = {
    "AGENTS.md": _big(BIG_ROOT),
    "src/AGENTS.md": _big(BIG_SRC),
    "src/app.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
}


@pytest.fixture(params=sorted(agents()))
def big_run(request: pytest.FixtureRequest, tmp_path: Path, model_stub: ModelStub) -> Iterator[Run]:
    agent = agents()[request.param]()
    agent.install()
    ws = make_workspace(tmp_path / "project", BIG)
    home = (tmp_path / "home").resolve()
    agent.seed(home, ws, model_stub)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path})
    try:
        yield Run(agent, editor, model_stub, {**editor.env, **agent.env(model_stub, ws)})
    finally:
        editor.stop()


def test_big_memory_edited_by_one_line_arrives_once_as_its_change(big_run: Run, agent_figures: Any) -> None:
    """Issue 39.1 and 39.3, one process per turn (``-p`` sessions): a 20,000-character root ``AGENTS.md`` the
    agent reads itself in every new process, and a 20,000-character ``src/AGENTS.md`` (the active file's folder)
    it never reads. Each gets one line appended: the root's edit is in the request once (the agent's own fresh
    copy; the hook sends nothing of it), the sub-folder's arrives as its change, under 2,000 characters."""
    run, ws = big_run, big_run.editor.workspace
    set_up(run)
    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert BIG_SRC in hooked and f"{BIG_SRC}-END" in hooked and BIG_ROOT not in hooked, hooked[-2000:]
    assert first.text.count(f"{BIG_ROOT}-END") == 1 and first.text.count(f"{BIG_SRC}-END") == 1
    _second, quiet = run.turn("2", "Turn two: anything else to know.")
    assert quiet == "", f"turn 2: nothing changed, yet the hooks added:\n{quiet[:2000]}"

    for name, line in (("AGENTS.md", ROOT_EDIT), ("src/AGENTS.md", SRC_EDIT)):
        with (ws / name).open("a", encoding="utf-8") as fh:
            fh.write(f"{line}: one more rule.\n")
    run.wait_memory(lambda r: ROOT_EDIT in str(r) and SRC_EDIT in str(r), "both edits")
    third, edited = run.turn("3", "Turn three: tell me what changed.")
    assert SRC_EDIT in edited and len(edited) < 2_000, f"turn 3: want the change only:\n{edited[:3000]}"
    assert ROOT_EDIT not in edited, f"turn 3: {run.agent.name} read AGENTS.md afresh, yet the hook sent it:\n{edited}"
    assert third.text.count(ROOT_EDIT) == 1 and third.text.count(SRC_EDIT) == 1, (
        third.text.count(ROOT_EDIT),
        third.text.count(SRC_EDIT),
    )
    fourth, after = run.turn("4", "Turn four: and now.")
    assert after == "" and fourth.text.count(ROOT_EDIT) == 1 and fourth.text.count(SRC_EDIT) == 1
    agent_figures(
        run.agent.name,
        "big memory: hook chars per turn",
        f"turn 1: {len(hooked)}, quiet: {len(quiet)}, after edit: {len(edited)}, quiet: {len(after)}",
    )
