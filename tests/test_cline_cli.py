"""Cline CLI through the commands a user runs (`setup --agent cline`, `hook --agent cline-cli`, `explain`) and its
plugin run by Node as Cline CLI 3.0.65 calls it (``setup(api, ctx)``, then ``hooks.beforeRun({snapshot})``). The
real agent against a recording model stub is tests/agents/test_cline_cli_agent.py."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import setup_cli
from hook_runner import run_hook
from setup_cli import EXE

PLUGIN = Path(".cline") / "plugins" / "context-companion.js"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return setup_cli.cli(*args, env=env, drop=("CLINE_",))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return setup_cli.user_env(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return setup_cli.project(tmp_path)


def setup(ws: Path, env: dict[str, str], *more: str, agent: str = "cline") -> subprocess.CompletedProcess[str]:
    return cli("setup", "--agent", agent, "--workspace", str(ws), *more, env=env)


# ------------------------------------------------------------------------------------------------ setup


def test_setup_writes_the_plugin_once_updates_ours_and_removes_it(ws: Path, env: dict[str, str]) -> None:
    from context_companion.agents.cline_cli import MARKER

    plugin = ws / PLUGIN
    dry = setup(ws, env, "--dry-run")
    assert dry.returncode == 0 and not plugin.exists() and f"+{MARKER}" in dry.stdout, dry.stderr

    out = setup(ws, env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Cline CLI: added the plugin {plugin}: it runs `{EXE} hook --agent cline-cli`")
    text = plugin.read_text()
    assert text.splitlines()[0] == MARKER
    assert f"const COMMAND = {json.dumps([EXE, 'hook', '--agent', 'cline-cli'])};" in text
    assert "appendContext" in text and "systemPrompt" not in text  # it adds to the turn, never to the system part
    before = plugin.stat().st_mtime_ns
    again = setup(ws, env, agent="cline-cli")
    assert "Cline CLI: already set up" in again.stdout and "nothing changed" in again.stdout
    assert plugin.stat().st_mtime_ns == before and plugin.read_text() == text

    # Ours with another command (an older setup, another installation): brought to today's.
    plugin.write_text(text.replace(EXE, "/old/bin/context-companion"))
    assert "updated the plugin" in setup(ws, env).stdout and plugin.read_text() == text

    gone = setup(ws, env, "--remove")
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout.startswith(f"Cline CLI: deleted the plugin {plugin} and the empty folders")
    assert not (ws / ".cline").exists()
    assert "nothing changed" in setup(ws, env, "--remove").stdout


def test_setup_keeps_the_users_cline_folder_and_refuses_their_own_plugin(ws: Path, env: dict[str, str]) -> None:
    rules = ws / ".cline" / "rules" / "style.md"
    rules.parent.mkdir(parents=True)
    rules.write_text("Name things for what they do.\n")
    assert setup(ws, env).returncode == 0
    assert setup(ws, env, "--remove").returncode == 0
    assert sorted(p.name for p in (ws / ".cline").iterdir()) == ["rules"]  # only the folder setup made goes
    assert rules.read_text() == "Name things for what they do.\n"

    plugin = ws / PLUGIN
    plugin.parent.mkdir(parents=True)
    mine = 'export default { name: "mine", manifest: { capabilities: ["hooks"] }, hooks: {} };\n'
    plugin.write_text(mine)
    for more in ((), ("--remove",), ("--dry-run",)):
        refused = setup(ws, env, *more)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "did not write" in refused.stderr and str(plugin) in refused.stderr
    assert plugin.read_text() == mine


def test_setup_user_writes_into_cline_home_or_cline_dir(tmp_path: Path, ws: Path, env: dict[str, str]) -> None:
    out = setup(ws, env, "--user")
    assert out.returncode == 0, out.stderr
    user = Path(env["HOME"]) / ".cline" / "plugins" / "context-companion.js"
    assert user.is_file() and not (ws / ".cline").exists()
    # A user plugin names this machine's program: no note about teammates.
    assert out.stdout.count("\n") == 1
    assert setup(ws, env, "--user", "--remove").returncode == 0 and not user.exists()

    moved = tmp_path / "cline home"
    out = setup(ws, {**env, "CLINE_DIR": str(moved)}, "--user")
    assert out.returncode == 0, out.stderr
    assert (moved / "plugins" / "context-companion.js").is_file() and not user.exists()

    relative = setup(ws, {**env, "CLINE_DIR": "some/where"}, "--user")
    assert relative.returncode == 2 and "CLINE_DIR=some/where: not an absolute path" in relative.stderr
    assert not (ws / "some").exists()


def test_remove_without_an_agent_takes_out_the_cline_plugin_too(ws: Path, env: dict[str, str]) -> None:
    assert setup(ws, env).returncode == 0
    assert setup(ws, env, agent="opencode").returncode == 0
    out = cli("setup", "--remove", "--workspace", str(ws), env=env)
    assert out.returncode == 0, out.stderr
    assert [line.split(":", 1)[0] for line in out.stdout.splitlines()] == ["OpenCode", "Cline CLI"]
    assert sorted(p.name for p in ws.iterdir()) == [".git"]


def test_the_opencode_plugin_is_unchanged_by_sharing_its_writer() -> None:
    """OpenCode's plugin file is the same bytes as before the writer took other agents' templates: a project
    set up earlier stays "already set up"."""
    from context_companion.agents.opencode import MARKER, plugin_text
    from context_companion.agents.plugin_script import RUNNER

    text = plugin_text("context-companion hook --agent opencode")
    assert text.startswith(MARKER + "\n") and "__" not in text
    assert text.count(RUNNER) == 1 and "export const ContextCompanion" in text


# ------------------------------------------------------------------------------------------------- hook


@pytest.fixture
def project(ws: Path) -> Path:
    (ws / "AGENTS.md").write_text("Run make check.\n")
    (ws / "CLAUDE.md").write_text("Claude: small diffs.\n")
    (ws / ".cline" / "rules").mkdir(parents=True)
    (ws / ".cline" / "rules" / "style.md").write_text("Cline rules: short names.\n")
    (ws / ".cursor" / "rules").mkdir(parents=True)
    (ws / ".cursor" / "rules" / "all.mdc").write_text("---\nalwaysApply: true\n---\nAlways: be kind.\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "AGENTS.md").write_text("Sub: helpers only.\n")
    return ws


def hook_text(project: Path, runtime: Path, session: str, agent: str = "cline-cli") -> str:
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(project)}
    out = run_hook(agent, json.dumps(payload).encode(), {"XDG_RUNTIME_DIR": str(runtime)})
    assert out.returncode == 0 and out.stderr == b"", out.stderr
    if not out.stdout:
        return ""
    data = json.loads(out.stdout)
    assert list(data) == ["hookSpecificOutput"]  # what our plugin reads
    context: str = data["hookSpecificOutput"]["additionalContext"]
    return context


def test_the_hook_gives_cline_what_it_does_not_read_once(project: Path, runtime: Path) -> None:
    text = hook_text(project, runtime, "c1")
    assert "Claude: small diffs." in text and "Always: be kind." in text  # not read by Cline CLI
    assert "Run make check." not in text and "Cline rules: short names." not in text  # read by itself
    assert hook_text(project, runtime, "c1", agent="cline") == ""  # nothing new: nothing

    (project / "CLAUDE.md").write_text("Claude: tiny diffs.\n")
    changed = hook_text(project, runtime, "c1")
    assert "Claude: tiny diffs." in changed and "Always: be kind." not in changed


def test_without_its_own_rule_folder_cline_reads_clinerules_and_with_it_not(project: Path, runtime: Path) -> None:
    (project / ".clinerules").mkdir()
    (project / ".clinerules" / "old.md").write_text("Old rules: tabs.\n")
    assert "Old rules: tabs." in hook_text(project, runtime, "with")  # .cline/rules wins: Cline skips these
    shutil.rmtree(project / ".cline")
    assert "Old rules: tabs." not in hook_text(project, runtime, "without")


# --------------------------------------------------------------------------------------- the table, explain


def test_the_memory_tables_hold_what_the_module_says() -> None:
    from context_companion.agents import cline_cli, registry
    from context_companion.memory.agents import AGENTS, HOOK_AGENTS
    from context_companion.memory.formats import FORMATS
    from context_companion.workspace.hooks import HOOK_LIMITS, HOOK_UNITS

    assert AGENTS["cline-cli"] == cline_cli.rules()
    assert set(cline_cli.formats()) <= set(FORMATS)
    assert "cline-cli" in HOOK_AGENTS and registry.hook_agent("Cline") == "cline-cli"
    assert (HOOK_LIMITS["cline-cli"], HOOK_UNITS["cline-cli"]) == (30_000, "characters")
    assert AGENTS["cline"].name == "Cline"  # explain --agent cline: still the editor extension


def test_explain_says_what_cline_cli_loads(project: Path, env: dict[str, str]) -> None:
    """Cline CLI 3.0.65 reads every file of .cline/rules whole, one with ``paths`` too (measured): the hook never
    sends it, even while the active file matches."""
    (project / ".cline" / "rules" / "py.md").write_text('---\npaths:\n  - "src/**"\n---\nPython rules.\n')
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("x = 1\n")
    args = ("--workspace", str(project), "--active", str(project / "src" / "app.py"), "--json")
    out = cli("explain", "--agent", "cline-cli", *args, env=env)
    assert out.returncode == 0, out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    files = {f["path"]: f["reading"] for f in data["files"]}
    assert files == {"AGENTS.md": "tracked", ".cline/rules/style.md": "tracked", ".cline/rules/py.md": "tracked"}
    assert data["checked"] == "3.0.65"
    (first,) = data["hookDelivery"]
    assert "CLAUDE.md" in first["files"] and not [f for f in first["files"] if ".cline" in f or f == "AGENTS.md"]
    # The other agents read .cline/rules as a rule format of ours: ``paths`` decides.
    claude = json.loads(cli("explain", "--agent", "claude-code", *args, env=env).stdout)
    assert ".cline/rules/py.md" in claude["hookDelivery"][0]["files"]


# ------------------------------------------------------------------------------------------ the plugin

DRIVER = """
import { pathToFileURL } from "node:url";
const [plugin, folder, session] = process.argv.slice(2);
const mod = await import(pathToFileURL(plugin).href);
const p = mod.default;
// As Cline CLI 3.0.65 does: setup with the session and the workspace, then beforeRun with a snapshot whose
// conversationId is new in every process.
await p.setup({}, { session: { sessionId: session }, workspaceInfo: { rootPath: folder } });
const started = Date.now();
const result = await p.hooks.beforeRun({ snapshot: { conversationId: "conv_1", iteration: 0, messages: [] } });
console.log(JSON.stringify({ name: p.name, manifest: p.manifest, result: result ?? null, ms: Date.now() - started }));
"""


def run_plugin(tmp_path: Path, command: list[str], timeout_ms: int | None = None) -> dict[str, Any]:
    from context_companion.agents import cline_cli

    node = shutil.which("node")
    if node is None:
        pytest.fail("node is needed to run Cline CLI's plugin", pytrace=False)
    text = cline_cli.plugin_text(" ".join(command))
    if timeout_ms is not None:
        text = text.replace("const TIMEOUT_MS = 10000;", f"const TIMEOUT_MS = {timeout_ms};")
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(text)
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    folder = tmp_path / "the project"
    folder.mkdir(exist_ok=True)
    out = subprocess.run(
        [node, str(driver), str(plugin), str(folder), "1795886007257_wvc9x"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def fake_hook(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake_hook.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


def test_the_plugin_returns_the_hook_text_as_append_context(tmp_path: Path) -> None:
    command = fake_hook(
        tmp_path,
        """
        import json, os, sys
        seen = json.load(sys.stdin)
        text = f"MEMORY for {seen['session_id']} in {seen['cwd']} at {seen['hook_event_name']} from {os.getcwd()}"
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}))
        """,
    )
    done = run_plugin(tmp_path, command)
    assert done["name"] == "context-companion" and done["manifest"] == {"capabilities": ["hooks"]}
    folder = tmp_path / "the project"
    # The session's id (the same when resumed), not the run's conversationId; the workspace as the folder.
    want = f"MEMORY for 1795886007257_wvc9x in {folder} at UserPromptSubmit from {folder}"
    assert done["result"] == {"appendContext": want}


@pytest.mark.parametrize(
    "body",
    [
        "import sys; sys.exit(1)",  # fails
        "print('not json')",  # prints something else
        "pass",  # nothing new
        "import time; time.sleep(30)",  # hangs: the plugin's time bound
    ],
)
def test_the_plugin_adds_nothing_when_the_hook_fails_or_hangs(tmp_path: Path, body: str) -> None:
    done = run_plugin(tmp_path, fake_hook(tmp_path, body), timeout_ms=1500)
    assert done["result"] is None
    assert done["ms"] < 10_000


def test_the_plugin_adds_nothing_when_the_command_is_missing(tmp_path: Path) -> None:
    assert run_plugin(tmp_path, [str(tmp_path / "no-such-program")])["result"] is None


COMPACTED = """
import { pathToFileURL } from "node:url";
const [plugin, folder, session] = process.argv.slice(2);
const p = (await import(pathToFileURL(plugin).href)).default;
await p.setup({}, { session: { sessionId: session }, workspaceInfo: { rootPath: folder } });
const asUser = (text) => ({ role: "user", content: [{ type: "text", text }] });
const hookContext = (text) => asUser('<hook_context source="RunStart">\\n' + text + "\\n</hook_context>");
const results = [];
const run = async (messages) => results.push((await p.hooks.beforeRun({ snapshot: { messages } })) ?? null);
const model = async (messages) => results.push((await p.hooks.beforeModel({ request: { messages } })) ?? null);
await run([asUser("one")]);
let sent = [asUser("one"), hookContext(results[0].appendContext)];
await model(sent);
await run([...sent, { role: "assistant", content: "ok" }, asUser("two")]);
// Compacted: the first turns are a summary in what goes to the model; the text the plugin added is gone.
sent = [asUser("Context summary: ..."), asUser("two"), hookContext(results[2].appendContext)];
await model(sent);
await model(sent);  // told once
await run([asUser("three")]);
console.log(JSON.stringify(results));
"""


def test_the_plugin_has_the_memory_sent_again_when_cline_compacted_it_away(tmp_path: Path) -> None:
    """Cline 3.0.65 tells plugins nothing when it compacts a session: the plugin's beforeModel sees that a text it
    added is no longer in what goes to the model and tells the hook (``SessionStart``, ``compact``), once."""
    from context_companion.agents import cline_cli

    calls = tmp_path / "calls.jsonl"
    command = fake_hook(
        tmp_path,
        f"""
        import json, sys
        seen = json.load(sys.stdin)
        with open({str(calls)!r}, "a") as fh:
            fh.write(json.dumps(seen) + "\\n")
        if seen["hook_event_name"] == "UserPromptSubmit":
            n = sum(1 for _ in open({str(calls)!r}))
            print(json.dumps({{"hookSpecificOutput": {{"additionalContext": f"MEMORY {{n}}"}}}}))
        """,
    )
    node = shutil.which("node")
    assert node is not None, "node is needed to run Cline CLI's plugin"
    plugin = tmp_path / "plugin.mjs"
    plugin.write_text(cline_cli.plugin_text(shlex.join(command)))
    driver = tmp_path / "driver.mjs"
    driver.write_text(COMPACTED)
    out = subprocess.run(
        [node, str(driver), str(plugin), str(tmp_path), "ses-7"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        {"appendContext": "MEMORY 1"},
        None,  # the model gets the first text: nothing to say
        {"appendContext": "MEMORY 2"},
        None,  # the first text is gone: the hook is told (call 3)
        None,
        {"appendContext": "MEMORY 4"},
    ]
    events = [json.loads(line) for line in calls.read_text().splitlines()]
    assert [(e["hook_event_name"], e.get("source"), e["session_id"]) for e in events] == [
        ("UserPromptSubmit", None, "ses-7"),
        ("UserPromptSubmit", None, "ses-7"),
        ("SessionStart", "compact", "ses-7"),
        ("UserPromptSubmit", None, "ses-7"),
    ]


def test_the_plugin_adds_nothing_when_the_hook_prints_too_much(tmp_path: Path) -> None:
    body = "import sys; sys.stdout.write('x' * (5 * 1024 * 1024))"
    assert run_plugin(tmp_path, fake_hook(tmp_path, body))["result"] is None
