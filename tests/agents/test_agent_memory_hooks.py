"""Memory an agent does not read itself reaches it through its own hooks: once, live, never twice,
with its cached system part untouched (issue 28). Run for the real Claude Code, Gemini CLI and Codex
CLI (``agent_cli.py``), each in a Neovim ``:terminal`` beside our server (the Neovim plugin holds the
editor's open and active files), each set up only by ``context-companion setup --agent X``; Codex's
"Hooks need review" question is answered in its TUI, as a user does.

The workspace has every kind of memory the issue names, each file carrying one marker word so the
recorded requests can be counted: a root ``AGENTS.md``; a ``CLAUDE.md`` that does not import it (Claude
Code reads and tracks it itself, the others never read it); a ``.cursor/rules`` glob rule and a
``.github/instructions`` ``applyTo`` rule, both matching the active file ``src/app.py``; ``src/AGENTS.md``
(the active file's folder); ``lib/AGENTS.md`` (applies once the active file moves there); an excluded
``.env`` open in the editor, whose secret must never reach a request.

One agent process, six turns:

1. first prompt: every file that applies is in the request exactly once, read by the agent or
   delivered by us (Claude's own CLAUDE.md never by us);
2. nothing changed: the hook adds nothing;
3. after an ``AGENTS.md`` edit: the new text, in this turn's hook context;
4. after the cursor rule was deleted: one line saying it no longer applies, not its text;
5. after the active file moved from ``src/`` to ``lib/``: ``lib/AGENTS.md``'s text, and nothing taken back
   (``src/AGENTS.md`` and the ``applyTo`` rule stopped applying to the open files, not in their own text:
   the agent may still be working on ``src/``);
6. a new conversation (``/clear``; Codex ``/new``): everything that applies, once again.

Through turns 1-5 the agent's system part (its prompt-cache prefix) stays byte-identical.

A second workspace (issue 33) has a ``CLAUDE.md`` that is a link to a large root ``AGENTS.md`` (~7,000
characters), each rule kept in ``.cursor/rules`` and ``.claude/rules`` with the same text, and an editor
open: on the first turn every applicable text is in the request once, none that the agent reads itself
comes from us, and nothing is cut by the agent (the root memory's last line is there).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_cli import AGENTS, Agent
from editor_terminal import EditorTerminal
from model_stub import ModelStub, Recorded, common_prefix
from nvim_harness import ACTIVE_FILE_LUA, lua_str

SECRET = "sk-stub-never-in-a-request-7311"
APP = 'def greet(name: str) -> str:\n    return f"hello {name}"\n'

ROOT_V1, ROOT_V2 = "ROOT-MEMORY-ONE", "ROOT-MEMORY-TWO"
CLAUDE_OWN = "CLAUDE-OWN-MEMORY"
CURSOR_RULE = "CURSOR-RULE-MEMORY"
COPILOT_RULE = "COPILOT-RULE-MEMORY"
SRC_MEMORY = "SRC-FOLDER-MEMORY"
LIB_MEMORY = "LIB-FOLDER-MEMORY"
MARKERS = (ROOT_V1, ROOT_V2, CLAUDE_OWN, CURSOR_RULE, COPILOT_RULE, SRC_MEMORY, LIB_MEMORY)

CURSOR_PATH = ".cursor/rules/python-style.mdc"
COPILOT_PATH = ".github/instructions/python.instructions.md"

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT_V1}: otters review every pull request.\n",
    "CLAUDE.md": f"# Working here\n\n{CLAUDE_OWN}: changelog entries are written in the imperative.\n",
    CURSOR_PATH: (
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
        f"{CURSOR_RULE}: every function has type hints.\n"
    ),
    COPILOT_PATH: f'---\napplyTo: "src/**/*.py"\n---\n\n{COPILOT_RULE}: docstrings say what, not how.\n',
    "src/AGENTS.md": f"# src\n\n{SRC_MEMORY}: src holds the application code.\n",
    "src/app.py": APP,
    "lib/AGENTS.md": f"# lib\n\n{LIB_MEMORY}: lib never imports from src.\n",
    ".env": f"API_KEY={SECRET}\n",
    ".gitignore": ".env\n",
}

NO_LONGER = re.compile(r"no longer appl", re.I)


def make_workspace(root: Path, files: dict[str, str] = WORKSPACE) -> Path:
    ws = root.resolve()
    for name, text in files.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(ws)], check=True, capture_output=True)
    return ws


def context_companion(env: dict[str, str]) -> str:
    """The ``context-companion`` a user of this checkout runs: the one beside this Python first."""
    found = shutil.which("context-companion", path=env["PATH"])
    if found is None:
        pytest.fail("context-companion is not on PATH: python -m pip install -e '.[dev]'", pytrace=False)
    return found


@dataclass
class Session:
    """One agent in one editor, and what the test saw of it."""

    agent: Agent
    editor: EditorTerminal
    stub: ModelStub
    turns: list[tuple[str, Recorded]] = field(default_factory=list)
    delivered: list[tuple[str, str]] = field(default_factory=list)  # (turn, the hook texts joined)

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        """Types ``prompt`` into the agent's terminal; returns its model request and the text its
        hooks added to that turn, once the agent has shown the answer. (No ``?`` in prompts: Gemini
        CLI can take it as its shortcut-help key.)"""
        after = self.stub.next_seq
        self.editor.send(prompt, enter=False)
        # Enter only once the agent shows what was typed (keys typed while it is still busy are lost),
        # and not at once (text and Enter in one burst look like a paste).
        time.sleep(0.5)
        self.editor.wait_screen(re.escape(prompt[:40]), timeout=30)
        self.editor.keys("Enter")
        try:
            rec = self.stub.wait_for(lambda r: self.agent.is_turn(r, prompt), timeout=90, after=after)
        except TimeoutError as exc:
            sent = [f"{r.seq} {r.path}: …{r.text[-1500:]}" for r in self.stub.requests[after:]]
            raise AssertionError(
                f"{exc}\nsince the prompt:\n" + "\n".join(sent) + f"\n{self.editor.screen()}"
            ) from None
        self.editor.wait_screen(self.agent.answered(rec, prompt), timeout=60)
        hooked = "\n".join(self.agent.hook_texts(rec, prompt))
        self.turns.append((label, rec))
        self.delivered.append((label, hooked))
        return rec, hooked

    def in_file_window(self, action: Callable[[], None]) -> None:
        """Leaves the agent's terminal for the file window (left), runs ``action``, comes back."""
        self.editor.keys("C-\\", "C-n")
        self.editor.keys("C-w", "h")
        self.editor.wait_lua("return vim.bo.buftype == ''", "the file window")
        action()
        self.editor.keys("C-w", "l")
        self.editor.wait_lua("return vim.bo.buftype == 'terminal'", "the agent's terminal window")
        self.editor.send("i", enter=False)
        self.editor.wait_lua("return vim.api.nvim_get_mode().mode == 't'", "terminal mode in the agent's window")

    def wait_memory(self, holds: Any, what: str, timeout: float = 30) -> None:
        self.editor.wait_memory(holds, what, timeout)


def counts(rec: Recorded) -> dict[str, int]:
    return {marker: rec.text.count(marker) for marker in MARKERS}


def assert_once(label: str, rec: Recorded, applies: set[str], seen: set[str]) -> None:
    """(1) and (3): what applies is in the request exactly once; what applied earlier in the
    conversation at most once (its old text stays in the history); nothing else at all."""
    found = counts(rec)
    for marker, n in found.items():
        if marker in applies:
            assert n == 1, f"turn {label}: {marker} is in the request {n} times, not once: {found}"
        elif marker in seen:
            assert n <= 1, f"turn {label}: {marker} is in the request {n} times: {found}"
        else:
            assert n == 0, f"turn {label}: {marker} does not apply, yet is in the request {n} times: {found}"


def one_line_notice(label: str, hooked: str, path: str, marker: str) -> None:
    """(2) for a file that stopped applying: one line naming it and saying so, never its text."""
    lines = [line for line in hooked.splitlines() if path in line]
    assert len(lines) == 1 and NO_LONGER.search(lines[0]), (
        f"turn {label}: want one line saying {path} no longer applies; hook context:\n{hooked}"
    )
    assert marker not in hooked, f"turn {label}: the text of {path}, which no longer applies, was sent:\n{hooked}"


@pytest.fixture(params=sorted(AGENTS))
def session(request: pytest.FixtureRequest, tmp_path: Path, model_stub: ModelStub) -> Iterator[Session]:
    yield from _session(AGENTS[request.param], make_workspace(tmp_path / "project"), tmp_path, model_stub)


def _session(agent: Agent, ws: Path, tmp_path: Path, model_stub: ModelStub) -> Iterator[Session]:
    agent.install()
    home = (tmp_path / "home").resolve()  # the suite's own HOME (tests/conftest.py): seeded here
    agent.seed(home, ws, model_stub)
    env = agent.env(model_stub)
    # The terminal finds this checkout's context-companion first, as a user's PATH finds theirs.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env=env)
    try:
        yield Session(agent, editor, model_stub)
    finally:
        editor.stop()


def set_up_and_start(session: Session, open_files: list[str]) -> None:
    """The user's one setup step, in the project, before starting the agent; then the editor with
    ``open_files`` (the first one active) and the agent in its terminal, ready for a prompt."""
    agent, editor = session.agent, session.editor
    ws = editor.workspace
    done = subprocess.run(
        [context_companion(editor.env), "setup", "--agent", agent.name, "--workspace", str(ws)],
        env=editor.env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"setup --agent {agent.name} failed: {done.stderr}"
    if agent.name == "codex":  # it says what Codex will ask, and never answers for the user
        asked = [line for line in done.stdout.splitlines() if '"Hooks need review"' in line]
        assert len(asked) == 1, f"setup does not say in one line what Codex will ask:\n{done.stdout}"
        assert "trusted_hash" not in (editor.home / ".codex" / "config.toml").read_text(encoding="utf-8")

    editor.start(open_files)
    active = str(ws / open_files[0])
    editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(active)}", f"{open_files[0]} active")
    editor.terminal(shlex.join(agent.command()))
    agent.accept_hooks(editor)
    agent.wait_ready(editor)


def test_memory_reaches_the_agent_through_its_hooks_once_and_live(session: Session, agent_figures: Any) -> None:
    agent, editor, stub = session.agent, session.editor, session.stub
    ws = editor.workspace
    set_up_and_start(session, ["src/app.py", ".env"])

    base = {ROOT_V1, CLAUDE_OWN, CURSOR_RULE, COPILOT_RULE, SRC_MEMORY}
    seen = set(base)

    # Turn 1, (1) once: everything that applies, exactly once, read by the agent or delivered by us.
    first, hooked = session.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, seen)
    if agent.name == "claude-code":
        assert CLAUDE_OWN not in hooked, "Claude Code reads its own CLAUDE.md: we sent it again"
    if agent.name == "codex":
        assert ROOT_V1 not in hooked, "Codex reads the root AGENTS.md itself: we sent it again"

    # Turn 2, (3) nothing twice: nothing changed, so not one byte from the hook.
    second, hooked = session.turn("2", "Turn two: anything else to know.")
    assert hooked == "", f"turn 2: nothing changed, yet the hook added:\n{hooked}"
    assert_once("2", second, base, seen)

    # Turn 3, (2) live: the root AGENTS.md is edited (an editor's atomic save).
    agents_md = ws / "AGENTS.md"
    temp = agents_md.with_name(".AGENTS.md.tmp")
    temp.write_text(f"# Project\n\n{ROOT_V2}: beavers approve every merge.\n", encoding="utf-8")
    os.replace(temp, agents_md)
    session.wait_memory(lambda r: ROOT_V2 in str(r.get("text")), "the edited AGENTS.md")
    applies = (base - {ROOT_V1}) | {ROOT_V2}
    seen |= applies
    third, hooked = session.turn("3", "Turn three: tell me what changed.")
    assert ROOT_V2 in hooked, f"turn 3: the AGENTS.md edit is not in the hook context:\n{hooked}"
    assert_once("3", third, applies, seen)

    # Turn 4, (2) live: the cursor rule is deleted.
    (ws / CURSOR_PATH).unlink()
    session.wait_memory(
        lambda r: not any(str(f.get("path", "")).endswith(CURSOR_PATH) for f in r.get("files") or []),
        f"{CURSOR_PATH} gone",
    )
    applies -= {CURSOR_RULE}
    fourth, hooked = session.turn("4", "Turn four: and now, what changed.")
    one_line_notice("4", hooked, CURSOR_PATH, CURSOR_RULE)
    assert_once("4", fourth, applies, seen)

    # Turn 5, (2) live: the user moves the active file from src/ to lib/ in the editor.
    old, new = ws / "src" / "app.py", ws / "lib" / "app.py"

    def move() -> None:
        editor.lua(
            f"local old, new = {lua_str(str(old))}, {lua_str(str(new))}\n"
            "local buf = vim.fn.bufnr(old)\n"
            "assert(vim.fn.rename(old, new) == 0, 'rename failed')\n"
            "vim.cmd.edit(vim.fn.fnameescape(new))\n"
            "vim.cmd('bwipeout ' .. buf)"
        )
        editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(str(new))}", "lib/app.py active")

    session.in_file_window(move)
    applies = (applies - {COPILOT_RULE, SRC_MEMORY}) | {LIB_MEMORY}
    seen |= applies
    fifth, hooked = session.turn("5", "Turn five: I moved the file, tell me what applies now.")
    assert LIB_MEMORY in hooked, f"turn 5: lib/AGENTS.md, which applies now, is not in the hook context:\n{hooked}"
    assert not NO_LONGER.search(hooked), f"turn 5: a file that only left the editor was taken back:\n{hooked}"
    assert SRC_MEMORY not in hooked and COPILOT_RULE not in hooked
    assert_once("5", fifth, applies, seen)

    # (4) Cache kept: the agent's system part is the same bytes on every turn of the conversation.
    systems = [agent.system_part(rec) for _, rec in session.turns]
    same = min(common_prefix(systems[0], s) for s in systems)
    identical = all(s == systems[0] for s in systems)

    # Turn 6: a new conversation in the same process gets everything that applies, once again.
    agent.clear(editor)
    sixth, hooked = session.turn("6", "Turn six: a fresh start, tell me what applies.")
    assert_once("6", sixth, applies, set())

    # The excluded .env never reaches the model, in any request the agent sent; we never name it.
    for rec in stub.requests:
        assert SECRET not in rec.text, f"the .env secret is in {rec.method} {rec.path} (request {rec.seq})"
    for label, hooked in session.delivered:
        assert ".env" not in hooked, f"turn {label}: the hook context names the excluded .env:\n{hooked}"

    agent_figures(agent.name, "version", agent.version())
    agent_figures(
        agent.name,
        "identical system part, turns 1-5",
        f"{100 * same / max(len(systems[0]), 1):.1f}% of {len(systems[0])} B",
    )
    agent_figures(
        agent.name, "hook context per turn (chars)", ", ".join(f"{t}: {len(h)}" for t, h in session.delivered)
    )
    assert identical, f"the system part changed between turns: first {same} bytes identical of {len(systems[0])}"


BIG_START, BIG_END = "BIG-ROOT-MEMORY-START", "BIG-ROOT-MEMORY-END"
MIRROR_ALWAYS, MIRROR_PY = "MIRRORED-ALWAYS-RULE", "MIRRORED-PYTHON-RULE"
BIG_SECTION = (
    "Each change comes with a test that fails without it; run the package's own checks before pushing, "
    "and keep the public names stable once released.\n"
)
MIRRORED = {
    "AGENTS.md": f"# Project\n\n{BIG_START}: build with make.\n\n"
    + "".join(f"## Section {i}\n\n{BIG_SECTION}\n" for i in range(43))
    + f"{BIG_END}: that is all.\n",
    ".cursor/rules/house.mdc": f"---\ndescription: house style\nalwaysApply: true\n---\n{MIRROR_ALWAYS}: plain words.\n",
    ".claude/rules/house.md": f"{MIRROR_ALWAYS}: plain words.\n",
    ".cursor/rules/python.mdc": f'---\nglobs: "src/**/*.py"\n---\n{MIRROR_PY}: type every function.\n',
    ".claude/rules/python.md": f'---\npaths:\n  - "src/**/*.py"\n---\n{MIRROR_PY}: type every function.\n',
    "src/app.py": APP,
    "src/AGENTS.md": f"# src\n\n{SRC_MEMORY}: src holds the application code.\n",
}
MIRRORED_MARKERS = (BIG_START, BIG_END, MIRROR_ALWAYS, MIRROR_PY, SRC_MEMORY)
# What each agent reads itself at start (never from us): Claude Code its CLAUDE.md (a link to AGENTS.md)
# and its .claude/rules file without paths; Codex the root AGENTS.md.
READS_ITSELF = {
    "claude-code": {BIG_START, BIG_END, MIRROR_ALWAYS},
    "gemini-cli": set(),
    "codex": {BIG_START, BIG_END},
}


@pytest.fixture(params=sorted(AGENTS))
def mirrored(request: pytest.FixtureRequest, tmp_path: Path, model_stub: ModelStub) -> Iterator[Session]:
    ws = make_workspace(tmp_path / "mirrored", MIRRORED)
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")
    yield from _session(AGENTS[request.param], ws, tmp_path, model_stub)


def from_disk(agent: Agent, ws: Path, env: dict[str, str]) -> str:
    """The hook's text with no editor (a runtime folder no server announces in), for the same project."""
    runtime = ws.parent / "no-editor-run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    event = "BeforeAgent" if agent.name == "gemini-cli" else "UserPromptSubmit"
    payload = {"hook_event_name": event, "session_id": "no-editor", "cwd": str(ws), "prompt": "hi"}
    out = subprocess.run(
        [context_companion(env), "hook", "--agent", agent.name],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**env, "XDG_RUNTIME_DIR": str(runtime)},
        timeout=60,
    )
    assert out.returncode == 0 and out.stderr == "", out.stderr
    text: str = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] if out.stdout else ""
    return text


def test_a_linked_claude_md_mirrored_rules_and_a_large_root_memory_arrive_once_and_whole(
    mirrored: Session, agent_figures: Any
) -> None:
    agent, editor = mirrored.agent, mirrored.editor
    set_up_and_start(mirrored, ["src/app.py"])
    first, hooked = mirrored.turn("1", "Turn one: tell me what to keep in mind for this file.")
    found = {marker: first.text.count(marker) for marker in MIRRORED_MARKERS}
    assert all(n == 1 for n in found.values()), f"not every applicable text is in the request once: {found}"
    own = [m for m in READS_ITSELF[agent.name] if m in hooked]
    assert not own, f"we sent what {agent.name} reads itself: {own}\n{hooked}"
    assert "truncated" not in first.text and "Left out" not in hooked, hooked
    if BIG_START in hooked:  # sent by us: whole, its last line too, within the agent's own limit
        assert BIG_END in hooked and len(hooked) <= 30_000
    size = len(hooked.encode()) if agent.name == "codex" else len(hooked)
    unit = "bytes" if agent.name == "codex" else "chars"
    alone = from_disk(agent, editor.workspace, editor.env)
    alone_size = len(alone.encode()) if agent.name == "codex" else len(alone)
    agent_figures(agent.name, f"mirrored repo, turn 1 ({unit})", f"editor {size}, no editor {alone_size}")


def _memory(marker: str, size: int) -> str:
    """A memory file of about ``size`` characters, ``marker`` in its first line and ``<marker>-END`` in its last."""
    text = f"# {marker}\n\n{marker}: the first rule.\n\n"
    i = 0
    while len(text) < size:
        text += f"## Rule {i}\n\nEach change comes with a test of what a user sees ({marker.lower()} {i}).\n\n"
        i += 1
    return text + f"{marker}-END: the last rule.\n"


NEAREST, PARENT, BIG_ROOT, ROOT_EDIT = "NEAREST-MEMORY", "PARENT-MEMORY", "BIG-ROOT-MEMORY", "ROOT-EDIT-LINE"
# As on pydantic-ai (issue 39): the active file's folder memory (6,700 characters) and its parent's (4,400) are
# over Claude Code's and Codex's limits together; the root AGENTS.md is 20,000 characters, and no CLAUDE.md (so
# Claude Code reads AGENTS.md once at start, as Codex does).
NESTED = {
    "AGENTS.md": _memory(BIG_ROOT, 20_000),
    "pkg/AGENTS.md": _memory(PARENT, 4_400),
    "pkg/models/AGENTS.md": _memory(NEAREST, 6_700),
    "pkg/models/openai.py": APP,
}


@pytest.fixture(params=sorted(AGENTS))
def nested(request: pytest.FixtureRequest, tmp_path: Path, model_stub: ModelStub) -> Iterator[Session]:
    yield from _session(AGENTS[request.param], make_workspace(tmp_path / "nested", NESTED), tmp_path, model_stub)


def test_the_nearest_memory_first_the_rest_on_the_next_turns_and_a_big_file_edit_as_its_change(
    nested: Session, agent_figures: Any
) -> None:
    """Issue 39.1 and 39.2 in one interactive session: the nearest memory in turn 1, its parent by turn 3 (Claude
    Code and Codex cannot take both at once; Gemini CLI takes both, and the 20,000-character root it does not read
    on the next turn); then a quiet turn; then a one-line edit of the root AGENTS.md arrives as its change, under
    2,000 characters (Codex and Claude Code read that file at start and keep it: their prompts come from one agent
    process, which the hook finds above the shell that runs it)."""
    agent, ws = nested.agent, nested.editor.workspace
    set_up_and_start(nested, ["pkg/models/openai.py"])
    hooked: list[str] = []
    _first, text = nested.turn("1", "Turn one: tell me what to keep in mind for this file.")
    hooked.append(text)
    assert f"{NEAREST}-END" in text, f"turn 1: the nearest memory is not all there:\n{text[:3000]}"
    if agent.name == "gemini-cli":
        assert f"{PARENT}-END" in text and BIG_ROOT not in text and "Still to come" in text
    else:
        assert PARENT not in text and "Still to come" in text
    _second, text = nested.turn("2", "Turn two: anything else to know.")
    hooked.append(text)
    got = "".join(hooked)
    assert f"{PARENT}-END" in got, f"by turn 2: the parent's memory has not come:\n{text[:3000]}"
    if agent.name == "gemini-cli":
        assert f"{BIG_ROOT}-END" in text and len(text) <= 30_000
    third, quiet = nested.turn("3", "Turn three: anything more.")
    assert quiet == "", f"turn 3: everything was given and nothing changed, yet the hook added:\n{quiet[:3000]}"
    for marker in (NEAREST, PARENT, BIG_ROOT):
        assert third.text.count(f"{marker}-END") == 1, f"turn 3: {marker} is not in the request once"

    with (ws / "AGENTS.md").open("a", encoding="utf-8") as fh:
        fh.write(f"{ROOT_EDIT}: one more rule.\n")
    nested.wait_memory(lambda r: ROOT_EDIT in str(r.get("text")), "the edited AGENTS.md")
    fourth, edited = nested.turn("4", "Turn four: tell me what changed.")
    assert ROOT_EDIT in edited and len(edited) < 2_000, f"turn 4: want the change only:\n{edited[:3000]}"
    assert fourth.text.count(ROOT_EDIT) == 1
    unit = "bytes" if agent.name == "codex" else "chars"
    size = (lambda t: len(t.encode())) if agent.name == "codex" else len
    agent_figures(
        agent.name,
        f"nested big memory: hook {unit} per turn",
        f"turn 1: {size(hooked[0])}, turn 2: {size(hooked[1])}, quiet: {size(quiet)}, after edit: {size(edited)}",
    )
