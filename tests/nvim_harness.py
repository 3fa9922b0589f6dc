"""A headless Neovim for tests, driven over its --listen socket (a module of its own, like
lsp_harness.py, so tests under tests/editors and tests/agents share one copy).

``EVAL_LUA`` is the Lua every harness loads: ``_G.t_eval(json)`` runs a chunk of Lua sent as a JSON
string and answers ``{"ok": true, "value": ...}`` or ``{"ok": false, "error": ...}`` as JSON, so a
test gets a Lua error as a message instead of an RPC failure. ``CAPTURE_LUA`` keeps what the user
would see instead of showing it: ``vim.notify`` messages in ``_G.t_msgs`` and the plugin's
``User ContextCompanionChanged`` data in ``_G.t_events``. An init script that uses :class:`HeadlessNvim`
must load both (its diagnostics read ``_G.t_msgs``)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EVAL_LUA = r"""
function _G.t_eval(json)
  local chunk, err = loadstring(vim.json.decode(json))
  if not chunk then
    return vim.json.encode({ ok = false, error = err })
  end
  local ok, value = pcall(chunk)
  if not ok then
    return vim.json.encode({ ok = false, error = tostring(value) })
  end
  local encoded, out = pcall(vim.json.encode, { ok = true, value = value })
  if not encoded then
    return vim.json.encode({ ok = false, error = 'cannot encode the result: ' .. tostring(out) })
  end
  return out
end
"""

CAPTURE_LUA = r"""
_G.t_msgs = {}
vim.notify = function(msg, level)
  table.insert(_G.t_msgs, { msg = tostring(msg), level = level or vim.log.levels.INFO })
end
_G.t_events = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'ContextCompanionChanged',
  callback = function(ev) table.insert(_G.t_events, ev.data) end,
})
"""

# A Lua chunk's head: ``f`` is the active file of a full turn context for the session 'probe' (what the
# server knows of the editor now); the caller adds the rest, e.g. ``return f and f.cursor.line == 2``.
ACTIVE_FILE_LUA = """
local r = require('context_companion').turn_context({ sessionId = 'probe', forceFull = true })
local f = r and r.context and r.context.activeFile
"""


def lua_str(text: str) -> str:
    """A Lua string literal (JSON string syntax is valid Lua for what we pass; non-ASCII letters stay
    as they are, as Lua has no ``\\uXXXX`` escape)."""
    return json.dumps(text, ensure_ascii=False)


# The RPC client: Neovim itself, relaying one JSON request per stdin line to the socket.
CLIENT_LUA = r"""
local ok, chan = pcall(vim.fn.sockconnect, 'pipe', _G.arg[1], { rpc = true })
if not ok or chan == 0 then
  io.stdout:write(vim.json.encode({ ok = false, value = 'cannot connect: ' .. tostring(chan) }), '\n')
  return
end
io.stdout:write(vim.json.encode({ ok = true, value = 'ready' }), '\n')
io.stdout:flush()
while true do
  local line = io.read('*l')
  if line == nil then
    break
  end
  local request = vim.json.decode(line)
  local done, value = pcall(vim.rpcrequest, chan, unpack(request))
  io.stdout:write(vim.json.encode({ ok = done, value = done and value or tostring(value) }), '\n')
  io.stdout:flush()
end
"""


class HeadlessNvim:
    """One headless Neovim running ``init`` (Lua), driven over its --listen socket through a second
    Neovim that relays one JSON request per line. ``timeout``: seconds any awaited condition may take."""

    def __init__(
        self,
        nvim: str,
        root: Path,
        init: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        timeout: float = 20.0,
    ) -> None:
        self.timeout = timeout
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.sockdir = Path(tempfile.mkdtemp(prefix="ccnv"))  # short: socket paths are limited
        self.sock = self.sockdir / "nvim.sock"
        state = root / "xdg-state"
        self.env = dict(os.environ)
        self.env.update(
            {
                "XDG_CONFIG_HOME": str(root / "xdg-config"),
                "XDG_DATA_HOME": str(root / "xdg-data"),
                "XDG_STATE_HOME": str(state),
                "XDG_CACHE_HOME": str(root / "xdg-cache"),
                "NVIM_LOG_FILE": str(root / "nvim.log"),
            }
        )
        self.env.update(env or {})
        self.lsp_log = state / "nvim" / "lsp.log"
        init_file = root / "init.lua"
        init_file.write_text(init, encoding="utf-8")
        self.proc = subprocess.Popen(
            [nvim, "--headless", "--listen", str(self.sock), "-u", str(init_file), "-i", "NONE", "-n"],
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.client: subprocess.Popen[str] | None = None
        self.wait_for(lambda: self.sock.exists(), "the Neovim socket", poll=0.05, use_rpc=False)
        client_script = root / "rpc_client.lua"
        client_script.write_text(CLIENT_LUA, encoding="utf-8")
        self.client = subprocess.Popen(
            [nvim, "--clean", "--headless", "-l", str(client_script), str(self.sock)],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        hello = self._read_reply()
        if hello != {"ok": True, "value": "ready"}:
            raise AssertionError(f"the RPC client could not connect: {hello}")

    # ---------------------------------------------------------------- RPC

    def _read_reply(self) -> dict[str, Any]:
        assert self.client is not None and self.client.stdout is not None
        ready, _, _ = select.select([self.client.stdout], [], [], self.timeout)
        if not ready:
            raise AssertionError(f"Neovim did not answer within {self.timeout:g} s\n{self.diagnostics(rpc=False)}")
        line = self.client.stdout.readline()
        if not line:
            raise AssertionError(f"the RPC client stopped (exit code {self.client.poll()})")
        return json.loads(line)

    def _request(self, method: str, *params: Any) -> Any:
        assert self.client is not None and self.client.stdin is not None
        self.client.stdin.write(json.dumps([method, *params]) + "\n")
        self.client.stdin.flush()
        reply = self._read_reply()
        if not reply["ok"]:
            raise RuntimeError(f"{method} failed: {reply['value']}")
        return reply["value"]

    def lua(self, code: str) -> Any:
        """Run a Lua chunk inside Neovim and return what it returns (JSON-encodable)."""
        out = self._request("nvim_exec_lua", "return _G.t_eval(...)", [json.dumps(code)])
        reply = json.loads(out)
        if not reply["ok"]:
            raise AssertionError(f"Lua failed in Neovim: {reply['error']}\n{self.diagnostics()}")
        return reply.get("value")

    def keys(self, keys: str) -> None:
        """Type keys (Neovim key notation) as a user would."""
        self._request("nvim_input", keys)

    # ---------------------------------------------------------------- waiting

    def wait_for(
        self,
        condition: Callable[[], Any],
        what: str,
        *,
        poll: float = 0.1,
        use_rpc: bool = True,
    ) -> Any:
        deadline = time.monotonic() + self.timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"Neovim exited ({self.proc.returncode}) while waiting for {what}\n{self.diagnostics()}"
                )
            try:
                last = condition()
            except (RuntimeError, json.JSONDecodeError) as exc:
                last = exc
            else:
                if last:
                    return last
            time.sleep(poll)
        details = self.diagnostics() if use_rpc else ""
        raise AssertionError(f"timed out waiting for {what}; last value: {last!r}\n{details}")

    def wait_lua(self, code: str, what: str, predicate: Callable[[Any], bool] = bool) -> Any:
        """Poll a Lua chunk until `predicate(value)` holds; return that value."""
        box: dict[str, Any] = {}

        def check() -> bool:
            box["value"] = self.lua(code)
            return predicate(box["value"])

        self.wait_for(check, what)
        return box["value"]

    def diagnostics(self, rpc: bool = True) -> str:
        parts = []
        if rpc:
            try:
                parts.append("notifications: " + json.dumps(self.lua("return _G.t_msgs")))
                parts.append("messages: " + str(self.lua("return vim.fn.execute('messages')")))
            except Exception as exc:
                parts.append(f"(could not read Neovim's messages: {exc})")
        if self.lsp_log.exists():
            parts.append("lsp.log tail:\n" + "\n".join(self.lsp_log.read_text(errors="replace").splitlines()[-40:]))
        return "\n".join(parts)

    # ---------------------------------------------------------------- lifecycle

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.lua("vim.schedule(function() vim.cmd('qall!') end)")
            except Exception:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.client is not None:
            if self.client.stdin:
                self.client.stdin.close()
            try:
                self.client.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.client.kill()
                self.client.wait(timeout=5)
            if self.client.stdout:
                self.client.stdout.close()
        if self.proc.stderr:
            self.proc.stderr.close()
        shutil.rmtree(self.sockdir, ignore_errors=True)
