"""What the release artifacts hold besides the code: the license text in each (the repository root's LICENSE,
the one ``pyproject.toml``'s ``license = "MIT"`` means), and an sdist that holds what builds the package and no
stray part of the test suite (setuptools' default used to add ``tests/test_*.py`` alone, without the conftest
they need; the suite runs from a clone)."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.release

REPO = Path(__file__).resolve().parents[2]
LICENSE = (REPO / "LICENSE").read_bytes()


@pytest.fixture(scope="module")
def sdist(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from context_companion import __version__

    built = wheel.parent / f"context_companion-{__version__}.tar.gz"
    if built.is_file():
        return built
    out = tmp_path_factory.mktemp("sdist")
    cmd = [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(REPO)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return out / built.name


def test_the_repository_says_its_license_and_pyproject_ships_it() -> None:
    assert LICENSE.startswith(b"MIT License\n")
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = "MIT"' in pyproject and 'license-files = ["LICENSE"]' in pyproject


def test_the_wheel_and_the_vsix_carry_the_license_text(wheel: Path, vsix: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert z.read(name) == LICENSE
        assert "License-Expression: MIT" in z.read(name.replace("licenses/LICENSE", "METADATA")).decode()
    with zipfile.ZipFile(vsix) as z:
        assert z.read("extension/LICENSE.txt").replace(b"\r\n", b"\n") == LICENSE


def test_the_sdist_holds_what_builds_the_package_and_no_part_of_the_test_suite(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        top = sdist.name.removesuffix(".tar.gz")
        assert tar.extractfile(f"{top}/LICENSE").read() == LICENSE  # type: ignore[union-attr]
    assert {"LICENSE", "README.md", "pyproject.toml", "server/context_companion/__init__.py"} <= names
    sources = {str(p.relative_to(REPO)) for p in (REPO / "server" / "context_companion").rglob("*.py")}
    assert sources <= names
    assert [n for n in names if re.match(r"(tests|bench|editors|docs|scripts)/", n) or n.endswith(".pyc")] == []
