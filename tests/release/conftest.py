"""The release artifacts, installed as users install them: the ones ``python scripts/release.py`` just
put in ``dist/`` (CI runs it first, so the very files it ships are the ones tested); without them, a wheel
built from this checkout here. A ``dist/`` wheel older than the sources it was built from is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"


def _newest_source() -> tuple[float, Path]:
    sources = [REPO / "pyproject.toml", *(REPO / "server").rglob("*.py")]
    return max((p.stat().st_mtime, p) for p in sources)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from context_companion import __version__

    name = f"context_companion-{__version__}-py3-none-any.whl"
    built = DIST / name
    if built.is_file():
        newest, source = _newest_source()
        if built.stat().st_mtime < newest:
            pytest.fail(f"{built} is older than {source}: run python scripts/release.py again", pytrace=False)
        return built
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=600,
    )
    return out / name


@pytest.fixture(scope="session")
def vsix(wheel: Path) -> Path:
    """The .vsix built beside the wheel. Only scripts/release.py makes one (it needs Node.js and npm):
    CI runs it, so there a missing .vsix fails; elsewhere the test that needs it is skipped, saying why."""
    from context_companion import __version__

    path = wheel.parent / f"context-companion-{__version__}.vsix"
    if not path.is_file():
        why = f"no {path}: run python scripts/release.py first"
        if os.environ.get("CI"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return path
