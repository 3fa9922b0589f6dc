"""``context-companion agents``: the list editors show without a server, and where it says setup writes is
where setup writes (the VS Code palette's and Neovim's details come from it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args], capture_output=True, text=True, env=env, timeout=60
    )


def listed() -> list[dict]:
    out = cli("agents", "--json")
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout)["agents"])


def test_the_plain_list_names_each_agent_its_short_names_and_where_setup_writes() -> None:
    out = cli("agents")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    agents = listed()
    assert len(lines) == len(agents)
    for line, agent in zip(lines, agents, strict=True):
        assert line.startswith(agent["id"])
        assert agent["name"] in line
        for short in agent["shortNames"]:
            assert short in line
        if agent["setup"]:
            assert agent["setup"]["project"] in line and agent["setup"]["user"] in line


def test_bad_arguments_exit_2_with_one_line() -> None:
    out = cli("agents", "--jsn")
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("user", [False, True], ids=["project", "user"])
def test_setup_writes_where_the_list_says(tmp_path: Path, user: bool) -> None:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    project = tmp_path / "project"
    project.mkdir()
    # The default folders: none of the variables that move an agent's config folder.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_HOME") and not k.startswith(("CLAUDE_", "CONTEXT_COMPANION_", "XDG_"))
    }
    env.update(HOME=str(home), XDG_STATE_HOME=str(tmp_path / "state"), CONTEXT_COMPANION_CONFIG_DIR=str(home / "cfg"))
    with_setup = [a for a in listed() if a["setup"] is not None]
    assert with_setup, "no agent with setup listed"
    for agent in with_setup:
        more = ["--user"] if user else []
        done = cli("setup", "--agent", agent["id"], "--workspace", str(project), *more, env=env)
        assert done.returncode == 0, (agent["id"], done.stderr)
        shown = agent["setup"]["user" if user else "project"]
        path = home / shown.removeprefix("~/") if user else project / shown
        assert path.is_file(), (agent["id"], shown, sorted(str(p) for p in tmp_path.rglob("*") if p.is_file()))
