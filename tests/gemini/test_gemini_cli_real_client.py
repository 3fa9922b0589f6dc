"""Gemini CLI's own IDE client (@google/gemini-cli-core, pinned in tests/gemini/node) against our
server: see gemini_cli_harness.py. The pinned packages are installed on first run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import node_packages

HERE = Path(__file__).resolve().parent


def test_gemini_cli_ide_client_connects_sees_the_editor_and_round_trips_diffs():
    node_packages.ensure(HERE / "node", "Gemini CLI's own IDE client (@google/gemini-cli-core)")
    proc = subprocess.run(
        [sys.executable, str(HERE / "gemini_cli_harness.py")],
        capture_output=True,
        text=True,
        timeout=240,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-6000:]}"
    assert "ok: Gemini CLI client connected" in proc.stdout
    for step in ("connected", "context", "moved", "diffAccepted", "diffRejected", "refused", "done"):
        assert f"  {step}\n" in proc.stdout
