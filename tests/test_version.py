"""One release number, everywhere a user or a tool reads it: ``context_companion.__version__`` (the one
place), ``pyproject.toml`` (which reads it), ``context-companion --version``, ``serverInfo.version`` in
the initialize result, and the VS Code extension's ``package.json`` and ``package-lock.json``. The wheel
inside the ``.vsix`` is checked by ``scripts/release.py`` itself and by ``tests/release``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from stdio_lsp import initialize

REPO = Path(__file__).resolve().parents[1]
RELEASE_SCRIPT = REPO / "scripts" / "release.py"

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


def release_module():
    spec = importlib.util.spec_from_file_location("release_script", RELEASE_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def version() -> str:
    from context_companion import __version__

    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__
    return __version__


def test_pyproject_reads_the_version_from_the_package(version: str) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"]  # no second copy to forget
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "context_companion.__version__"}
    assert release_module().version() == version  # what the release script builds


def test_the_vscode_extension_has_the_same_version(version: str) -> None:
    vscode = REPO / "editors" / "vscode"
    package = json.loads((vscode / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((vscode / "package-lock.json").read_text(encoding="utf-8"))
    assert (package["version"], lock["version"], lock["packages"][""]["version"]) == (version, version, version)


def test_the_command_line_and_the_server_say_the_same_version(version: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "context_companion", "--version"], capture_output=True, text=True, env=env, timeout=60
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, f"context-companion {version}\n", "")
    result = initialize([sys.executable, "-m", "context_companion", "serve"], tmp_path, env=env)
    assert result["serverInfo"] == {"name": "context-companion", "version": version}


def test_the_release_check_names_a_copy_that_disagrees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    release = release_module()
    assert release.main(["--check"]) == 0
    stale = tmp_path / "package.json"
    stale.write_text(json.dumps({"name": "context-companion", "version": "0.0.9"}), encoding="utf-8")
    release.PACKAGE_JSON = stale
    capsys.readouterr()
    assert release.main(["--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "editors/vscode/package.json version is '0.0.9'" in err
    assert "--set-version" in err
    assert release.main(["--set-version", "1.2"]) == 2  # not MAJOR.MINOR.PATCH: nothing written
    assert "expected MAJOR.MINOR.PATCH" in capsys.readouterr().err
    assert json.loads(stale.read_text(encoding="utf-8"))["version"] == "0.0.9"


def test_a_release_build_keeps_the_build_output_in_a_log_and_prints_what_it_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m build`` and npm print hundreds of lines (664 on the first try): they go to dist/release.log, and
    the script says where, then each artifact with its size."""
    release = release_module()
    release.REPO = tmp_path
    release.DIST = tmp_path / "dist"
    release.LOG = release.DIST / "release.log"
    noisy = [sys.executable, "-c", "for i in range(500): print('copying file', i)"]

    def build_python(v: str, *, isolation: bool) -> tuple[Path, Path]:
        release._run(noisy, tmp_path, "building the sdist and wheel")
        wheel, sdist = release.DIST / release.wheel_name(v), release.DIST / f"context_companion-{v}.tar.gz"
        wheel.write_bytes(b"w" * 300_000)
        sdist.write_bytes(b"s" * 2_000)
        return wheel, sdist

    def build_vsix(v: str, wheel: Path) -> Path:
        release._run(noisy, tmp_path, "npm run package")
        vsix = release.DIST / f"context-companion-{v}.vsix"
        vsix.write_bytes(b"v" * 3 * 1024 * 1024)
        return vsix

    release.build_python, release.build_vsix = build_python, build_vsix
    capsys.readouterr()
    assert release.main([]) == 0
    v = release.version()
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        f"building {v}: the sdist and wheel, then the .vsix ...",
        "built (the build output is in dist/release.log):",
    ]
    assert [line.split()[:3] for line in out[2:]] == [
        [f"dist/context_companion-{v}.tar.gz", "2", "KiB"],
        [f"dist/context_companion-{v}-py3-none-any.whl", "293", "KiB"],
        [f"dist/context-companion-{v}.vsix", "3.0", "MiB"],
    ]
    assert release.LOG.read_text().count("\ncopying file ") == 1000  # both steps' output, whole

    def failing(v: str, *, isolation: bool) -> tuple[Path, Path]:
        release._run([sys.executable, "-c", "print('the real reason'); raise SystemExit(3)"], tmp_path, "building")
        raise AssertionError("not reached")

    release.build_python = failing
    assert release.main([]) == 2
    err = capsys.readouterr().err
    assert "the real reason" in err  # the end of the log, then one line
    assert err.splitlines()[-1] == "release: building failed (exit status 3; its output: dist/release.log)"
