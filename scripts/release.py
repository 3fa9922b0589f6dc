#!/usr/bin/env python3
"""Build Context Companion's release artifacts from a clean clone, into ``dist/``.

    python scripts/release.py                      # sdist + wheel, then the VS Code .vsix with the wheel inside
    python scripts/release.py --no-vsix            # the Python artifacts only (no Node.js needed)
    python scripts/release.py --check              # do all the version strings agree? (builds nothing)
    python scripts/release.py --set-version 0.3.0  # bump: writes the one place, then its copies

The release number is written in one place, ``server/context_companion/__init__.py``
(``__version__``); ``pyproject.toml`` reads it (a dynamic version). The VS Code extension's
``package.json`` and ``package-lock.json`` hold copies because npm and vsce need them there:
``--set-version`` writes all of them, every build checks that they agree first, and
``tests/test_version.py`` fails when they do not.

A build:

1. ``python -m build`` makes the sdist, then the wheel from the sdist (so a file missing from the
   sdist fails here, not on a user's machine); ``--no-isolation`` builds with this Python's
   setuptools instead of fetching it from the package index;
2. the wheel is placed at ``editors/vscode/server/context_companion-<version>-py3-none-any.whl``
   (gitignored) and the extension is packaged there (``npm ci``, ``npm run package``: vsce 3.9);
3. the ``.vsix`` is moved to ``dist/context-companion-<version>.vsix`` and checked: it holds that
   wheel and a ``package.json`` of the same version.

The builds' own output goes to ``dist/release.log``; the script prints one line before, then what was built
(each artifact with its size and sha256). Errors are one line on stderr and exit status 2 (a failed step
shows the end of the log first). Nothing is written outside the checkout but what
``python -m build`` and ``npm`` themselves write (their caches).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INIT = REPO / "server" / "context_companion" / "__init__.py"
VSCODE = REPO / "editors" / "vscode"
PACKAGE_JSON = VSCODE / "package.json"
PACKAGE_LOCK = VSCODE / "package-lock.json"
BUNDLED = VSCODE / "server"  # where the extension finds the wheel it carries
DIST = REPO / "dist"
LOG = DIST / "release.log"  # the builds' own output (python -m build, npm): hundreds of lines

_VERSION_LINE = re.compile(r'^__version__ = "([^"]+)"$', re.MULTILINE)
_RELEASE = re.compile(r"^\d+\.\d+\.\d+$")  # what both PEP 440 and npm's semver read the same way


class ReleaseError(Exception):
    """One line for the user; exit status 2."""


def version() -> str:
    """The release number, read from the one place (without importing the package)."""
    found = _VERSION_LINE.search(INIT.read_text(encoding="utf-8"))
    if found is None:
        raise ReleaseError(f'{INIT.relative_to(REPO)}: no line __version__ = "X.Y.Z"')
    return found.group(1)


def wheel_name(v: str) -> str:
    return f"context_companion-{v}-py3-none-any.whl"


def copies() -> dict[str, str | None]:
    """Every copy of the release number outside ``__init__.py``, by where it is."""
    package = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    lock = json.loads(PACKAGE_LOCK.read_text(encoding="utf-8"))
    return {
        "editors/vscode/package.json version": package.get("version"),
        "editors/vscode/package-lock.json version": lock.get("version"),
        'editors/vscode/package-lock.json packages[""].version': lock.get("packages", {}).get("", {}).get("version"),
    }


def check() -> str:
    v = version()
    if not _RELEASE.match(v):
        raise ReleaseError(f"{INIT.relative_to(REPO)}: __version__ {v!r} is not MAJOR.MINOR.PATCH")
    wrong = [f"{where} is {found!r}" for where, found in copies().items() if found != v]
    if wrong:
        raise ReleaseError(
            f"the release number is {v} ({INIT.relative_to(REPO)}) but {'; '.join(wrong)}: "
            f"run python scripts/release.py --set-version {v}"
        )
    return v


def set_version(new: str) -> None:
    if not _RELEASE.match(new):
        raise ReleaseError(f"--set-version {new}: expected MAJOR.MINOR.PATCH, e.g. 0.3.0")
    text = INIT.read_text(encoding="utf-8")
    if _VERSION_LINE.search(text) is None:
        raise ReleaseError(f'{INIT.relative_to(REPO)}: no line __version__ = "X.Y.Z"')
    _write(INIT, _VERSION_LINE.sub(f'__version__ = "{new}"', text, count=1))
    package = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    package["version"] = new
    _write(PACKAGE_JSON, json.dumps(package, indent=2, ensure_ascii=False) + "\n")
    lock = json.loads(PACKAGE_LOCK.read_text(encoding="utf-8"))
    lock["version"] = new
    lock["packages"][""]["version"] = new
    _write(PACKAGE_LOCK, json.dumps(lock, indent=2, ensure_ascii=False) + "\n")
    print(
        f"release number {new}: {INIT.relative_to(REPO)}, {PACKAGE_JSON.relative_to(REPO)}, "
        f"{PACKAGE_LOCK.relative_to(REPO)}"
    )


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".release-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    """Run one build step with its output going to :data:`LOG`; a failure names the log and shows its end."""
    DIST.mkdir(exist_ok=True)
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"$ {' '.join(cmd)}    (in {cwd.relative_to(REPO) if cwd != REPO else '.'})\n")
        log.flush()
        try:
            done = subprocess.run(cmd, cwd=cwd, check=False, stdout=log, stderr=subprocess.STDOUT)
        except FileNotFoundError:
            raise ReleaseError(f"{what}: {cmd[0]} is not on PATH") from None
    if done.returncode != 0:
        tail = LOG.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        sys.stderr.write("\n".join(tail) + "\n")
        raise ReleaseError(f"{what} failed (exit status {done.returncode}; its output: {LOG.relative_to(REPO)})")


def build_python(v: str, *, isolation: bool) -> tuple[Path, Path]:
    try:
        import build  # noqa: F401
    except ImportError:
        raise ReleaseError(
            "python -m build is not installed for this Python: python -m pip install build (it is in the dev extra)"
        ) from None
    DIST.mkdir(exist_ok=True)
    for old in [*DIST.glob("context_companion-*"), *DIST.glob("context-companion-*.vsix")]:
        old.unlink()  # dist/ holds this build's artifacts only (tests/release takes them from there)
    cmd = [sys.executable, "-m", "build", "--outdir", str(DIST), *([] if isolation else ["--no-isolation"]), str(REPO)]
    _run(cmd, REPO, "building the sdist and wheel")
    wheel = DIST / wheel_name(v)
    sdist = DIST / f"context_companion-{v}.tar.gz"
    for artifact in (wheel, sdist):
        if not artifact.is_file():
            raise ReleaseError(f"python -m build did not make {artifact.relative_to(REPO)}")
    return wheel, sdist


def build_vsix(v: str, wheel: Path) -> Path:
    BUNDLED.mkdir(exist_ok=True)
    for old in BUNDLED.glob("context_companion-*.whl"):
        old.unlink()
    shutil.copy2(wheel, BUNDLED / wheel.name)
    npm = shutil.which("npm")
    if npm is None:
        raise ReleaseError("npm is not on PATH: install Node.js 20 (or build without the extension: --no-vsix)")
    _run([npm, "ci", "--no-audit", "--no-fund"], VSCODE, "npm ci")
    made = VSCODE / "context-companion.vsix"
    made.unlink(missing_ok=True)
    _run([npm, "run", "package"], VSCODE, "npm run package")
    if not made.is_file():
        raise ReleaseError(f"npm run package did not make {made.relative_to(REPO)}")
    vsix = DIST / f"context-companion-{v}.vsix"
    os.replace(made, vsix)
    check_vsix(vsix, v)
    return vsix


def check_vsix(vsix: Path, v: str) -> None:
    """The .vsix carries the wheel of its own version, and says that version."""
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        inside = f"extension/server/{wheel_name(v)}"
        if inside not in names:
            raise ReleaseError(
                f"{vsix.name} does not hold {inside} (editors/vscode/.vscodeignore must keep server/*.whl)"
            )
        others = sorted(n for n in names if n.startswith("extension/server/") and n != inside)
        if others:
            raise ReleaseError(f"{vsix.name} holds other files beside its wheel: {', '.join(others)}")
        manifest = json.loads(z.read("extension/package.json"))
        if manifest.get("version") != v:
            raise ReleaseError(f"{vsix.name}: its package.json says version {manifest.get('version')!r}, not {v}")


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MiB"


def _summary(paths: list[Path]) -> None:
    print(f"built (the build output is in {LOG.relative_to(REPO)}):")
    for path in paths:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"  {path.relative_to(REPO)!s:<48} {_size(path.stat().st_size):>9}  sha256 {digest}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/release.py",
        description="Build the release artifacts (sdist, wheel, .vsix with the wheel inside) into dist/.",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="check that every version string agrees, build nothing")
    mode.add_argument("--set-version", metavar="X.Y.Z", help="write a new release number everywhere it is kept")
    parser.add_argument("--no-vsix", action="store_true", help="build the sdist and wheel only (no Node.js needed)")
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="build with this Python's setuptools and wheel instead of fetching them (offline)",
    )
    args = parser.parse_args(argv)
    try:
        if args.set_version:
            set_version(args.set_version)
            return 0
        v = check()
        if args.check:
            print(f"release number {v}: every copy agrees")
            return 0
        DIST.mkdir(exist_ok=True)
        LOG.write_text("", encoding="utf-8")  # this build's output only
        print(f"building {v}: the sdist and wheel{'' if args.no_vsix else ', then the .vsix'} ...", flush=True)
        wheel, sdist = build_python(v, isolation=not args.no_isolation)
        made = [sdist, wheel]
        if not args.no_vsix:
            made.append(build_vsix(v, wheel))
        _summary(made)
        return 0
    except ReleaseError as exc:
        sys.stderr.write(f"release: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
