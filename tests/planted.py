"""Files another program or user leaves in a folder above a project: a ``.git`` and the memory and rule files
of every vendor. Shared by tests/conftest.py (the suite's sealing) and the ownership tests."""

from __future__ import annotations

import os
from pathlib import Path

STRANGER = 54321  # no such user: a uid of "another user" (root may chown to any uid)
PLANTED = "PLANTED ABOVE THE PROJECT"


def plant(folder: Path, uid: int | None = None, *, marker: bool = True) -> None:
    """A ``.git`` (when ``marker``), ``AGENTS.md``, ``CLAUDE.md``, ``GEMINI.md`` and an always-on
    ``.cursor/rules/x.mdc`` in ``folder``, owned by ``uid`` (None: by whoever runs this)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    if marker:
        (folder / ".git").mkdir(exist_ok=True)
        made.append(folder / ".git")
    for name in ("AGENTS.md", "CLAUDE.md", "GEMINI.md"):
        (folder / name).write_text(f"{PLANTED}: {name}\n", encoding="utf-8")
        made.append(folder / name)
    rules = folder / ".cursor" / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    (rules / "x.mdc").write_text(f"---\nalwaysApply: true\n---\n{PLANTED}: a rule\n", encoding="utf-8")
    made += [folder / ".cursor", rules, rules / "x.mdc"]
    if uid is not None:
        for path in made:
            os.chown(path, uid, uid, follow_symlinks=False)
