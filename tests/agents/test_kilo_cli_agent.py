"""The memory Kilo CLI does not read itself reaches it through our plugin, set up only by ``context-companion setup
--agent kilo`` (run as a user runs it: this installation's console script). The real Kilo CLI (the pinned linux-x64
binary package, ``kilo_cline.py``) runs one session of three turns against the recording model stub (``kilo run``,
then ``kilo run -c``), offline, with an editor's server running for the folder (Neovim with our plugin,
``editor_terminal.py``) that holds ``src/app.py`` as the active file.

The workspace carries one marker word per file: what Kilo CLI reads itself (a root ``AGENTS.md``,
``.kilocoderules``, ``.kilo/rules/style.md``) and what it does not (``CLAUDE.md``, beside an ``AGENTS.md``; the
active file's ``src/AGENTS.md``; a ``.cursor/rules`` glob rule for ``src/**/*.py``).

1. first turn: every text that applies is in the request exactly once; what Kilo CLI lacks is in the part our
   plugin adds to the user's message, never in the system part, and nothing it reads itself comes from us;
2. nothing changed: our plugin adds nothing;
3. after ``CLAUDE.md`` is edited: the change arrives in this turn's part from us, once.

Kilo CLI's system part (its cached prefix) is byte-identical through the three turns: nothing it reads changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from editor_terminal import EditorTerminal
from kilo_cline import Blackhole, KiloCli, scratch_env, system_text, user_texts
from model_stub import ModelStub, Recorded
from nvim_harness import ACTIVE_FILE_LUA, lua_str
from test_agent_memory_hooks import context_companion, make_workspace

ROOT, KILOCODERULES, KILO_RULES = "ROOT-MEMORY-KILO", "KILOCODERULES-KILO", "KILO-RULES-DIR-KILO"
CLAUDE_V1, CLAUDE_V2 = "CLAUDE-MEMORY-KILO-ONE", "CLAUDE-MEMORY-KILO-TWO"
NESTED, CURSOR_RULE = "SRC-MEMORY-KILO", "CURSOR-RULE-KILO"
MARKERS = (ROOT, KILOCODERULES, KILO_RULES, CLAUDE_V1, CLAUDE_V2, NESTED, CURSOR_RULE)
OWN = {ROOT, KILOCODERULES, KILO_RULES}  # what Kilo CLI 7.7.9 reads itself (measured: test_kilo_cline.py)

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    "CLAUDE.md": f"# Working here\n\n{CLAUDE_V1}: changelog entries are written in the imperative.\n",
    ".kilocoderules": f"{KILOCODERULES}: prefer small commits.\n",
    ".kilo/rules/style.md": f"# Style\n\n{KILO_RULES}: name things for what they do.\n",
    ".cursor/rules/python-style.mdc": (
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
        f"{CURSOR_RULE}: every function has type hints.\n"
    ),
    "src/AGENTS.md": f"# src\n\n{NESTED}: src holds the application code.\n",
    "src/app.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
}


def is_kilos_own(text: str) -> bool:
    """Kilo CLI's own part of every user message: the time and the folders, in ``<environment_details>``."""
    return text.strip().startswith("<environment_details>") and text.strip().endswith("</environment_details>")


@dataclass
class Run:
    agent: KiloCli
    editor: EditorTerminal
    stub: ModelStub
    env: dict[str, str]
    blackhole: Blackhole
    turns: list[tuple[str, Recorded, str]] = field(default_factory=list)

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        """One more turn of the session: its main request and the text beside the prompt in its user message."""
        after = self.stub.next_seq
        self.agent.run(prompt, self.editor.workspace, self.env)
        try:
            rec = self.stub.wait_for(lambda r: self.agent.is_turn(r, prompt), timeout=30, after=after)
        except TimeoutError as exc:
            sent = [f"{r.seq} {r.path}: …{r.text[-800:]}" for r in self.stub.requests[after:]]
            raise AssertionError(f"turn {label}: {exc}\n" + "\n".join(sent)) from None
        added = "\n".join(t for t in self.agent.added_texts(rec, prompt) if not is_kilos_own(t))
        self.turns.append((label, rec, added))
        return rec, added

    def wait_memory(self, holds: Any, what: str, timeout: float = 30) -> None:
        self.editor.wait_memory(holds, what, timeout)


@pytest.fixture
def run(tmp_path: Path, model_stub: ModelStub) -> Iterator[Run]:
    agent = KiloCli()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path})
    with Blackhole() as hole:
        env = {**editor.env, **hole.env(), **agent.env(model_stub, home)}
        try:
            yield Run(agent, editor, model_stub, env, hole)
        finally:
            agent.stop()
            editor.stop()


def counts(rec: Recorded) -> dict[str, int]:
    text = json.dumps(rec.json, ensure_ascii=False)
    return {m: text.count(m) for m in MARKERS}


def assert_once(label: str, rec: Recorded, applies: set[str], seen: set[str]) -> None:
    for marker, n in counts(rec).items():
        if marker in applies:
            assert n == 1, f"turn {label}: {marker} is in the request {n} times, not once: {counts(rec)}"
        elif marker in seen:
            assert n <= 1, f"turn {label}: {marker} is in the request {n} times: {counts(rec)}"
        else:
            assert n == 0, f"turn {label}: {marker} does not apply, yet is in the request {n} times"


def test_kilo_cli_set_up_by_setup_alone_gets_what_it_lacks_once_and_keeps_its_prefix(
    run: Run, agent_figures: Any
) -> None:
    ws, who = run.editor.workspace, f"Kilo CLI {run.agent.version()}"
    done = subprocess.run(
        [context_companion(run.env), "setup", "--agent", "kilo", "--workspace", str(ws)],
        env=run.env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"setup --agent kilo failed: {done.stderr}"
    assert (ws / ".kilo" / "plugins" / "context-companion.js").is_file(), done.stdout
    run.editor.start(["src/app.py"])
    active = str(ws / "src" / "app.py")
    run.editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(active)}", "src/app.py active")

    lacking = {CLAUDE_V1, NESTED, CURSOR_RULE}
    base = OWN | lacking
    seen = set(base)
    first, added = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    assert_once("1", first, base, seen)
    assert {m for m in MARKERS if m in added} == lacking, f"{who} turn 1: our part holds:\n{added}"
    system = system_text(first)
    assert {m for m in MARKERS if m in system} >= OWN, f"{who} no longer reads {OWN} itself:\n{system[-2000:]}"
    assert not lacking & {m for m in MARKERS if m in system}, f"{who}: our text is in the system part"

    second, quiet = run.turn("2", "Turn two: anything else to know.")
    assert quiet == "", f"{who} turn 2: nothing changed, yet our plugin added:\n{quiet}"
    assert_once("2", second, base, seen)

    (ws / "CLAUDE.md").write_text(
        f"# Working here\n\n{CLAUDE_V2}: changelog entries are written in the imperative.\n", encoding="utf-8"
    )
    run.wait_memory(lambda r: CLAUDE_V2 in str(r), "the edited CLAUDE.md")
    seen.add(CLAUDE_V2)
    third, edited = run.turn("3", "Turn three: tell me what changed.")
    assert CLAUDE_V2 in edited and CLAUDE_V1 not in edited, f"{who} turn 3: want the change of CLAUDE.md:\n{edited}"
    assert not OWN & {m for m in MARKERS if m in edited}, f"{who} turn 3: we sent what it reads itself:\n{edited}"
    assert_once("3", third, (base - {CLAUDE_V1}) | {CLAUDE_V2}, seen)

    for label, rec, text in run.turns:
        assert sum(t.count(CLAUDE_V2) for t in user_texts(rec)) == counts(rec)[CLAUDE_V2], label
        assert not OWN & {m for m in MARKERS if m in text}, f"{who} turn {label}: we sent its own files:\n{text}"
    systems = [run.agent.system_part(rec) for _label, rec, _text in run.turns]
    agent_figures("kilo-cli", "version", run.agent.version())
    agent_figures("kilo-cli", "our part per turn (chars)", ", ".join(f"{t}: {len(a)}" for t, _r, a in run.turns))
    agent_figures("kilo-cli", "system part (bytes)", len(systems[0]))
    agent_figures("kilo-cli", "tried beyond loopback (refused)", ", ".join(sorted(run.blackhole.hosts())) or "nothing")
    assert all(s == systems[0] for s in systems), f"{who}: the system part changed between turns"


def test_setup_user_puts_the_plugin_where_kilo_loads_it_from_its_config_dir(
    tmp_path: Path, model_stub: ModelStub
) -> None:
    """``setup --agent kilo --user`` with ``$KILO_CONFIG_DIR`` set writes into that folder's ``plugins``, and Kilo
    CLI loads it from there: the memory it lacks arrives (from disk: no editor runs here)."""
    agent = KiloCli()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    config = home / "kilo-config"
    with Blackhole() as hole:
        env = {**scratch_env(home), **hole.env(), **agent.env(model_stub, home), "KILO_CONFIG_DIR": str(config)}
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
        done = subprocess.run(
            [context_companion(env), "setup", "--agent", "kilo", "--user"],
            env=env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert (config / "plugins" / "context-companion.js").is_file() and not (ws / ".kilo" / "plugins").exists()
        prompt = "One turn: what should I keep in mind?"
        after = model_stub.next_seq
        try:
            agent.run(prompt, ws, env)
        finally:
            agent.stop()
        rec = model_stub.wait_for(lambda r: agent.is_turn(r, prompt), timeout=30, after=after)
    added = "\n".join(t for t in agent.added_texts(rec, prompt) if not is_kilos_own(t))
    assert CLAUDE_V1 in added and not OWN & {m for m in MARKERS if m in added}, added
    assert CLAUDE_V1 not in system_text(rec)
