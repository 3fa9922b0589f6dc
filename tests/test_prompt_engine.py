"""The instruction engine: sections, guards, toggles, contributors, templates, shell, tokens."""

from __future__ import annotations

from datetime import date

import pytest
from context_companion.errors import PromptError, SettingsError
from context_companion.prompt.engine import InstructionEngine, _Contributor, collapse_newlines, merge_contributors
from context_companion.prompt.export import Exporter, export_path
from context_companion.settings import AgentProfile, ContributorConfig, Settings, resolve_settings, validate_layer

DAY = date(2026, 11, 21)


def engine(settings: Settings, folders, tokenizer, environ=None, user_dir=None) -> InstructionEngine:
    return InstructionEngine(
        settings,
        folders,
        tokenizer=tokenizer,
        environ=environ or {},
        user_dir=user_dir,
        today=lambda: DAY,
        platform="linux",
    )


def ids(instruction) -> list[str]:
    return [s.id for s in instruction.sections]


NO_ENV = {"environment": {"placement": "off"}}


def test_builtin_sections_in_order_and_git_only_in_git_repo(workspace, tokenizer):
    s = validate_layer(NO_ENV, "t")
    assert ids(engine(s, [workspace], tokenizer).build()) == [
        "preamble",
        "coreMandates",
        "primaryWorkflows",
        "operationalGuidelines",
        "sandbox",
        "finalReminder",
    ]
    (workspace / ".git").mkdir()
    assert ids(engine(s, [workspace], tokenizer).build()) == [
        "preamble",
        "coreMandates",
        "primaryWorkflows",
        "operationalGuidelines",
        "sandbox",
        "git",
        "finalReminder",
    ]


def test_plan_mode_swaps_workflows(workspace, tokenizer):
    s = validate_layer(NO_ENV, "t")
    built = engine(s, [workspace], tokenizer).build(
        AgentProfile(approval_mode="plan", tools=["read_file", "exit_plan_mode", "ask_user"])
    )
    assert "planningWorkflow" in ids(built) and "primaryWorkflows" not in ids(built)
    assert "`exit_plan_mode`" in built.text and "`ask_user`" in built.text


def test_guards_skills_subagents_hooks(workspace, tokenizer, user_dir):
    s = validate_layer(NO_ENV, "t")
    plain = engine(s, [workspace], tokenizer, user_dir=user_dir).build()
    assert not {"agentSkills", "agentContexts", "hookContext"} & set(ids(plain))
    skill_dir = workspace / ".context-companion" / "skills" / "release"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text("---\nname: release\ndescription: Cut a release\n---\nSteps...\n")
    profile = AgentProfile(
        subagents=[{"name": "scout", "description": "explores code"}], include_subagent_delegation=True, hooks=True
    )
    built = engine(s, [workspace], tokenizer, user_dir=user_dir).build(profile)
    assert {"agentSkills", "agentContexts", "hookContext"} <= set(ids(built))
    assert "**release**: Cut a release" in built.text
    assert "**scout**: explores code" in built.text and "Hand a sub-task" in built.text
    no_delegation = engine(s, [workspace], tokenizer, user_dir=user_dir).build(
        AgentProfile(subagents=[{"name": "scout"}], include_subagent_delegation=False)
    )
    assert "**scout**" in no_delegation.text and "Hand a sub-task" not in no_delegation.text


def test_workspace_skill_wins_over_user_skill_on_name_clash(workspace, tokenizer, user_dir):
    for base, desc in (
        (user_dir / "skills" / "a", "from user"),
        (workspace / ".context-companion" / "skills" / "a", "from workspace"),
    ):
        base.mkdir(parents=True)
        (base / "SKILL.md").write_text(f"---\nname: deploy\ndescription: {desc}\n---\n")
    text = engine(validate_layer(NO_ENV, "t"), [workspace], tokenizer, user_dir=user_dir).build().text
    assert "from workspace" in text and "from user" not in text


def test_interactive_option_changes_text(workspace, tokenizer):
    s = validate_layer(NO_ENV, "t")
    inter = engine(s, [workspace], tokenizer).build(AgentProfile(interactive=True)).text
    batch = engine(s, [workspace], tokenizer).build(AgentProfile(interactive=False)).text
    assert "interactive coding agent" in inter and "without a person watching" in batch
    assert "Carry on alone" in batch and "Carry on alone" not in inter


def test_tool_names_are_interpolated_when_the_profile_has_them(workspace, tokenizer):
    s = validate_layer(NO_ENV, "t")
    with_tools = engine(s, [workspace], tokenizer).build(AgentProfile(tools=["view", "rg", "bash"])).text
    assert "`view`" in with_tools and "`rg`" in with_tools and "`bash`" in with_tools
    without = engine(s, [workspace], tokenizer).build(AgentProfile()).text
    assert "your file-reading tool" in without and "`view`" not in without


def test_sandbox_modes(workspace, tokenizer):
    s = validate_layer(NO_ENV, "t")
    texts = {
        m: engine(s, [workspace], tokenizer).build(AgentProfile(sandbox=m)).text
        for m in ("outside", "container", "macos-seatbelt")
    }
    assert "without a sandbox" in texts["outside"]
    assert "sandbox container" in texts["container"]
    assert "Seatbelt" in texts["macos-seatbelt"]


def test_section_switch_by_setting_and_by_env_case_insensitive(workspace, tokenizer, user_dir):
    s = validate_layer({**NO_ENV, "prompt": {"sections": {"coreMandates": False}}}, "t")
    assert "coreMandates" not in ids(engine(s, [workspace], tokenizer).build())
    env = {"CONTEXT_COMPANION_PROMPT_FINALREMINDER": "0", "CONTEXT_COMPANION_PROMPT_preamble": "false"}
    s2 = resolve_settings([workspace], NO_ENV, env, user_dir)
    built = ids(engine(s2, [workspace], tokenizer).build())
    assert "finalReminder" not in built and "preamble" not in built and "coreMandates" in built


def test_env_switch_rejects_unknown_section_and_bad_value(workspace, user_dir):
    with pytest.raises(SettingsError, match="CONTEXT_COMPANION_PROMPT_NOPE: unknown section"):
        resolve_settings([workspace], None, {"CONTEXT_COMPANION_PROMPT_NOPE": "0"}, user_dir)
    with pytest.raises(SettingsError, match="expected 0, 1, true or false"):
        resolve_settings([workspace], None, {"CONTEXT_COMPANION_PROMPT_GIT": "maybe"}, user_dir)


def test_plain_string_system_prompt_replaces_builtins_memory_still_appended(workspace, tokenizer):
    s = validate_layer({**NO_ENV, "systemPrompt": "You are Terse. Answer in one line."}, "t")
    built = engine(s, [workspace], tokenizer).build(AgentProfile(mcp_instructions="Server X: use tool y."))
    assert built.text == "You are Terse. Answer in one line.\n\n---\n\nServer X: use tool y."
    assert ids(built) == ["systemPrompt", "memory"]


def test_contributors_merge_by_id_remove_add_and_sort(workspace, tokenizer):
    s = validate_layer(
        {
            **NO_ENV,
            "systemPrompt": {
                "contributors": [
                    {"id": "preamble", "type": "static", "priority": 100, "content": "CUSTOM PREAMBLE"},
                    {"id": "sandbox", "enabled": False},
                    {"id": "house", "type": "static", "priority": 150, "content": "HOUSE RULES"},
                    {"id": "date", "type": "dynamic", "source": "dateTime", "priority": 0},
                    {"id": "tools", "type": "dynamic", "source": "toolListing", "priority": 1100},
                ]
            },
        },
        "t",
    )
    built = engine(s, [workspace], tokenizer).build(AgentProfile(tools=["grep"]))
    assert ids(built) == [
        "date",
        "preamble",
        "house",
        "coreMandates",
        "primaryWorkflows",
        "operationalGuidelines",
        "finalReminder",
        "tools",
    ]
    assert built.text.startswith("Today's date: Saturday, 21 November 2026.\n\nCUSTOM PREAMBLE\n\nHOUSE RULES")
    assert built.text.endswith("# Available Tools\n\n- grep")
    assert "You are an interactive coding agent" not in built.text


def test_ties_keep_their_order():
    a, b, _ = (_Contributor(x, 5, "builtin", render=lambda: x) for x in "abc")
    merged = merge_contributors([a, b], [ContributorConfig(id="c", type="static", priority=5, content="c")])
    assert [m.id for m in merged] == ["a", "b", "c"]


def test_dynamic_memory_and_environment_contributors_place_them_inline(workspace, tokenizer):
    s = validate_layer(
        {
            "systemPrompt": {
                "contributors": [
                    {"id": "env", "type": "dynamic", "source": "environment", "priority": 1050},
                    {"id": "mem", "type": "dynamic", "source": "memory", "priority": 50},
                    {"id": "ui", "type": "dynamic", "source": "userInstructions", "priority": 60},
                ]
            }
        },
        "t",
    )
    built = engine(s, [workspace], tokenizer).build(
        AgentProfile(mcp_instructions="MCP NOTE", user_instructions="Say hi.")
    )
    assert built.text.startswith("You are an interactive") is False
    assert built.text.startswith("MCP NOTE\n\nSay hi.")
    assert "---\n\nMCP NOTE" not in built.text  # memory not appended a second time
    assert built.text.rstrip().split("\n\n")[-1].startswith("Folder structure") or "Workspace folder:" in built.text
    assert ids(built)[-1] == "env"


def test_contributor_validation_errors_name_the_contributor():
    with pytest.raises(SettingsError, match=r"contributor 'x': a static contributor needs non-empty 'content'"):
        validate_layer({"systemPrompt": {"contributors": [{"id": "x", "type": "static"}]}}, "ws.toml")
    with pytest.raises(SettingsError, match=r"contributor 'y': unknown source 'weather'"):
        validate_layer(
            {"systemPrompt": {"contributors": [{"id": "y", "type": "dynamic", "source": "weather"}]}}, "ws.toml"
        )


def test_file_contributor_reads_files_and_missing_file_is_an_error(workspace, tokenizer):
    (workspace / "rules.md").write_text("Always write tests.\n")
    s = validate_layer(
        {
            **NO_ENV,
            "systemPrompt": {"contributors": [{"id": "f", "type": "file", "files": ["rules.md"], "priority": 1}]},
        },
        "t",
    )
    assert "Always write tests." in engine(s, [workspace], tokenizer).build().text
    bad = validate_layer(
        {**NO_ENV, "systemPrompt": {"contributors": [{"id": "g", "type": "file", "files": ["gone.md"]}]}}, "t"
    )
    with pytest.raises(PromptError, match=r"contributor 'g': file not found: .*gone.md"):
        engine(bad, [workspace], tokenizer).build()


def test_template_substitution_and_unknown_placeholders_kept(workspace, tokenizer, user_dir):
    tpl = workspace / ".context-companion" / "system.md"
    tpl.parent.mkdir()
    tpl.write_text(
        "Agent.\n${AgentSkills}\nTools:\n${AvailableTools}\nRead with ${ToolName_read_file}. ${Unknown} $HOME $$ ${SubAgents}"
    )
    skill = workspace / ".context-companion" / "skills" / "s"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: lint\ndescription: run linters\n---\n")
    env = {"CONTEXT_COMPANION_SYSTEM_MD": "true"}
    built = engine(validate_layer(NO_ENV, "t"), [workspace], tokenizer, environ=env, user_dir=user_dir).build(
        AgentProfile(tools=["read_file", "grep"], subagents=[{"name": "scout"}], mcp_instructions="MEM")
    )
    assert "**lint**: run linters" in built.text
    assert "- read_file\n- grep" in built.text
    assert "Read with read_file." in built.text
    assert "${Unknown} $HOME $$" in built.text
    assert "**scout**" in built.text
    assert built.text.endswith("---\n\nMEM")
    assert ids(built) == ["template", "memory"]
    assert built.template == str(tpl)


def test_template_from_setting_with_tilde_and_missing_file_error(workspace, tokenizer, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mine.md").write_text("MINE")
    s = validate_layer({**NO_ENV, "systemPromptFile": "~/mine.md"}, "t")
    assert engine(s, [workspace], tokenizer).build().text == "MINE"
    missing = validate_layer({**NO_ENV, "systemPromptFile": "nope/system.md"}, "t")
    with pytest.raises(PromptError, match=r"template not found: .*nope/system.md"):
        engine(missing, [workspace], tokenizer).build()
    # the env var wins over the setting, and 0 switches templates off
    assert (
        "You are an interactive"
        in engine(s, [workspace], tokenizer, environ={"CONTEXT_COMPANION_SYSTEM_MD": "0"}).build().text
    )


def test_environment_placements_and_empty_case(workspace, tokenizer):
    (workspace / "main.py").write_text("print(1)\n")
    init = engine(validate_layer({}, "t"), [workspace], tokenizer).build()  # the default: the first user message
    assert init.text.startswith("You are an interactive") and "main.py" not in init.text
    assert (
        init.initial_message.startswith("Here is the environment I am working in") and "main.py" in init.initial_message
    )
    assert "Today's date" not in init.text and "environment" not in ids(init)
    top = engine(
        validate_layer({"environment": {"placement": "systemInstruction"}}, "t"), [workspace], tokenizer
    ).build()
    assert top.text.startswith("# Environment\nToday's date:") and ids(top)[0] == "environment"
    assert "main.py" in top.text and top.initial_message is None
    end = engine(validate_layer({"environment": {"placement": "systemInstructionEnd"}}, "t"), [workspace], tokenizer)
    built = end.build(AgentProfile(mcp_instructions="Use the db tool."))
    assert built.text.startswith("You are an interactive") and ids(built)[-1] == "environment"
    assert built.text.index("Use the db tool.") < built.text.index("# Environment") and built.text.endswith("main.py")
    for placed in (init.initial_message, top.text, built.text):
        assert "Context Companion" not in placed and "Scratch folder" not in placed  # no folder that does not exist
    off = engine(validate_layer(NO_ENV, "t"), [workspace], tokenizer).build()
    assert off.environment_context is None and off.text.startswith("You are")
    empty = engine(validate_layer({}, "t"), [], tokenizer).build()  # no folders: no environment at all
    assert empty.environment_context is None and empty.text.startswith("You are") and "\n\n\n" not in empty.text


def test_everything_off_gives_empty_instruction(workspace, tokenizer):
    sections = {
        k: False
        for k in ("preamble", "coreMandates", "primaryWorkflows", "operationalGuidelines", "sandbox", "finalReminder")
    }
    built = engine(validate_layer({**NO_ENV, "prompt": {"sections": sections}}, "t"), [workspace], tokenizer).build()
    assert built.text == "" and built.tokens.total == 0


def test_newline_runs_collapse_and_result_is_deterministic(workspace, tokenizer):
    assert collapse_newlines("a\n\n\n\nb\n\n\nc\nd") == "a\n\nb\n\nc\nd"
    s = validate_layer({"systemPrompt": "A\n\n\n\n\nB"}, "t")
    first = engine(s, [workspace], tokenizer).build(AgentProfile(mcp_instructions="M\n\n\n\nN"))
    second = engine(s, [workspace], tokenizer).build(AgentProfile(mcp_instructions="M\n\n\n\nN"))
    assert "\n\n\n" not in first.text
    assert first.text == second.text and first.etag == second.etag and len(first.etag) == 32
    other = engine(s, [workspace], tokenizer).build(AgentProfile(mcp_instructions="changed"))
    assert other.etag != first.etag


def test_unchanged_instruction_served_from_cache(workspace, tokenizer):
    e = engine(validate_layer(NO_ENV, "t"), [workspace], tokenizer)
    assert e.build() is e.build()


def test_tokens_per_section_sum_to_total_within_joiner_overhead(workspace, tokenizer):
    (workspace / ".git").mkdir()
    built = engine(validate_layer({}, "t"), [workspace], tokenizer).build(
        AgentProfile(mcp_instructions="remember this")
    )
    per_section = sum(n for _, n in built.tokens.sections)
    joiners = len(built.sections)  # one "\n\n" (or the memory separator) between pieces
    assert built.tokens.total == tokenizer.count(built.text)
    assert abs(built.tokens.total - per_section) <= joiners * 4
    assert built.tokens.encoding == "tiny_test" and built.tokens.estimated is False


def test_building_writes_nothing_and_export_writes_atomically_never_over_the_template(workspace, tokenizer):
    s = validate_layer({**NO_ENV, "writeSystemPromptTo": "out/system.md"}, "t")
    built = engine(s, [workspace], tokenizer).build()
    assert not (workspace / "out").exists()
    Exporter().export(built, export_path(s, [workspace], {}), roots=[workspace])
    assert (workspace / "out" / "system.md").read_text() == built.text + "\n"
    tpl = workspace / "tpl.md"
    tpl.write_text("T")
    same = validate_layer({**NO_ENV, "systemPromptFile": "tpl.md", "writeSystemPromptTo": "tpl.md"}, "t")
    built2 = Exporter().export(
        engine(same, [workspace], tokenizer).build(), export_path(same, [workspace], {}), roots=[workspace]
    )
    assert tpl.read_text() == "T" and any("template" in w for w in built2.warnings)
    env = {"CONTEXT_COMPANION_WRITE_SYSTEM_MD": "1"}
    plain = validate_layer(NO_ENV, "t")
    built3 = engine(plain, [workspace], tokenizer, environ=env).build()
    Exporter().export(built3, export_path(plain, [workspace], env), roots=[workspace])
    assert (workspace / ".context-companion" / "system.generated.md").read_text() == built3.text + "\n"


def test_file_contributor_edits_are_not_served_from_cache(workspace, tokenizer):
    guide = workspace / "guide.md"
    guide.write_text("First version.\n")
    s = validate_layer(
        {
            **NO_ENV,
            "systemPrompt": {"contributors": [{"id": "g", "type": "file", "files": ["guide.md"], "priority": 1}]},
        },
        "t",
    )
    e = engine(s, [workspace], tokenizer)
    assert "First version." in e.build().text
    guide.write_text("Second version.\n")
    assert "Second version." in e.build().text


@pytest.mark.parametrize("placement", ["initialMessage", "systemInstruction", "systemInstructionEnd", "off"])
@pytest.mark.parametrize(
    ("system_prompt", "mcp"),
    [
        (None, "Use the db tool."),
        (None, "/slash first, so the memory part does not start a paragraph"),
        ("A plain prompt.", ""),
        ("Ends with a list:\n\n- one\n- two", "---\n\nrule-like\n\n\n\nwith runs"),
        ("", "Only memory."),
    ],
)
def test_total_tokens_equal_counting_the_whole_text(workspace, paragraph_tokenizer, placement, system_prompt, mcp):
    """The total is taken from the parts' cached counts where that is exact; it must always equal
    encoding the final text in one go."""
    (workspace / "main.py").write_text("print(1)\n")
    layer: dict[str, object] = {"environment": {"placement": placement}}
    if system_prompt is not None:
        layer["systemPrompt"] = system_prompt
    built = engine(validate_layer(layer, "t"), [workspace], paragraph_tokenizer).build(
        AgentProfile(mcp_instructions=mcp)
    )
    whole = len(paragraph_tokenizer._enc.encode(built.text, disallowed_special=()))
    assert built.tokens.total == whole and whole > 0


def test_prompt_files_are_read_like_memory_files_never_a_secret_or_a_fifo(workspace, tokenizer):
    import os

    (workspace / ".env").write_text("API_KEY=hunter2\n")
    os.mkfifo(workspace / "pipe.md")
    secret = validate_layer(
        {**NO_ENV, "systemPrompt": {"contributors": [{"id": "f", "type": "file", "files": [".env"]}]}}, "t"
    )
    with pytest.raises(PromptError, match=r"contributor 'f': file is excluded by context.exclude: .*\.env"):
        engine(secret, [workspace], tokenizer).build()
    fifo = validate_layer({**NO_ENV, "systemPromptFile": str(workspace / "pipe.md")}, "t")
    with pytest.raises(PromptError, match="not a regular file"):  # refused at once, never opened for reading
        engine(fifo, [workspace], tokenizer).build()
    big = validate_layer({**NO_ENV, "memory": {"maxFileBytes": 100}, "systemPromptFile": "big.md"}, "t")
    (workspace / "big.md").write_text("x" * 500)
    with pytest.raises(PromptError, match=r"over memory.maxFileBytes \(100 bytes\)"):
        engine(big, [workspace], tokenizer).build()
