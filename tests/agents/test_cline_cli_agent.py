"""The memory Cline CLI does not read itself reaches it through our plugin, set up only by
``context-companion setup --agent cline`` (the dev install's console script), with an editor's language server
running for the folder (Neovim with our plugin, ``editor_terminal.py``: ``src/app.py`` active, an excluded ``.env``
open beside it). The real Cline CLI (``tests/agents/cline/``, set up and started as ``kilo_cline.ClineCli`` does)
runs one session against the recording model stub, offline: ``cline --json "…"`` for the first turn, then the
session resumed in its TUI (``cline --id SESSION``, in a private tmux; ``--json`` refuses ``--id`` and no other
resume runs without the TUI) for the others, typed one after the other into that one process, as a user does.

The workspace holds one marker word per file: a root ``AGENTS.md``, ``.cline/rules/style.md`` and a
``.cline/rules/python.md`` with ``paths`` matching the active file (Cline reads all three itself, the last whole
whatever its paths: we never send them), a ``CLAUDE.md``, a ``.cursor/rules`` glob rule matching the active file and
``src/AGENTS.md`` (the active file's folder), which it does not read.

1. first prompt: every text that applies is in the request exactly once, what Cline lacks in our
   ``<hook_context source="RunStart">`` message of this turn, nothing it reads itself from us;
2. nothing changed (the resumed session, in the TUI): nothing from us;
3. after ``CLAUDE.md`` is edited: its new text, once, and nothing else;
4. after ``AGENTS.md`` is edited: nothing from us; Cline reads it again itself (its system message has the new text);
5. after ``/clear`` (a new session, same process): everything it lacks again, once; 6-9: nothing;
10. after ``/compact`` (the older turns, turn 5's text with them, become a summary in what goes to the model):
    nothing yet, the plugin sees the text gone only in that request; 11: everything it lacks again, once.

Through turns 1-3 Cline's system message is byte-identical (we never touch it), and in turn 4 it differs only by
the edit. The ``.env`` secret never reaches a request.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from editor_terminal import EditorTerminal
from kilo_cline import Blackhole, ClineCli, scratch_env, stub_answer, system_text, which
from model_stub import ModelStub, Recorded
from nvim_harness import ACTIVE_FILE_LUA, lua_str
from test_agent_memory_hooks import context_companion, make_workspace

SECRET = "sk-stub-never-in-a-request-8642"
ROOT, ROOT_V2, CLINE_RULES = "ROOT-MEMORY-CLINE", "ROOT-EDITED-CLINE", "CLINE-RULES-CLINE"
CLINE_PATHS = "CLINE-PATHS-RULE-CLINE"
CLAUDE_V1, CLAUDE_V2 = "CLAUDE-MEMORY-CLINE", "CLAUDE-EDITED-CLINE"
CURSOR_RULE, SRC = "CURSOR-RULE-CLINE", "SRC-MEMORY-CLINE"
MARKERS = (ROOT, ROOT_V2, CLINE_RULES, CLINE_PATHS, CLAUDE_V1, CLAUDE_V2, CURSOR_RULE, SRC)
READS_ITSELF = {ROOT, ROOT_V2, CLINE_RULES, CLINE_PATHS}  # Cline CLI 3.0.65, as measured (docs/agents.md)

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    ".cline/rules/style.md": f"# Style\n\n{CLINE_RULES}: name things for what they do.\n",
    # For the active file; Cline CLI reads it whole whatever its paths.
    ".cline/rules/python.md": f'---\npaths:\n  - "src/**/*.py"\n---\n\n{CLINE_PATHS}: prefer pathlib.\n',
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
QUIET = ("6", "7", "8", "9")  # turns after the new session's first, so that /compact summarizes that first one
NEW_SESSION = "What can I do for you?"  # the empty box of a new session in Cline's TUI
OFFER = "Press Enter to open"  # the offer a new session of Cline's TUI opens with


class Tui:
    """``cline --id SESSION``: the session resumed in Cline's TUI, in a private tmux, for several prompts typed one
    after the other into the one process."""

    def __init__(self, agent: ClineCli, workspace: Path, env: dict[str, str]) -> None:
        sock = Path(env["TMPDIR"]) / "tui.sock"
        self.base = [which("tmux"), "-S", str(sock), "-f", "/dev/null"]
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), agent.binary(), "--id", agent.task])
        started = subprocess.run(
            [*self.base, "new-session", "-d", "-s", "cline", "-x", "200", "-y", "50", "-c", str(workspace), command],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert started.returncode == 0, f"tmux failed: {started.stderr}"
        # Ready once the session's earlier answer is back on the screen under the empty prompt box.
        self.wait(lambda s: "Ask anything" in s and stub_answer() in s, "the resumed session")

    def screen(self) -> str:
        done = subprocess.run([*self.base, "capture-pane", "-p", "-t", "cline"], capture_output=True, text=True)
        return done.stdout

    def wait(self, holds: Any, what: str, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if holds(shown):
                return shown
            time.sleep(0.25)
        raise AssertionError(f"cline-cli: no {what} on its TUI within {timeout:g}s:\n{self.screen()}")

    def clear(self) -> None:
        """``/clear``: a new session in the same process (Cline names it anew and calls the plugins' ``setup``
        with its id). Its new session opens with an offer ("Press Enter to open, any other key to close"): Escape
        closes it and gives the empty box the keys."""
        subprocess.run([*self.base, "send-keys", "-t", "cline", "-l", "/clear"], check=True, timeout=30)
        time.sleep(0.5)
        subprocess.run([*self.base, "send-keys", "-t", "cline", "Enter"], check=True, timeout=30)
        self.wait(lambda s: OFFER in s or (NEW_SESSION in s and stub_answer() not in s), "new session")
        for _attempt in range(5):
            time.sleep(0.5)
            subprocess.run([*self.base, "send-keys", "-t", "cline", "Escape"], check=True, timeout=30)
            with contextlib.suppress(AssertionError):
                self.wait(lambda s: OFFER not in s and NEW_SESSION in s, "new session's empty box", timeout=5)
                return
        raise AssertionError(f"cline-cli: /clear did not leave an empty new session:\n{self.screen()}")

    def compact(self, summarized: Any) -> None:
        """``/compact``: Cline asks the model for a summary of the older turns and keeps it in their place;
        ``summarized()`` tells when that request has come."""
        subprocess.run([*self.base, "send-keys", "-t", "cline", "-l", "/compact"], check=True, timeout=30)
        time.sleep(0.5)
        subprocess.run([*self.base, "send-keys", "-t", "cline", "Enter"], check=True, timeout=30)
        self.wait(lambda s: summarized() and "Ask anything" in s, "compaction")
        time.sleep(1)
        subprocess.run([*self.base, "send-keys", "-t", "cline", "Escape"], check=True, timeout=30)
        time.sleep(0.5)

    def send(self, prompt: str) -> None:
        """Types ``prompt``, presses Enter, waits for the stub's answer below it."""
        answers = self.screen().count(stub_answer())
        subprocess.run([*self.base, "send-keys", "-t", "cline", "-l", prompt], check=True, timeout=30)
        self.wait(lambda s: prompt in s, "typed prompt")
        for _attempt in range(3):
            time.sleep(0.5)  # the box takes typed text in as a paste first; Enter right after it is lost
            subprocess.run([*self.base, "send-keys", "-t", "cline", "Enter"], check=True, timeout=30)
            with contextlib.suppress(AssertionError):
                self.wait(lambda s: "Ask anything" in s, "emptied prompt box", timeout=10)
                break
        self.wait(lambda s: s.count(stub_answer()) > answers and "Ask anything" in s, "answer")

    def close(self) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "cline", "C-c"], capture_output=True, timeout=30)
        deadline = time.monotonic() + 20
        while (
            time.monotonic() < deadline
            and subprocess.run([*self.base, "has-session"], capture_output=True).returncode == 0
        ):
            time.sleep(0.25)
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30)


@dataclass
class Run:
    agent: ClineCli
    editor: EditorTerminal
    stub: ModelStub
    env: dict[str, str]
    turns: list[tuple[str, Recorded, str]] = field(default_factory=list)
    tui: Tui | None = None

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        """One more turn of the session (the first with ``cline --json``, the others in one TUI): its main request
        and what our plugin added to it (the text of this turn's ``<hook_context>`` messages; "" when none)."""
        after = self.stub.next_seq
        if not self.turns:
            self.agent.run(prompt, self.editor.workspace, self.env)
        else:
            if self.tui is None:
                self.tui = Tui(self.agent, self.editor.workspace, self.env)
            self.tui.send(prompt)
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
        self.editor.wait_memory(holds, what, timeout)


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
        done = Run(agent, editor, model_stub, env)
        try:
            yield done
        finally:
            if done.tui is not None:
                done.tui.close()
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
    base = {ROOT, CLINE_RULES, CLINE_PATHS, CLAUDE_V1, CURSOR_RULE, SRC}
    seen = set(base)

    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, seen)
    system = system_text(first)
    reads = {ROOT, CLINE_RULES, CLINE_PATHS}
    assert {m for m in MARKERS if m in system} == reads, f"{who} no longer reads just {reads} itself"
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
    assert not {CURSOR_RULE, SRC, ROOT, CLINE_RULES, CLINE_PATHS} & {m for m in MARKERS if m in edited}, (
        f"{who} turn 3: want the change only:\n{edited}"
    )
    assert_once("3", third, applies, seen)

    (ws / "AGENTS.md").write_text(f"# Project\n\n{ROOT_V2}: otters review every pull request.\n", encoding="utf-8")
    run.wait_memory(lambda r: ROOT_V2 in str(r), "the edited AGENTS.md")
    applies = (applies - {ROOT}) | {ROOT_V2}
    seen |= applies
    fourth, after = run.turn("4", "Turn four: and now.")
    assert after == "", f"{who} turn 4: Cline reads AGENTS.md again itself, yet our plugin added:\n{after}"
    assert ROOT_V2 in system_text(fourth) and ROOT not in system_text(fourth), f"{who} did not read AGENTS.md again"
    assert_once("4", fourth, applies, seen)

    assert run.tui is not None
    run.tui.clear()
    fifth, fresh = run.turn("5", "Turn five: a new session.")
    assert {m for m in MARKERS if m in fresh} == {CLAUDE_V2, CURSOR_RULE, SRC}, f"{who} turn 5 (after /clear):\n{fresh}"
    assert_once("5", fifth, applies, applies)
    for label in QUIET:
        _rec, quiet = run.turn(label, f"Turn {label}: nothing new.")
        assert quiet == "", f"{who} turn {label}: nothing changed, yet our plugin added:\n{quiet}"

    before = stub.next_seq
    run.tui.compact(lambda: stub.next_seq > before)
    tenth, late = run.turn("10", "Turn ten: after the summary.")
    history = json.dumps(tenth.json.get("messages"), ensure_ascii=False)
    assert "Context summary" in history, f"{who} turn 10: no summary in the request"
    assert json.dumps(fresh, ensure_ascii=False)[1:-1] not in history, f"{who} turn 10: turn 5 was not compacted"
    assert late == "", f"{who} turn 10: our plugin learns of the compaction only once the request is made:\n{late}"
    eleventh, again = run.turn("11", "Turn eleven: and after that.")
    assert {m for m in MARKERS if m in again} == {CLAUDE_V2, CURSOR_RULE, SRC}, f"{who} turn 11 (compacted):\n{again}"
    assert_once("11", eleventh, applies, applies)

    systems = [agent.system_part(rec) for _label, rec, _hooked in run.turns[:4]]
    for rec in stub.requests:
        assert SECRET not in rec.text, f"the .env secret is in {rec.method} {rec.path} (request {rec.seq})"
    for label, _rec, text in run.turns:
        assert ".env" not in text, f"turn {label}: our context names the excluded .env:\n{text}"
    assert "Cline CLI: added the plugin" in said, said

    agent_figures("cline-cli", "version", agent.version())
    agent_figures("cline-cli", "system part (bytes)", len(systems[0]))
    agent_figures("cline-cli", "our context per turn (chars)", ", ".join(f"{t}: {len(h)}" for t, _r, h in run.turns))
    assert systems[1:3] == [systems[0], systems[0]], f"{who}: the system part changed between turns 1 and 3"
    assert systems[3] == systems[0].replace(ROOT.encode(), ROOT_V2.encode()), f"{who}: turn 4's system part"
