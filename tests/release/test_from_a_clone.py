"""The README's two commands from a clone, typed as a newcomer types them: a fresh ``git clone`` of this checkout
(its last commit), a bare PATH (``/usr/bin:/bin`` and the folder of a ``python3`` ≥ 3.10 that has ``venv``), no
environment active, no ``python`` on PATH. The first sets up and runs the main job on the clone; the second runs
the default suite, here on the tests that start the tools the dev install brought (Neovim beside the clone's
``.venv/bin/python``, which a bare PATH does not find) so that this test stays minutes, not the whole suite twice.
It needs the package index (the dev install), as the other tests here do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import run_figures

pytestmark = pytest.mark.release

REPO = Path(__file__).resolve().parents[2]
BARE = ["/usr/bin", "/bin"]
# pip's cache of the user who runs the tests (read now: the tests' own HOME is a temporary folder).
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
# The machine's way to the package index: pip's settings and proxies, as the user's shell has them.
KEPT = ("PIP_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_")
# The tests of the second command: the ones that start Neovim from the dev install, and the README's own.
SELECTION = ["tests/editors/test_neovim_turn_view.py", "tests/test_readme.py"]


def python3_with_venv() -> str:
    """A ``python3`` ≥ 3.10 that has ``venv`` and ``ensurepip`` (Debian and Ubuntu: the ``python3-venv`` package)."""
    candidates = [shutil.which("python3", path=os.pathsep.join(BARE)), "/usr/local/bin/python3"]
    candidates.append(getattr(sys, "_base_executable", None))
    for python in filter(None, candidates):
        check = [python, "-c", "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))"]
        if os.access(python, os.X_OK) and subprocess.run(check, capture_output=True, timeout=60).returncode == 0:
            return python
    pytest.fail(f"no python3 >= 3.10 with venv among {candidates}", pytrace=False)


def readme_commands(readme: str) -> list[str]:
    section = readme.split("\n## From a clone\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_the_readmes_two_commands_work_from_a_fresh_clone_with_a_bare_path(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    clone = tmp_path / "context-companion"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=300, capture_output=True)
    setup, tests = readme_commands((clone / "README.md").read_text(encoding="utf-8"))
    python = python3_with_venv()
    path = [*BARE, *([] if os.path.dirname(python) in BARE else [os.path.dirname(python)])]
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k.startswith(KEPT)}
    env.update({"PATH": os.pathsep.join(path), "HOME": str(home), "LANG": "C.UTF-8", "PIP_CACHE_DIR": PIP_CACHE})

    started = time.monotonic()
    first = subprocess.run(["sh", "-c", setup], cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - started
    assert first.returncode == 0, first.stderr[-4000:]
    # The main job on the clone itself: its AGENTS.md, included.
    assert any(line.startswith("+ AGENTS.md") for line in first.stdout.splitlines()), first.stdout
    assert (clone / ".venv" / "bin" / "nvim").exists()

    started = time.monotonic()
    second = subprocess.run(
        ["sh", "-c", f"{tests} {' '.join(SELECTION)}"], cwd=clone, env=env, capture_output=True, text=True, timeout=1800
    )
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-2000:]
    assert " passed" in second.stdout.splitlines()[-1] and "skipped" not in second.stdout.splitlines()[-1]
    section = "release figures"
    run_figures.record_figure(
        request.node, section, "from a clone: first command (venv, dev install, memory)", f"{took:.0f} s"
    )
    second_took = f"{time.monotonic() - started:.0f} s"
    run_figures.record_figure(
        request.node, section, f"from a clone: second command on {len(SELECTION)} files", second_took
    )
