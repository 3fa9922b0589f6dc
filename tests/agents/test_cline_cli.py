"""The memory Cline CLI does not read itself reaches it through our plugin, set up only by
``context-companion setup --agent cline`` (the dev install's console script), with an editor's language server
running for the folder (Neovim with our plugin, ``editor_terminal.py``: ``src/app.py`` active, an excluded ``.env``
open beside it). The real Cline CLI (``tests/agents/cline/``, driven as ``kilo_cline.ClineCli`` drives it) runs one
session against the recording model stub, offline: ``cline --json "…"`` for the first turn, then ``cline --id
SESSION`` (its TUI, in a private tmux; ``--json`` refuses ``--id`` and no other resume runs without the TUI) for
each later turn, each turn a new process.

The workspace holds one marker word per file: a root ``AGENTS.md`` and ``.cline/rules/style.md`` (Cline reads both
itself: we never send them), a ``CLAUDE.md``, a ``.cursor/rules`` glob rule matching the active file and
``src/AGENTS.md`` (the active file's folder), which it does not read.

1. first prompt: every text that applies is in the request exactly once, what Cline lacks in our
   ``<hook_context source="RunStart">`` message of this turn, nothing it reads itself from us;
2. nothing changed (the resumed session, in the TUI): nothing from us;
3. after ``CLAUDE.md`` is edited: its new text, once, and nothing else.

Through the three turns Cline's system message is byte-identical (we never touch it). The ``.env`` secret never
reaches a request.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from editor_terminal import EditorTerminal
from kilo_cline import Blackhole, ClineCli, scratch_env, system_text
from model_stub import ModelStub, Recorded
from nvim_harness import ACTIVE_FILE_LUA, lua_str
from test_agent_memory_hooks import context_companion, make_workspace

SECRET = "sk-stub-never-in-a-request-8642"
ROOT, CLINE_RULES = "ROOT-MEMORY-CLINE", "CLINE-RULES-CLINE"
CLAUDE_V1, CLAUDE_V2 = "CLAUDE-MEMORY-CLINE", "CLAUDE-EDITED-CLINE"
CURSOR_RULE, SRC = "CURSOR-RULE-CLINE", "SRC-MEMORY-CLINE"
MARKERS = (ROOT, CLINE_RULES, CLAUDE_V1, CLAUDE_V2, CURSOR_RULE, SRC)
READS_ITSELF = {ROOT, CLINE_RULES}  # Cline CLI 3.0.65, as measured (docs/agents.md)

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    ".cline/rules/style.md": f"# Style\n\n{CLINE_RULES}: name things for what they do.\n",
    "CLAUDE.md": f"# Working here\n\n{CLAUDE_V1}: changelog entries are written in the imperative.\n",
    ".cursor/rules/python-style.mdc": (
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
        f"{CURSOR_RULE}: every function has type hints.\n"
    ),
    "src/AGENTS.md": f"# src\n\n{SRC}: src holds the application code.\n",
    "src/app.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
    ".env": f"API_KEY={SECRET}\n",
    ".gitignore": ".env\n",
}
HOOK_CONTEXT = re.compile(r'^<hook_context source="RunStart">\n(.*)\n</hook_context>$', re.S)
MEMORY_LUA = "return require('context_companion').execute('showMemory', {})"


@dataclass
class Run:
    agent: ClineCli
    editor: EditorTerminal
    stub: ModelStub
    env: dict[str, str]
    turns: list[tuple[str, Recorded, str]] = field(default_factory=list)

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        """One more turn of the session: its main request and what our plugin added to it (the text of this
        turn's ``<hook_context>`` messages; "" when there is none)."""
        after = self.stub.next_seq
        self.agent.run(prompt, self.editor.workspace, self.env)
        try:
            rec = self.stub.wait_for(lambda r: self.agent.is_turn(r, prompt), timeout=30, after=after)
        except TimeoutError as exc:
            sent = [f"{r.seq} {r.method} {r.path}: …{r.text[-600:]}" for r in self.stub.requests[after:]]
            raise AssertionError(f"cline-cli turn {label}: {exc}\n" + "\n".join(sent)) from None
        added = self.agent.added_texts(rec, prompt)
        contexts = [HOOK_CONTEXT.match(t) for t in added]
        assert all(contexts), f"turn {label}: a text beside the prompt that is no hook context: {added}"
        hooked = "\n".join(m.group(1) for m in contexts if m)
        self.turns.append((label, rec, hooked))
        return rec, hooked

    def wait_memory(self, holds: Any, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        report: Any = None
        while time.monotonic() < deadline:
            report = self.editor.lua(MEMORY_LUA)
            if isinstance(report, dict) and holds(report):
                return
            time.sleep(0.2)
        raise AssertionError(f"the server never reported {what}; last report: {report!r}"[:3000])


@pytest.fixture
def run(tmp_path: Path, model_stub: ModelStub, runtime: Path) -> Iterator[Run]:
    agent = ClineCli()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path, "XDG_RUNTIME_DIR": str(runtime)})
    with Blackhole() as blackhole:
        env = {
            **scratch_env(home),
            **blackhole.env(),
            **agent.env(model_stub, home),
            "PATH": path,
            "XDG_RUNTIME_DIR": str(runtime),
        }
        try:
            yield Run(agent, editor, model_stub, env)
        finally:
            agent.stop()
            editor.stop()


def set_up(run: Run) -> str:
    """The user's setup (``setup --agent cline`` only), Cline's login to the stub, then the editor with
    src/app.py active and the excluded .env open. Returns what setup printed."""
    ws = run.editor.workspace
    done = subprocess.run(
        [context_companion(run.env), "setup", "--agent", "cline", "--workspace", str(ws)],
        env=run.env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"setup --agent cline failed: {done.stderr}"
    assert (ws / ".cline" / "plugins" / "context-companion.js").is_file()
    run.agent.prepare(run.env, ws)
    run.editor.start(["src/app.py", ".env"])
    active = str(ws / "src" / "app.py")
    run.editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(active)}", "src/app.py active")
    return done.stdout


def counts(rec: Recorded) -> dict[str, int]:
    return {marker: rec.text.count(marker) for marker in MARKERS}


def assert_once(label: str, rec: Recorded, applies: set[str], seen: set[str]) -> None:
    """Every text that applies is in the request once; one that applied earlier at most once (the session's
    history keeps what an earlier turn carried); any other not at all."""
    found = counts(rec)
    for marker, n in found.items():
        if marker in applies:
            assert n == 1, f"turn {label}: {marker} is in the request {n} times, not once: {found}"
        elif marker in seen:
            assert n <= 1, f"turn {label}: {marker} is in the request {n} times: {found}"
        else:
            assert n == 0, f"turn {label}: {marker} does not apply, yet is in the request {n} times: {found}"


def test_cline_cli_gets_what_it_lacks_once_a_change_once_and_its_system_part_untouched(
    run: Run, agent_figures: Any
) -> None:
    agent, stub, ws = run.agent, run.stub, run.editor.workspace
    said = set_up(run)
    who = f"cline-cli {agent.version()}"
    base = {ROOT, CLINE_RULES, CLAUDE_V1, CURSOR_RULE, SRC}
    seen = set(base)

    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, seen)
    system = system_text(first)
    assert {m for m in MARKERS if m in system} >= READS_ITSELF, f"{who} no longer reads {READS_ITSELF} itself"
    own = [m for m in READS_ITSELF if m in hooked]
    assert not own, f"{who}: we sent what it reads itself: {own}\n{hooked}"
    lacking = base - READS_ITSELF
    assert all(m in hooked for m in lacking), f"{who} turn 1: not every missing text came from us:\n{hooked}"
    assert not [m for m in MARKERS if m in hooked and m in system], f"{who}: our text is in the system part"

    second, quiet = run.turn("2", "Turn two: anything else to know.")
    assert quiet == "", f"{who} turn 2: nothing changed, yet our plugin added:\n{quiet}"
    assert agent.added_texts(second, "Turn two: anything else to know.") == []
    assert_once("2", second, base, seen)

    (ws / "CLAUDE.md").write_text(
        f"# Working here\n\n{CLAUDE_V2}: changelog entries are written in the imperative.\n", encoding="utf-8"
    )
    run.wait_memory(lambda r: CLAUDE_V2 in str(r), "the edited CLAUDE.md")
    applies = (base - {CLAUDE_V1}) | {CLAUDE_V2}
    seen |= applies
    third, edited = run.turn("3", "Turn three: tell me what changed.")
    assert CLAUDE_V2 in edited, f"{who} turn 3: the edit of CLAUDE.md is not in our context:\n{edited}"
    assert not {CURSOR_RULE, SRC, ROOT, CLINE_RULES} & {m for m in MARKERS if m in edited}, (
        f"{who} turn 3: want the change only:\n{edited}"
    )
    assert_once("3", third, applies, seen)

    systems = [agent.system_part(rec) for _label, rec, _hooked in run.turns]
    for rec in stub.requests:
        assert SECRET not in rec.text, f"the .env secret is in {rec.method} {rec.path} (request {rec.seq})"
    for label, _rec, text in run.turns:
        assert ".env" not in text, f"turn {label}: our context names the excluded .env:\n{text}"
    assert "Cline CLI: added the plugin" in said, said

    agent_figures("cline-cli", "version", agent.version())
    agent_figures("cline-cli", "system part (bytes)", len(systems[0]))
    agent_figures("cline-cli", "our context per turn (chars)", ", ".join(f"{t}: {len(h)}" for t, _r, h in run.turns))
    assert all(s == systems[0] for s in systems), f"{who}: the system part changed between turns"
