"""Skill discovery: ``SKILL.md`` files with ``name``/``description`` frontmatter.

Looked for in ``<user config dir>/skills/*/SKILL.md`` and, for each workspace folder,
``.context-companion/skills/*/SKILL.md``. On a name clash the workspace wins over the user's
folder, and skills listed in the agent profile win over both.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from ..frontmatter import split_frontmatter
from ..settings import Skill

log = logging.getLogger(__name__)

WORKSPACE_SKILLS_DIR = Path(".context-companion") / "skills"


def _read_skill(path: Path) -> Skill | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        log.warning("skill %s skipped: %s", path, exc.strerror or exc)
        return None
    fm = split_frontmatter(text)
    if fm.error or not isinstance(fm.data.get("name"), str) or not fm.data["name"].strip():
        log.warning("skill %s skipped: %s", path, fm.error or "frontmatter needs a 'name'")
        return None
    description = fm.data.get("description")
    return Skill(
        name=fm.data["name"].strip(), description=str(description).strip() if description else "", location=str(path)
    )


def _scan(folder: Path) -> list[Skill]:
    if not folder.is_dir():
        return []
    found = []
    for skill_md in sorted(folder.glob("*/SKILL.md")):
        skill = _read_skill(skill_md)
        if skill is not None:
            found.append(skill)
    return found


def discover_skills(
    user_dir: Path | None, workspace_folders: Sequence[Path], explicit: Sequence[Skill] = ()
) -> list[Skill]:
    """All skills, later sources replacing earlier ones by name; sorted by name."""
    by_name: dict[str, Skill] = {}
    sources: list[list[Skill]] = []
    if user_dir is not None:
        sources.append(_scan(user_dir / "skills"))
    for folder in workspace_folders:
        sources.append(_scan(Path(folder) / WORKSPACE_SKILLS_DIR))
    sources.append(list(explicit))
    for source in sources:
        for skill in source:
            by_name[skill.name] = skill
    return [by_name[name] for name in sorted(by_name)]
