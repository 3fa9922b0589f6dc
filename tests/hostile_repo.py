"""A repository that runs code of its own when Python imports from it: our package's name, a dependency's, and
the start-up files Python imports from its path. Each file writes a marker (outside the repository) and exits 7:
a test that finds no marker proves no process we started imported from the repository."""

from __future__ import annotations

from pathlib import Path

HOSTILE_MODULES = ("context_companion/__init__.py", "pydantic/__init__.py", "sitecustomize.py", "usercustomize.py")


def plant_hostile(folder: Path, markers: Path) -> None:
    markers.mkdir(exist_ok=True)
    for name in HOSTILE_MODULES:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(markers / name.replace('/', '_'))!r}, 'w').write('ran')\nraise SystemExit(7)\n")
