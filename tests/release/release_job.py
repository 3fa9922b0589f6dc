"""The main job of an installed ``context-companion``, run as a user runs it: from a project folder
outside this checkout, with a home, caches and PATH of its own, nothing of the checkout importable."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from stdio_lsp import initialize

REPO = Path(__file__).resolve().parents[2]
ROOT_MEMORY = "Otters review every pull request."
SUBFOLDER_MEMORY = "Handlers answer in JSON."


def isolated_env(root: Path, *front: Path) -> dict[str, str]:
    """A user's environment under ``root``: its own home, XDG folders, runtime dir and an empty
    tiktoken cache; PATH without any folder that holds another ``context-companion`` (the checkout's
    dev install), with ``front`` first."""
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    runtime = root / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTEXT_COMPANION_", "PYTHON", "PIPX_", "UV_TOOL", "XDG_", "VIRTUAL_ENV", "CLAUDE_"))
        and k not in ("TIKTOKEN_CACHE_DIR", "CODEX_HOME")
    }
    others = [
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "context-companion").exists()
    ]
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_RUNTIME_DIR": str(runtime),
            "TIKTOKEN_CACHE_DIR": str(root / "no-tiktoken-cache"),
            "PATH": os.pathsep.join([*(str(p) for p in front), *others]),
        }
    )
    return env


def run(
    cmd: list[str | Path], env: dict[str, str], cwd: Path, stdin: str | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [str(c) for c in cmd], input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )
    assert out.returncode == 0, f"{' '.join(map(str, cmd))}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


def make_project(folder: Path) -> Path:
    """A git project outside the checkout: root AGENTS.md beside a CLAUDE.md (Claude Code reads only
    the latter), and a sub-folder with its own AGENTS.md."""
    assert not folder.resolve().is_relative_to(REPO)
    (folder / ".git").mkdir(parents=True)
    (folder / "AGENTS.md").write_text(f"# Notes\n\n{ROOT_MEMORY}\n", encoding="utf-8")
    (folder / "CLAUDE.md").write_text("Claude: small diffs.\n", encoding="utf-8")
    (folder / "api").mkdir()
    (folder / "api" / "AGENTS.md").write_text(f"{SUBFOLDER_MEMORY}\n", encoding="utf-8")
    (folder / "api" / "x.py").write_text("def handle():\n    return {}\n", encoding="utf-8")
    return folder


def hook_input(project: Path, session: str = "s1") -> str:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(project), "prompt": "hi"}
    )


def main_job(venv: Path, exe: Path, env: dict[str, str], project: Path) -> None:
    """What a user does first with an installation whose environment is ``venv`` and whose command is
    ``exe``: ``--version``, ``instruction``, ``memory``, ``turn``, ``hook``, and ``serve`` answering
    initialize; each from ``project``, and each the installed package, not this checkout."""
    from context_companion import __version__

    python = venv / "bin" / "python"
    where = run([python, "-c", "import context_companion; print(context_companion.__file__)"], env, project).stdout
    assert os.path.realpath(where.strip()).startswith(os.path.realpath(venv) + os.sep), where
    assert run([exe, "--version"], env, project).stdout == f"context-companion {__version__}\n"

    instruction = run([exe, "instruction", "--open", "api/x.py"], env, project)
    assert ROOT_MEMORY in instruction.stdout and SUBFOLDER_MEMORY in instruction.stdout
    memory = json.loads(run([exe, "memory", "--json"], env, project).stdout)
    assert {f["path"] for f in memory["files"]} >= {"AGENTS.md", "api/AGENTS.md"}
    turn = json.loads(run([exe, "turn", "--open", "api/x.py", "--json"], env, project).stdout)
    assert turn["context"]["activeFile"]["path"].endswith("x.py")
    assert [u["path"] for u in turn["memoryUpdates"]] == ["api/AGENTS.md"]

    hooked = run([exe, "hook", "--agent", "claude-code"], env, project, stdin=hook_input(project))
    assert ROOT_MEMORY in json.loads(hooked.stdout)["hookSpecificOutput"]["additionalContext"], hooked

    result = initialize([str(exe), "serve"], project, env=env, cwd=project)
    assert result["serverInfo"] == {"name": "context-companion", "version": __version__}
    assert "contextCompanion.getSystemInstruction" in result["capabilities"]["executeCommandProvider"]["commands"]


def base_python() -> str:
    """The interpreter new environments are made from: this one (a venv's ``python -m venv`` makes a
    venv of the base interpreter, without this venv's packages)."""
    return shutil.which("python3", path=os.path.dirname(sys.executable)) or sys.executable
