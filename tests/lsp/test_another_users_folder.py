"""The language server's instruction with another user's ``.git``, memory files and always-on rule in the
folder above the workspace (tests/security/test_foreign_owner.py has the commands): none of it is the
project, none of it reaches the instruction, and ``showMemory`` says what was skipped and why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from planted import PLANTED, STRANGER, plant

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="handing files to another uid (chown) needs root"
)


async def test_the_instruction_holds_nothing_of_another_users_folder_above(start, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    plant(shared, STRANGER)
    work = shared / "work"
    work.mkdir()
    (work / "AGENTS.md").write_text("Mine: run make check.\n")
    h = await start(work, settings={"environment": {"placement": "off"}})
    instruction = await h.command("contextCompanion.getSystemInstruction", {})
    assert "Mine: run make check." in instruction["text"]
    assert PLANTED not in instruction["text"] and "owned by another user" not in instruction["text"]
    assert [f["path"] for f in instruction["memoryFiles"]] == ["AGENTS.md"]
    shown = await h.command("contextCompanion.showMemory", {})
    assert (
        f"skipped {shared / '.git'}: owned by another user (uid {STRANGER}); {shared} is not taken as the project root"
    ) in shown["warnings"]
