"""``contextCompanion.listAgents``: the agents an editor lists (its pickers, completion and messages), from the
server, so a new agent needs no editor release; the same JSON as ``context-companion agents --json``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from context_companion.agents.registry import HOOK_AGENTS
from context_companion.memory.agents import AGENTS
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException

LIST_AGENTS = "contextCompanion.listAgents"


async def test_initialize_advertises_list_agents_and_it_answers_the_clis_json(start, workspace):
    h = await start(workspace)
    assert LIST_AGENTS in h.init_result.capabilities.execute_command_provider.commands
    answer = await h.command(LIST_AGENTS)
    assert await h.command(LIST_AGENTS, {}) == answer
    cli = subprocess.run(
        [sys.executable, "-m", "context_companion", "agents", "--json"], capture_output=True, text=True, timeout=60
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == answer


async def test_every_agent_explain_knows_and_every_agent_with_hooks_is_listed_once_hooks_first(start, workspace):
    h = await start(workspace)
    agents = (await h.command(LIST_AGENTS))["agents"]
    ids = [a["id"] for a in agents]
    assert len(ids) == len(set(ids))
    assert ids[: len(HOOK_AGENTS)] == list(HOOK_AGENTS)
    assert set(ids) == set(AGENTS) | set(HOOK_AGENTS)
    for agent in agents:
        assert set(agent) == {"id", "name", "shortNames", "hooks", "setup", "explain"}
        assert agent["hooks"] is (agent["id"] in HOOK_AGENTS)
        assert agent["explain"] is (agent["id"] in AGENTS)
        assert agent["name"] and agent["name"] != agent["id"]
        if agent["hooks"]:
            assert agent["setup"]["kind"] in ("hooks", "plugin")
            assert agent["setup"]["user"].startswith("~/")
        else:
            assert agent["setup"] is None
    by_id = {a["id"]: a for a in agents}
    # Short names: the ones hook/setup take and the ones explain takes; an id is never someone's short name
    # except `copilot` and `cline`, the ids of GitHub Copilot and Cline in the editor for explain and setup's names for
    # their CLIs.
    assert by_id["claude-code"]["shortNames"] == ["claude"]
    shorts = {s for a in agents for s in a["shortNames"]}
    assert shorts & set(ids) <= {"copilot", "cline"}


async def test_explain_takes_every_listed_id_and_short_name(start, workspace):
    """What an editor offers from the list, explainMemory accepts (the picker and completion never offer a name
    the server then refuses)."""
    h = await start(workspace)
    for agent in (await h.command(LIST_AGENTS))["agents"]:
        if not agent["explain"]:
            continue
        for name in (agent["id"], *agent["shortNames"]):
            result = await h.command("contextCompanion.explainMemory", {"agent": name})
            expected = name if name != agent["id"] and name in AGENTS else agent["id"]  # an id wins
            assert result["agent"] == expected, name


@pytest.mark.parametrize(("arg", "expected"), [({"agent": "x"}, "agent: unknown field"), ("all", "JSON object")])
async def test_bad_arguments_answer_invalid_params_naming_the_field(start, workspace, arg, expected):
    h = await start(workspace)
    with pytest.raises(JsonRpcException) as info:
        await h.client.workspace_execute_command_async(t.ExecuteCommandParams(command=LIST_AGENTS, arguments=[arg]))
    assert info.value.code == -32602
    assert expected in info.value.message
    assert f"{LIST_AGENTS}:" in info.value.message
