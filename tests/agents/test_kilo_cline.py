"""What Kilo CLI and Cline CLI read and send themselves, pinned by what they sent to the model (groundwork for
issue 40, which adds both through their plugins). Each agent runs offline against the recording stub
(``kilo_cline.py``), one process per turn of one session, in a workspace with one marker word per file:

- a root ``AGENTS.md`` (both read it), a ``CLAUDE.md`` and a nested ``sub/AGENTS.md`` (neither reads them), and
  each agent's own rule files: ``.kilocoderules``, ``.kilo/rules/`` and ``.kilocode/rules/`` for Kilo CLI,
  ``.cline/rules/`` and ``.clinerules/`` for Cline CLI;
- a test plugin where the agent loads plugins (``.kilo/plugins/`` with OpenCode's ``chat.message`` event;
  ``.cline/plugins/`` with ``hooks.beforeRun`` returning ``appendContext``) that adds the text of a file the
  test writes anew before each turn, and records what the agent passed it.

Pinned: which files each reads; the plugin's text reaches this turn's user message(s), never the system part,
every turn; the system part is byte-identical while nothing changes; an ``AGENTS.md`` edited between turns is in
the agent's own system part the next turn (each turn is a new process that reads it again); how long a plugin
text arrives whole (30,000 and 100,000 characters). Every assertion names the agent and its version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kilo_cline import Blackhole, TurnAgent, agents, drive, system_text, user_texts
from model_stub import ModelStub, Recorded

ROOT, ROOT_V2 = "ROOT-MEMORY-KC", "ROOT-MEMORY-KC-EDITED"
CLAUDE, NESTED = "CLAUDE-MEMORY-KC", "NESTED-MEMORY-KC"
KILOCODERULES, KILO_RULES, KILOCODE_RULES = "KILOCODERULES-KC", "KILO-RULES-DIR-KC", "KILOCODE-RULES-DIR-KC"
CLINE_RULES, CLINERULES = "CLINE-RULES-DIR-KC", "CLINERULES-DIR-KC"
NOTE = "PLUGIN-NOTE-KC"

COMMON = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    "CLAUDE.md": f"# Working here\n\n{CLAUDE}: changelog entries are written in the imperative.\n",
    "sub/AGENTS.md": f"# sub\n\n{NESTED}: the sub folder holds helpers.\n",
    "sub/helpers.py": "def helper() -> int:\n    return 1\n",
}
OWN = {
    "kilo-cli": {
        ".kilocoderules": f"{KILOCODERULES}: prefer small commits.\n",
        ".kilo/rules/style.md": f"# Style\n\n{KILO_RULES}: name things for what they do.\n",
        ".kilocode/rules/style.md": f"# Style\n\n{KILOCODE_RULES}: keep lines short.\n",
    },
    "cline-cli": {
        ".cline/rules/style.md": f"# Style\n\n{CLINE_RULES}: name things for what they do.\n",
        ".clinerules/style.md": f"# Style\n\n{CLINERULES}: keep lines short.\n",
    },
}
# What each reads itself, as measured with the pinned versions (docs/agents.md).
READS = {"kilo-cli": {ROOT, KILOCODERULES, KILO_RULES}, "cline-cli": {ROOT, CLINE_RULES}}
MARKERS = (ROOT, ROOT_V2, CLAUDE, NESTED, KILOCODERULES, KILO_RULES, KILOCODE_RULES, CLINE_RULES, CLINERULES)

# The test plugins, in our own words. __NOTE__ is the file whose text they add, __SEEN__ where they write the
# names of the fields the agent passed them.
KILO_PLUGIN = """// Test plugin: adds the text of one file to the user's message on every turn.
import { readFileSync, writeFileSync } from "node:fs";

const NOTE = __NOTE__;
const SEEN = __SEEN__;
let calls = 0;

export const TestNote = async () => ({
  "chat.message": async (input, output) => {
    calls += 1;
    writeFileSync(SEEN, JSON.stringify({ input: Object.keys(input).sort(), output: Object.keys(output).sort() }));
    // A part id the way the agent makes them: "prt_", 12 hex digits of time, 14 more characters.
    const time = (BigInt(Date.now()) * 4096n + 4000n + BigInt(calls)).toString(16).padStart(12, "0").slice(-12);
    output.parts.push({
      id: "prt_" + time + "testnote000000",
      sessionID: input.sessionID,
      messageID: output.message.id,
      type: "text",
      text: readFileSync(NOTE, "utf8"),
      synthetic: true,
    });
  },
});
"""
CLINE_PLUGIN = """// Test plugin: adds the text of one file to the context of every run.
import { readFileSync, writeFileSync } from "node:fs";

const NOTE = __NOTE__;
const SEEN = __SEEN__;

export default {
  name: "test-note",
  manifest: { capabilities: ["hooks"] },
  hooks: {
    beforeRun: async (input) => {
      writeFileSync(SEEN, JSON.stringify({ input: Object.keys(input).sort(), snapshot: Object.keys(input.snapshot ?? {}).sort() }));
      return { appendContext: readFileSync(NOTE, "utf8") };
    },
  },
};
"""
PLUGIN_AT = {
    "kilo-cli": (".kilo/plugins/test-note.js", KILO_PLUGIN),
    "cline-cli": (".cline/plugins/test-note.js", CLINE_PLUGIN),
}


@dataclass
class Setup:
    agent: TurnAgent
    workspace: Path
    home: Path
    note: Path
    seen: Path
    stub: ModelStub
    blackhole: Blackhole

    def label(self) -> str:
        return f"{self.agent.name} {self.agent.version()}"

    def run(self, prompts: list[str], notes: list[str], between: Any = None) -> list[Recorded]:
        def before(i: int) -> None:
            self.note.write_text(notes[i - 1], encoding="utf-8")
            if between is not None:
                between(i)

        self.note.write_text(notes[0], encoding="utf-8")
        return drive(self.agent, self.workspace, self.home, self.stub, self.blackhole, prompts, before)


def make(
    tmp_path: Path, name: str, files: dict[str, str], stub: ModelStub, blackhole: Blackhole, plugin_at: str = ""
) -> Setup:
    """The workspace with ``files`` and the test plugin at ``plugin_at`` (the agent's project plugin folder by
    default; ``~/…`` is in the scratch HOME)."""
    agent = agents()[name]()
    agent.install()
    ws = (tmp_path / "project").resolve()
    home = (tmp_path / "home").resolve()
    note, seen = tmp_path / "note.txt", tmp_path / "seen.json"
    where, plugin = PLUGIN_AT[name]
    if plugin_at.startswith("~/"):
        files = {**files, str(home / plugin_at[2:]): plugin}
        where = ""
    elif plugin_at:
        where = plugin_at
    if where:
        files = {**files, where: plugin}
    for rel, text in files.items():
        path = ws / rel  # an absolute ``rel`` (in HOME) stays as it is
        path.parent.mkdir(parents=True, exist_ok=True)
        text = text.replace("__NOTE__", json.dumps(str(note))).replace("__SEEN__", json.dumps(str(seen)))
        path.write_text(text, encoding="utf-8")
    return Setup(agent, ws, home, note, seen, stub, blackhole)


@pytest.fixture
def blackhole() -> Iterator[Blackhole]:
    with Blackhole() as hole:
        yield hole


def found(rec: Recorded) -> set[str]:
    text = json.dumps(rec.json, ensure_ascii=False)
    return {m for m in MARKERS if m in text}


def note_for(turn: int) -> str:
    return f"{NOTE} {turn}: the test plugin's note for turn {turn}."


@pytest.mark.parametrize("name", sorted(agents()))
def test_what_kilo_and_cline_read_and_where_a_plugin_adds_text_turn_after_turn(
    name: str, tmp_path: Path, model_stub: ModelStub, blackhole: Blackhole, agent_figures: Any
) -> None:
    s = make(tmp_path, name, {**COMMON, **OWN[name]}, model_stub, blackhole)
    prompts = ["Turn one: what should I keep in mind?", "Turn two: anything else?", "Turn three: what changed?"]

    def edit(i: int) -> None:
        if i == 3:
            (s.workspace / "AGENTS.md").write_text(f"# Project\n\n{ROOT_V2}: otters review every pull request.\n")

    turns = s.run(prompts, [note_for(i) for i in (1, 2, 3)], edit)
    who = s.label()

    reads = found(turns[0])
    assert reads == READS[name], f"{who} read {sorted(reads)} itself, not {sorted(READS[name])}"
    for i, (rec, prompt) in enumerate(zip(turns, prompts, strict=True), 1):
        system = system_text(rec)
        added = s.agent.added_texts(rec, prompt)
        assert NOTE not in system, f"{who} turn {i}: the plugin's text is in the system part"
        assert any(note_for(i) in t for t in added), f"{who} turn {i}: the plugin's note is not in the turn:\n{added}"
        assert sum(t.count(NOTE) for t in user_texts(rec)) == 1, f"{who} turn {i}: want the note once:\n{added}"
    systems = [s.agent.system_part(rec) for rec in turns]
    assert systems[0] == systems[1], f"{who}: the system part changed between turns 1 and 2 with nothing changed"
    assert ROOT_V2 in system_text(turns[2]) and ROOT not in system_text(turns[2]).replace(ROOT_V2, ""), (
        f"{who}: AGENTS.md edited before turn 3 is not what the agent itself sent in turn 3"
    )
    assert blackhole.hosts() <= ALLOWED_TRIES[name], f"{who} tried {sorted(blackhole.hosts())}"

    seen = json.loads(s.seen.read_text(encoding="utf-8"))
    agent_figures(name, "version", s.agent.version())
    agent_figures(name, "reads itself", ", ".join(sorted(reads)))
    agent_figures(name, "plugin input fields", json.dumps(seen))
    agent_figures(name, "system part (bytes)", len(systems[0]))
    agent_figures(name, "tried beyond loopback (refused)", ", ".join(sorted(blackhole.hosts())) or "nothing")
    assert seen == PLUGIN_INPUT[name], f"{who}: the plugin was passed {seen}"


# Hosts each tried through the refusing proxy (its analytics, a model catalogue), as measured.
ALLOWED_TRIES = {"kilo-cli": set(), "cline-cli": {"data.cline.bot", "models.dev"}}
# The fields each passed the plugin (the names only), as measured.
PLUGIN_INPUT: dict[str, Any] = {
    "kilo-cli": {"input": ["agent", "messageID", "model", "sessionID", "variant"], "output": ["message", "parts"]},
    "cline-cli": {
        "input": ["snapshot"],
        "snapshot": [
            "agentId",
            "conversationId",
            "iteration",
            "messages",
            "pendingToolCalls",
            "runId",
            "status",
            "usage",
        ],
    },
}
# Each agent's other rule folder is a fallback: read when the folder it prefers is missing (all else as above).
FALLBACK = {"kilo-cli": ".kilo/rules/style.md", "cline-cli": ".cline/rules/style.md"}
FALLBACK_READS = {"kilo-cli": {ROOT, KILOCODERULES, KILOCODE_RULES}, "cline-cli": {ROOT, CLINERULES}}


@pytest.mark.parametrize("name", sorted(agents()))
def test_the_older_rule_folder_is_read_only_without_the_newer(
    name: str, tmp_path: Path, model_stub: ModelStub, blackhole: Blackhole, agent_figures: Any
) -> None:
    files = {k: v for k, v in {**COMMON, **OWN[name]}.items() if k != FALLBACK[name]}
    s = make(tmp_path, name, files, model_stub, blackhole)
    (turn,) = s.run(["One turn: what should I keep in mind?"], [note_for(1)])
    reads = found(turn)
    agent_figures(name, f"reads without {FALLBACK[name]}", ", ".join(sorted(reads)))
    assert reads == FALLBACK_READS[name], f"{s.label()}: without {FALLBACK[name]}, it read {sorted(reads)}"


SIZES = (30_000, 100_000)


def long_note(size: int) -> str:
    """Exactly ``size`` characters: numbered words between two markers, so a cut shows where."""
    head, tail = f"{NOTE}-START-{size} ", f" {NOTE}-END-{size}"
    words = " ".join(f"w{i:06d}" for i in range(size // 8 + 1))
    return (head + words)[: size - len(tail)] + tail


@pytest.mark.parametrize("name", sorted(agents()))
def test_how_long_a_plugin_text_arrives_whole(
    name: str, tmp_path: Path, model_stub: ModelStub, blackhole: Blackhole, agent_figures: Any
) -> None:
    s = make(tmp_path, name, dict(COMMON), model_stub, blackhole)
    notes = [long_note(n) for n in SIZES]
    prompts = [f"Turn {i}: a long note." for i in (1, 2)]
    turns = s.run(prompts, notes)
    arrived = []
    for size, note, rec, prompt in zip(SIZES, notes, turns, prompts, strict=True):
        added = "\n".join(s.agent.added_texts(rec, prompt))
        whole = note in added
        start = added.find(f"{NOTE}-START-{size}")
        arrived.append(f"{size}: {'whole' if whole else 'cut'} ({len(added) - max(start, 0)} chars from its start)")
        assert whole, f"{s.label()}: a plugin text of {size:,} characters did not arrive whole: {arrived[-1]}"
    agent_figures(name, "plugin text arrives", "; ".join(arrived))


# Other folders each loads plugins from, as measured: Kilo CLI's older project folder and its user folder,
# Cline CLI's user folder.
PLUGIN_FOLDERS = [
    ("kilo-cli", ".kilocode/plugins/test-note.js"),
    ("kilo-cli", "~/.config/kilo/plugins/test-note.js"),
    ("cline-cli", "~/.cline/plugins/test-note.js"),
]


@pytest.mark.parametrize(("name", "where"), PLUGIN_FOLDERS)
def test_a_plugin_in_the_other_folders_adds_its_text_too(
    name: str, where: str, tmp_path: Path, model_stub: ModelStub, blackhole: Blackhole
) -> None:
    s = make(tmp_path, name, dict(COMMON), model_stub, blackhole, plugin_at=where)
    prompt = "One turn: what should I keep in mind?"
    (turn,) = s.run([prompt], [note_for(1)])
    added = s.agent.added_texts(turn, prompt)
    assert any(note_for(1) in t for t in added), f"{s.label()}: a plugin in {where} added nothing:\n{added}"
    assert NOTE not in system_text(turn), f"{s.label()}: the plugin's text from {where} is in the system part"
