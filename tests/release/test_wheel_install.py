"""CI's check of the release artifacts (issue 34): the wheel installed, not editable, into a fresh
virtual environment, runs the main job from a folder outside the checkout; the ``.vsix`` carries that
very wheel."""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest
from release_job import isolated_env, main_job, make_project, run

pytestmark = pytest.mark.release


def test_the_wheel_in_a_fresh_venv_runs_the_main_job_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    env = isolated_env(tmp_path, venv / "bin")
    run([sys.executable, "-m", "venv", venv], env, tmp_path)
    installed = run([venv / "bin" / "python", "-m", "pip", "install", wheel], env, tmp_path)
    assert "Successfully installed" in installed.stdout and "context-companion" in installed.stdout
    listed = run([venv / "bin" / "python", "-m", "pip", "show", "-f", "context-companion"], env, tmp_path).stdout
    assert "Editable project location" not in listed and str(Path(__file__).parents[2]) not in listed
    main_job(venv, venv / "bin" / "context-companion", env, make_project(tmp_path / "proj"))


def test_the_vsix_carries_the_wheel_of_its_own_version(wheel: Path, vsix: Path) -> None:
    from context_companion import __version__

    with zipfile.ZipFile(vsix) as z:
        inside = z.read(f"extension/server/{wheel.name}")
        manifest = json.loads(z.read("extension/package.json"))
    assert manifest["version"] == __version__
    assert hashlib.sha256(inside).hexdigest() == hashlib.sha256(wheel.read_bytes()).hexdigest()
