"""QWEN.md through the real agents (issue 39): Qwen Code reads it itself, the others never do, so the hook sends
it to those and not to Qwen Code; GitHub Copilot CLI expands what a CLAUDE.md imports itself, so the hook does not
send that file again. Each agent is set up by ``context-companion setup --agent X`` and runs one prompt against the
recording model stub with no editor running (the hook composes from disk), at the versions of ``next_agents.py``.

The workspace carries one marker per file: ``AGENTS.md`` (every one of them reads it), ``QWEN.md``, and a
``CLAUDE.md`` that imports ``CLAUDE.local.md``; the home folder ``~/.qwen/QWEN.md`` (Qwen Code's global memory) and
``~/.config/opencode/AGENTS.md`` (OpenCode's). What each request holds is counted: every marker exactly once,
whether the agent read it or the hook sent it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from model_stub import ModelStub
from next_agents import agents
from test_agent_memory_hooks import context_companion, make_workspace

ROOT = "ROOT-MEMORY-QWEN-TEST"
QWEN = "QWEN-MEMORY-MARKER"
CLAUDE = "CLAUDE-OWN-MARKER"
LOCAL = "CLAUDE-LOCAL-MARKER"
QWEN_GLOBAL = "QWEN-GLOBAL-MARKER"
OPENCODE_GLOBAL = "OPENCODE-GLOBAL-MARKER"
HOME_FILES = {
    ".qwen/QWEN.md": f"{QWEN_GLOBAL}: I prefer British spelling.\n",
    ".config/opencode/AGENTS.md": f"{OPENCODE_GLOBAL}: I review on Fridays.\n",
}
WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n",
    "QWEN.md": f"# Qwen\n\n{QWEN}: answers stay under ten lines.\n",
    "CLAUDE.md": f"# Claude\n\n{CLAUDE}: changelog entries are imperative.\n\n@CLAUDE.local.md\n",
    "CLAUDE.local.md": f"{LOCAL}: the staging database is read-only.\n",
}
PROMPT = "One prompt: what should I keep in mind here?"
# agent → (what it reads itself, what the hook must send), as measured (docs/agents.md)
EXPECTED = {
    # the first of AGENTS.md, CLAUDE.md, CONTEXT.md only; its own global file
    "opencode": ({ROOT, OPENCODE_GLOBAL}, {QWEN, CLAUDE, LOCAL, QWEN_GLOBAL}),
    # CLAUDE.md and its import, expanded by itself; no global file of the others
    "copilot-cli": ({ROOT, CLAUDE, LOCAL}, {QWEN, QWEN_GLOBAL, OPENCODE_GLOBAL}),
    "qwen-code": ({ROOT, QWEN, QWEN_GLOBAL}, {CLAUDE, LOCAL, OPENCODE_GLOBAL}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_qwen_md_reaches_the_agents_that_do_not_read_it_and_only_them(
    name: str, tmp_path: Path, model_stub: ModelStub, agent_figures: object
) -> None:
    agent = agents()[name]()
    agent.install()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    agent.seed(home, ws, model_stub)
    for rel, text in HOME_FILES.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text, encoding="utf-8")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")},
        "HOME": str(home),
        "PATH": path,
        "XDG_RUNTIME_DIR": str(runtime),
        **agent.env(model_stub, ws),
    }
    done = subprocess.run(
        [context_companion(env), "setup", "--agent", name, "--workspace", str(ws)],
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr

    agent.run(PROMPT, ws, env)
    rec = model_stub.wait_for(lambda r: agent.is_turn(r, PROMPT), timeout=30)
    hooked = "\n".join(agent.hook_texts(rec, PROMPT))
    itself, sent = EXPECTED[name]
    counts = {m: rec.text.count(m) for m in (ROOT, QWEN, CLAUDE, LOCAL, QWEN_GLOBAL, OPENCODE_GLOBAL)}
    assert all(n == 1 for n in counts.values()), f"{name}: every marker once in the request, got {counts}"
    assert all(m in hooked for m in sent), f"{name}: the hook did not send {sent - set(hooked.split())}:\n{hooked}"
    assert not [m for m in itself if m in hooked], f"{name}: the hook sent what {name} reads itself:\n{hooked}"
    agent_figures(name, "version", agent.version())
