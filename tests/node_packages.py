"""Installs a test harness's pinned npm packages (``npm ci``) when they are missing or older than
its lock file, so ``python -m pytest`` works on a fresh clone. Node and npm are required: without
them the calling test fails and says so (never skips)."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest


def ensure(node_dir: Path, what: str) -> str:
    """``npm ci`` in ``node_dir`` if needed; returns the path of ``node``."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(f"node and npm are needed for {what}")
    installed = node_dir / "node_modules" / ".package-lock.json"
    lock = node_dir / "package-lock.json"
    # Test processes run side by side (pytest-xdist): one installs, the others wait for it and
    # find the packages there (the lock file itself is the lock; npm ci only reads it).
    with open(lock, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                cwd=node_dir,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert done.returncode == 0, f"npm ci failed in {node_dir}:\n{done.stderr[-4000:]}"
    return node
