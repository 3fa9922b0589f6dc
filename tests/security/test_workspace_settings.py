"""A repository's settings cannot copy your private files into it, nor hand them to the model.

The attack (issue 38): a cloned repository ships ``.vscode/settings.json`` with
``contextCompanion.systemPromptFile: "~/.ssh/id_rsa"``, ``contextCompanion.context.exclude: []`` and
``contextCompanion.writeSystemPromptTo: "leak.md"``. VS Code sends workspace values to the server
like the user's own; Neovim sends a project's ``.neoconf.json`` or exrc values the same way. The
real server is driven over stdio with the settings as each client sends them:

* VS Code: ``userValues`` names the keys whose value is the user's own, ``workspaceTrusted`` is
  false in Restricted Mode;
* a client that says nothing about scope (Neovim): every value may be the workspace's;
* ``.context-companion.toml``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from sockets_support import RpcFailure

SECRET = "PRIVATE-KEY-MATERIAL-7f3a"
GET = "contextCompanion.getSystemInstruction"
SHOW = "window/showMessage"
ATTACK = {"systemPromptFile": "~/.ssh/id_rsa", "context": {"exclude": []}, "writeSystemPromptTo": "leak.md"}


@pytest.fixture
def home(server_env: dict[str, str]) -> Path:
    """The user's home (the server's ``HOME``) with a private key, a shell rc and a prompt of their own."""
    home = Path(server_env["HOME"])
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (home / ".bashrc").write_text("# my rc\n")
    (home / "prompts").mkdir(exist_ok=True)
    (home / "prompts" / "mine.md").write_text("You are my careful helper (user prompt).\n")
    return home


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Project rule: be brief.\n")
    return ws


def files_in(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def warnings_about(result: dict[str, Any], key: str) -> list[str]:
    return [w for w in result["warnings"] if w.startswith(f"Context Companion: {key} = ")]


def shown(session: Any) -> list[str]:
    return [m["message"] for m in session.notifications(SHOW)]


def secret_anywhere(*folders: Path) -> list[str]:
    return [str(p) for f in folders for p in f.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]


def test_a_client_without_scope_info_sends_the_attack_and_nothing_of_the_key_comes_out(stdio, home, ws):
    """Neovim-style: the values come without scope, so they count as the workspace's. The key is
    not read; the export inside the workspace holds the instruction without it; the user is told
    once, in one line naming the key, the value and the reason."""
    s = stdio()
    s.initialize(ws, ATTACK)
    result = s.command(GET, {})
    assert SECRET not in result["text"] and "Project rule: be brief." in result["text"]
    (line,) = warnings_about(result, "systemPromptFile")
    assert line == (
        "Context Companion: systemPromptFile = '~/.ssh/id_rsa' from workspace settings (editor) is ignored: "
        "it names a file outside the workspace folders; only your user settings, config.toml or the environment may"
    )
    assert shown(s).count(line) == 1
    s.command(GET, {})
    assert shown(s).count(line) == 1  # once, not per request
    assert (ws / "leak.md").read_text() == result["text"] + "\n"  # inside the workspace: allowed, harmless
    assert secret_anywhere(ws) == []
    memory = s.command("contextCompanion.showMemory", {})
    assert line in memory["warnings"]


def test_a_workspace_cannot_remove_the_secret_file_exclusions(stdio, home, ws):
    """``context.exclude: []`` from the workspace: the built-in secret patterns stay in force (a
    workspace's list adds to them), so a key inside the repository is not read into the instruction
    either; ``redactSecrets: false`` is ignored, with one line."""
    (ws / "keys").mkdir()
    (ws / "keys" / "id_rsa").write_text(SECRET + "\n")
    s = stdio()
    s.initialize(ws, {"systemPromptFile": "keys/id_rsa", "context": {"exclude": [], "redactSecrets": False}})
    with pytest.raises(RpcFailure, match=r"system prompt template is excluded by context\.exclude: .*id_rsa"):
        s.command(GET, {})
    memory = s.command("contextCompanion.showMemory", {})
    assert SECRET not in memory["text"]
    (redact,) = warnings_about(memory, "context.redactSecrets")
    assert redact.endswith("is ignored: a workspace may not switch secret redaction off")
    assert redact in shown(s)


def test_the_users_own_exclude_and_a_workspace_addition_both_hold(stdio, home, ws, tmp_path):
    """The user's config.toml may set context.exclude (their choice); a workspace may add to it."""
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "config.toml").write_text('[context]\nexclude = ["*.private"]\n')
    (ws / "notes.private").write_text(SECRET)
    (ws / "draft.md").write_text(SECRET)
    for name in ("notes.private", "draft.md"):
        s = stdio()
        s.initialize(ws, {"systemPromptFile": name, "context": {"exclude": ["draft.md"]}})
        with pytest.raises(RpcFailure, match=f"excluded by context.exclude: .*{name}"):
            s.command(GET, {})


def test_vscode_workspace_scope_is_confined_and_user_scope_may_name_a_file_outside(stdio, home, ws):
    """As the VS Code extension sends them: a workspace-scoped value (not in ``userValues``) naming
    a file outside is ignored; the same key set in the user's settings (``userValues``) works."""
    workspace = stdio()
    workspace.initialize(ws, {**ATTACK, "userValues": [], "workspaceTrusted": True})
    result = workspace.command(GET, {})
    assert SECRET not in result["text"] and warnings_about(result, "systemPromptFile")

    user = stdio()
    mine = str(home / "prompts" / "mine.md")
    user.initialize(ws, {"systemPromptFile": mine, "userValues": ["systemPromptFile"], "workspaceTrusted": True})
    result = user.command(GET, {})
    assert "You are my careful helper (user prompt)." in result["text"]
    assert warnings_about(result, "systemPromptFile") == [] and shown(user) == []


def test_the_users_config_file_may_name_a_file_outside(stdio, home, ws, tmp_path):
    """A Neovim user names a prompt outside the workspace in their own config.toml (or the environment)."""
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "config.toml").write_text(f'systemPromptFile = "{home / "prompts" / "mine.md"}"\n')
    s = stdio()
    s.initialize(ws, {})
    assert "You are my careful helper (user prompt)." in s.command(GET, {})["text"]
    env = stdio(env={"CONTEXT_COMPANION_SYSTEM_PROMPT_FILE": "~/prompts/mine.md"})
    env.initialize(ws, {})
    assert "You are my careful helper (user prompt)." in env.command(GET, {})["text"]


def test_the_workspace_settings_file_is_confined_too(stdio, home, ws):
    (ws / ".context-companion.toml").write_text(
        'systemPromptFile = "~/.ssh/id_rsa"\nwriteSystemPromptTo = "leak.md"\n[context]\nexclude = []\n'
    )
    s = stdio()
    s.initialize(ws, {})
    result = s.command(GET, {})
    assert SECRET not in result["text"] and secret_anywhere(ws) == []
    (line,) = warnings_about(result, "systemPromptFile")
    assert f"from {ws.resolve() / '.context-companion.toml'} is ignored: it names a file outside" in line
    assert line in shown(s)


def test_a_planted_symlink_is_not_written_through(stdio, home, ws):
    """``leak.md -> ~/.bashrc`` in the repository: the export names a file inside by its path but
    leads outside; nothing is written, the rc is untouched."""
    (ws / "leak.md").symlink_to(home / ".bashrc")
    s = stdio()
    s.initialize(ws, ATTACK)
    result = s.command(GET, {})
    assert (home / ".bashrc").read_text() == "# my rc\n" and (ws / "leak.md").is_symlink()
    (line,) = warnings_about(result, "writeSystemPromptTo")
    assert "'leak.md'" in line and "outside the workspace folders" in line


def test_restricted_mode_takes_no_file_naming_value_of_the_workspace(stdio, home, ws):
    """Untrusted: even values naming files inside the workspace, from the editor or the workspace's
    settings file, are ignored; no file appears in the workspace."""
    (ws / "rules.md").write_text("Workspace template.\n")
    (ws / ".context-companion.toml").write_text('[tokens]\nencodingFile = "enc.tiktoken"\n')
    before = files_in(ws)
    s = stdio()
    s.initialize(ws, {**ATTACK, "systemPromptFile": "rules.md", "userValues": [], "workspaceTrusted": False})
    result = s.command(GET, {})
    assert "Workspace template." not in result["text"] and "Project rule: be brief." in result["text"]
    for key in ("systemPromptFile", "writeSystemPromptTo", "tokens.encodingFile"):
        (line,) = warnings_about(result, key)
        assert line.endswith("is ignored: the workspace is not trusted (Restricted Mode): its settings name no files")
    assert files_in(ws) == before


def test_a_later_configuration_change_is_judged_the_same_way(stdio, home, ws):
    """didChangeConfiguration carrying the attack after a clean start: ignored, said once."""
    s = stdio()
    s.initialize(ws, {})
    assert s.command(GET, {})["warnings"] == []
    s.notify("workspace/didChangeConfiguration", {"settings": {"contextCompanion": ATTACK}})
    s.wait_notifications(SHOW)
    result = s.command(GET, {})
    assert SECRET not in result["text"]
    assert len([m for m in shown(s) if "systemPromptFile = '~/.ssh/id_rsa'" in m]) == 1


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_an_exported_file_takes_the_users_umask(stdio, home, ws, mask):
    old = os.umask(mask)
    try:
        s = stdio()  # the server inherits the umask
    finally:
        os.umask(old)
    s.initialize(ws, {"writeSystemPromptTo": "gen/system.md"})
    s.command(GET, {})
    assert stat.S_IMODE((ws / "gen" / "system.md").stat().st_mode) == 0o666 & ~mask


def test_the_command_line_says_the_same_line(home, ws, server_env, tmp_path):
    """``context-companion memory`` prints the line; ``instruction`` and ``explain`` write it to stderr;
    none of them prints the key."""
    import subprocess
    import sys

    (ws / ".context-companion.toml").write_text('systemPromptFile = "~/.ssh/id_rsa"\n')
    line = "systemPromptFile = '~/.ssh/id_rsa' from "

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "context_companion", *args, "--workspace", str(ws)]
        return subprocess.run(argv, capture_output=True, text=True, env=server_env, cwd=tmp_path, timeout=60)

    memory = cli("memory")
    assert memory.returncode == 0 and f"! Context Companion: {line}" in memory.stdout
    for args in (("instruction",), ("explain", "--agent", "claude-code")):
        done = cli(*args)
        assert done.returncode == 0, done.stderr
        assert line in done.stderr and SECRET not in done.stdout + done.stderr
