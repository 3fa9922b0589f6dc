"""Kilo CLI through the commands a user runs (`setup --agent kilo`, `hook --agent kilo-cli`, `explain`) and our
plugin run by Node as Kilo CLI runs it (OpenCode's plugin, written for Kilo CLI's folders). The real agent against
the recording model stub is tests/agents/test_kilo_cli_agent.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import setup_cli
from hook_runner import run_hook
from setup_cli import EXE

MARKER = (
    "// Context Companion's plugin for Kilo CLI, written by `context-companion setup --agent kilo` "
    "(`--remove` deletes it)."
)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return setup_cli.cli(*args, env=env, drop=("KILO_", "XDG_"), script=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return setup_cli.user_env(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return setup_cli.project(tmp_path)


def setup(ws: Path, env: dict[str, str], *more: str, agent: str = "kilo") -> subprocess.CompletedProcess[str]:
    return cli("setup", "--agent", agent, "--workspace", str(ws), *more, env=env)


def test_setup_writes_the_plugin_into_kilos_folder_once_and_remove_takes_it_away(ws: Path, env: dict[str, str]) -> None:
    plugin = ws / ".kilo" / "plugins" / "context-companion.js"
    dry = setup(ws, env, "--dry-run")
    assert dry.returncode == 0 and not plugin.exists() and f"+{MARKER}" in dry.stdout
    out = setup(ws, env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Kilo CLI: added the plugin {plugin}: it runs `{EXE} hook --agent kilo-cli`")
    text = plugin.read_text()
    assert text.splitlines()[0] == MARKER
    assert f"const COMMAND = {json.dumps([EXE, 'hook', '--agent', 'kilo-cli'])};" in text
    assert '"chat.message"' in text and "the project memory Kilo CLI does not read itself" in text
    assert "system" not in text.replace("system prompt", "")  # it never touches the system part
    assert not (ws / ".opencode").exists()

    before = (plugin.read_bytes(), plugin.stat().st_mtime_ns)
    again = setup(ws, env, agent="kilo-cli")
    assert again.returncode == 0 and "Kilo CLI: already set up" in again.stdout and "nothing changed" in again.stdout
    assert (plugin.read_bytes(), plugin.stat().st_mtime_ns) == before

    # Ours with another command (an older setup, another installation): brought to today's.
    plugin.write_text(text.replace(EXE, "/old/bin/context-companion"))
    assert "updated the plugin" in setup(ws, env).stdout and plugin.read_text() == text

    gone = setup(ws, env, "--remove")
    assert gone.returncode == 0 and not plugin.exists() and not (ws / ".kilo").exists(), gone.stdout
    assert "nothing changed" in setup(ws, env, "--remove").stdout


def test_setup_never_writes_over_or_deletes_a_plugin_of_the_users(ws: Path, env: dict[str, str]) -> None:
    plugin = ws / ".kilo" / "plugins" / "context-companion.js"
    plugin.parent.mkdir(parents=True)
    mine = "export const Mine = async () => ({});\n"
    plugin.write_text(mine)
    for more in ((), ("--remove",)):
        refused = setup(ws, env, *more)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "did not write" in refused.stderr and str(plugin) in refused.stderr
    assert plugin.read_text() == mine
    # OpenCode's plugin of ours is not Kilo CLI's: its marker names another agent.
    opencode = setup(ws, env, agent="opencode")
    assert opencode.returncode == 0, opencode.stderr
    plugin.write_text((ws / ".opencode" / "plugins" / "context-companion.js").read_text())
    assert setup(ws, env).returncode == 2


def test_setup_remove_without_agent_finds_kilos_plugin(ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env).returncode == 0
    gone = cli("setup", "--remove", "--workspace", str(ws), env=env)
    assert gone.returncode == 0 and gone.stdout.startswith("Kilo CLI: deleted the plugin"), gone.stdout
    assert not (ws / ".kilo").exists()


def test_the_user_plugin_goes_to_kilos_config_folder(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    out = setup(ws, env, "--user")
    assert out.returncode == 0, out.stderr
    plugin = home / ".config" / "kilo" / "plugins" / "context-companion.js"
    assert plugin.read_text().splitlines()[0] == MARKER and not (ws / ".kilo").exists()
    assert "teammates" not in out.stdout  # a file of this machine: its path is no news
    # $XDG_CONFIG_HOME moves it; $KILO_CONFIG_DIR is then Kilo CLI's config folder.
    xdg = tmp_path / "xdg"
    assert setup(ws, {**env, "XDG_CONFIG_HOME": str(xdg)}, "--user").returncode == 0
    assert (xdg / "kilo" / "plugins" / "context-companion.js").is_file()
    moved = tmp_path / "kilo-config"
    assert setup(ws, {**env, "KILO_CONFIG_DIR": str(moved)}, "--user").returncode == 0
    assert (moved / "plugins" / "context-companion.js").is_file()
    # A relative $KILO_CONFIG_DIR would make Kilo CLI's folder depend on where it starts: refused, one line.
    relative = setup(ws, {**env, "KILO_CONFIG_DIR": "kilo-config"}, "--user")
    assert relative.returncode == 2 and relative.stderr.count("\n") == 1, relative.stderr
    assert "KILO_CONFIG_DIR=kilo-config: not an absolute path" in relative.stderr
    assert setup(ws, env, "--user", "--remove").returncode == 0 and not plugin.exists()


def test_the_hook_answers_kilo_with_what_it_does_not_read(ws: Path, tmp_path: Path) -> None:
    (ws / "AGENTS.md").write_text("ROOT: read by Kilo CLI itself.\n")
    (ws / "CLAUDE.md").write_text("CLAUDE: not read (AGENTS.md wins its folder).\n")
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "ses_k1", "cwd": str(ws)}
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    out = run_hook("kilo", json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
    assert out.returncode == 0, out.stderr
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "CLAUDE: not read" in context and "ROOT:" not in context
    again = run_hook("kilo-cli", json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
    assert again.returncode == 0 and again.stdout == b""  # nothing new the second time


def test_explain_says_what_kilo_loads_as_measured(ws: Path, env: dict[str, str]) -> None:
    (ws / "AGENTS.md").write_text("root\n")
    (ws / "CLAUDE.md").write_text("claude\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "AGENTS.md").write_text("nested\n")
    out = cli("explain", "--agent", "kilo", "--workspace", str(ws), "--json", env=env)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    assert data["checked"] == "7.7.9"
    assert {f["path"] for f in data["files"]} == {"AGENTS.md"}
    delivered = {f for d in data["hookDelivery"] for f in d["files"]}
    assert "CLAUDE.md" in delivered and "AGENTS.md" not in delivered


def test_kilos_own_rules_are_read_by_kilo_and_delivered_to_the_others(ws: Path, env: dict[str, str]) -> None:
    own = {".kilo/rules/style.md", ".kilocode/rules/older.md", ".kilocoderules"}
    for rel in own:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"{rel}: a rule of Kilo CLI's own.\n")
    (ws / ".kilo" / "rules" / "notes").mkdir()
    (ws / ".kilo" / "rules" / "notes" / "deeper.md").write_text("not read: Kilo CLI lists no sub-folders\n")

    def explained(agent: str) -> dict[str, Any]:
        out = cli("explain", "--agent", agent, "--workspace", str(ws), "--json", env=env)
        assert out.returncode == 0, out.stderr
        data: dict[str, Any] = json.loads(out.stdout)
        return data

    kilo = explained("kilo")
    assert {f["path"] for f in kilo["files"]} == own
    assert not {f for d in kilo["hookDelivery"] for f in d["files"]}  # it reads them again for every request
    claude = explained("claude-code")
    assert {f for d in claude["hookDelivery"] for f in d["files"]} == own
    (ws / ".context-companion.toml").write_text('[memory]\nsources = ["agents", "claude"]\n')
    assert not {f for d in explained("claude-code")["hookDelivery"] for f in d["files"]}  # the kilo family off


DRIVER = """
import { pathToFileURL } from "node:url";
const [plugin, directory, session] = process.argv.slice(2);
const mod = await import(pathToFileURL(plugin).href);
const hooks = await mod.ContextCompanion({ directory });
const output = { message: { id: "msg_1" }, parts: [{ id: "prt_0", type: "text", text: "the user's words" }] };
await hooks["chat.message"]({ sessionID: session, agent: "code", messageID: "msg_1" }, output);
console.log(JSON.stringify(output.parts));
"""


def test_the_plugin_adds_the_hooks_text_as_a_part_of_kilos_user_message(tmp_path: Path) -> None:
    from context_companion.agents.kilo_cli import plugin_text

    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run the plugin", pytrace=False)
    script = tmp_path / "fake_hook.py"
    script.write_text(
        "import json, sys\nseen = json.load(sys.stdin)\n"
        'text = "MEMORY for " + seen["session_id"] + " at " + seen["hook_event_name"]\n'
        'print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}))\n'
    )
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(plugin_text(f"{sys.executable} {script}"))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    done = subprocess.run(
        [node, str(driver), str(plugin), str(tmp_path), "ses_1"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    parts = json.loads(done.stdout)
    assert parts[0] == {"id": "prt_0", "type": "text", "text": "the user's words"}
    added = parts[1]
    assert added["text"] == "MEMORY for ses_1 at UserPromptSubmit" and added["synthetic"] is True
    assert added["sessionID"] == "ses_1" and added["messageID"] == "msg_1"  # Kilo CLI refuses a part without them
    assert added["id"].startswith("prt_") and len(added["id"]) == 30


def test_the_plugin_is_opencodes_with_kilos_marker_and_name() -> None:
    """Kilo CLI runs OpenCode's plugin as it is: the two files differ only in the marker and the agent they name."""
    from context_companion.agents import kilo_cli, opencode

    command = f"{EXE} hook --agent"
    kilo = kilo_cli.plugin_text(f"{command} kilo-cli").splitlines()
    theirs = opencode.plugin_text(f"{command} opencode").splitlines()
    assert kilo[0] == MARKER and theirs[0] == opencode.MARKER and len(kilo) == len(theirs)
    differ = [(k, o) for k, o in zip(kilo[1:], theirs[1:], strict=True) if k != o]
    assert differ and all(
        k == o.replace("OpenCode", "Kilo CLI").replace('"opencode"]', '"kilo-cli"]') for k, o in differ
    ), differ
    assert "OpenCode" not in "\n".join(kilo)
