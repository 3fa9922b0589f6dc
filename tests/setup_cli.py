"""What the tests of `context-companion setup` for one agent share: the command line run as a user runs it, from a
home of its own (``user_env``) in a project folder whose path has a space (``project``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
EXE = str(BIN / "context-companion")
PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"  # a PATH without this installation's context-companion


def cli(
    *args: str, env: dict[str, str], drop: tuple[str, ...] = (), script: bool = False
) -> subprocess.CompletedProcess[str]:
    """``context-companion ARGS`` (the console script with ``script``, else ``python -m``) with ``env`` over this
    process's environment, without our variables and those starting with ``drop`` (the agent's own)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", *drop))}
    full.update(env)
    argv = [EXE] if script else [sys.executable, "-m", "context_companion"]
    return subprocess.run([*argv, *args], capture_output=True, text=True, env=full, timeout=60)


def user_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "HOME": str(home),
        "CONTEXT_COMPANION_CONFIG_DIR": str(home / "cfg"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "PATH": PLAIN_PATH,
    }


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "my project"
    (folder / ".git").mkdir(parents=True)
    return folder
