"""Terminal agents without a clone (issue 34): ``pipx install <wheel>`` and ``uv tool install <wheel>``
give a working ``context-companion`` in a user's home, and ``setup`` from such an install writes hooks
that run that installation. Each in a temporary home; dependencies come from the package index."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from release_job import ROOT_MEMORY, hook_input, isolated_env, main_job, make_project, run

pytestmark = pytest.mark.release


def install(tool: str, wheel: Path, root: Path) -> tuple[Path, Path, dict[str, str]]:
    """Install the wheel with ``tool`` as its documentation says; (its environment, the bin folder
    the command lands in, the user's environment with that folder on PATH)."""
    bin_dir = root / "home" / ".local" / "bin"
    env = isolated_env(root, bin_dir)
    if tool == "pipx":
        env.update({"PIPX_HOME": str(root / "pipx"), "PIPX_BIN_DIR": str(bin_dir), "PIPX_MAN_DIR": str(root / "man")})
        run([sys.executable, "-m", "pipx", "install", wheel], env, root)
        venv = root / "pipx" / "venvs" / "context-companion"
    else:
        env.update({"UV_TOOL_DIR": str(root / "uv-tools"), "UV_TOOL_BIN_DIR": str(bin_dir)})
        run([sys.executable, "-m", "uv", "tool", "install", "--python", sys.executable, wheel], env, root)
        venv = root / "uv-tools" / "context-companion"
    assert (venv / "bin" / "python").exists(), sorted(p.name for p in venv.parent.iterdir())
    return venv, bin_dir, env


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_a_tool_install_runs_the_main_job_and_setup_hooks_run_that_installation(
    tool: str, wheel: Path, tmp_path: Path
) -> None:
    venv, bin_dir, env = install(tool, wheel, tmp_path)
    exe = bin_dir / "context-companion"
    assert shutil.which("context-companion", path=env["PATH"]) == str(exe)
    project = make_project(tmp_path / "proj")
    main_job(venv, exe, env, project)

    said = run(["context-companion", "setup", "--agent", "claude-code"], env, project).stdout
    assert said.startswith("Claude Code: added the hooks SessionStart, UserPromptSubmit to ")
    settings = json.loads((project / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    program = shlex.split(command)[0]
    found = program if os.path.isabs(program) else shutil.which(program, path=env["PATH"])
    assert found and os.path.realpath(found).startswith(os.path.realpath(venv) + os.sep), (command, found)

    # Claude Code runs the hook through a shell, from the project, with the user's environment.
    agent = subprocess.run(
        ["sh", "-c", command],
        input=hook_input(project, "agent-1"),
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=120,
    )
    assert agent.returncode == 0 and agent.stderr == "", agent.stderr
    assert ROOT_MEMORY in json.loads(agent.stdout)["hookSpecificOutput"]["additionalContext"]
