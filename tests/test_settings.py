"""Layered settings: files, editor, environment; errors that name the source and the field."""

from __future__ import annotations

import pytest
from context_companion.errors import ProfileError, SettingsError
from context_companion.settings import Settings, parse_profile, resolve_settings


def test_defaults():
    s = Settings()
    assert s.memory.file_names == ["AGENTS.md", "GEMINI.md", "QWEN.md", "CLAUDE.md", "CLAUDE.local.md"]
    assert s.context.max_open_files == 10 and s.context.max_selected_chars == 16384
    assert s.environment.placement == "initialMessage" and s.environment.max_items == 200
    assert s.memory.on_demand_delivery == "turn" and s.memory.reload == "live"
    assert s.tokens.encoding == "o200k_base" and s.profile.sandbox == "outside"


def test_layers_lowest_to_highest(workspace, user_dir):
    (user_dir / "config.toml").write_text("[memory]\nmaxTokens = 100\ndebounceMs = 5\n[context]\nmaxOpenFiles = 3\n")
    (workspace / ".context-companion.toml").write_text("[memory]\nmax_tokens = 200\n")
    editor = {"context": {"maxOpenFiles": 4}}
    env = {"CONTEXT_COMPANION_MEMORY__MAX_TOKENS": "300"}
    s = resolve_settings([workspace], editor, env, user_dir)
    assert s.memory.max_tokens == 300  # env beats workspace beats user
    assert s.memory.debounce_ms == 5  # untouched keys survive the merge
    assert s.context.max_open_files == 4  # editor beats files
    s2 = resolve_settings([workspace], None, {}, user_dir)
    assert s2.memory.max_tokens == 200 and s2.context.max_open_files == 3


def test_env_values_parse_as_json_and_nested_names_fold_case(user_dir):
    env = {
        "CONTEXT_COMPANION_CONTEXT__EXCLUDE": '["**/*.key"]',
        "CONTEXT_COMPANION_PROFILE__APPROVALMODE": "plan",
        "CONTEXT_COMPANION_ENVIRONMENT__PLACEMENT": "off",
    }
    s = resolve_settings([], None, env, user_dir)
    assert s.context.exclude == ["**/*.key"] and s.profile.approval_mode == "plan" and s.environment.placement == "off"


@pytest.mark.parametrize(
    ("content", "field", "reason"),
    [
        ("[memory]\nmaxTokens = -5\n", "memory.maxTokens", "greater than or equal to 0"),
        ("[context]\nmaxOpenFiles = 'ten'\n", "context.maxOpenFiles", "valid integer"),
        ("[profile]\napprovalMode = 'sometimes'\n", "profile.approvalMode", "'default', 'plan', 'autoEdit' or 'yolo'"),
        ("colour = 'blue'\n", "colour", "unknown setting"),
        ("[prompt.sections]\nweather = false\n", "prompt.sections", "unknown section 'weather'"),
        ("[memory]\nfileNames = ['a/b.md']\n", "memory.fileNames", "not a plain file name"),
    ],
)
def test_invalid_file_names_file_field_and_reason(workspace, user_dir, content, field, reason):
    path = workspace / ".context-companion.toml"
    path.write_text(content)
    with pytest.raises(SettingsError) as info:
        resolve_settings([workspace], None, {}, user_dir)
    err = info.value
    assert err.source == str(path) and err.field == field and reason in err.reason
    assert str(err).startswith(str(path) + ": " + field)


def test_broken_toml_names_the_file(workspace, user_dir):
    (user_dir / "config.toml").write_text("[memory\n")
    with pytest.raises(SettingsError, match=r"config.toml: not valid TOML"):
        resolve_settings([workspace], None, {}, user_dir)


def test_editor_and_env_errors_name_their_layer(user_dir):
    with pytest.raises(SettingsError, match=r"^editor settings: context.maxSelectedChars"):
        resolve_settings([], {"context": {"maxSelectedChars": -1}}, {}, user_dir)
    with pytest.raises(SettingsError, match=r"^environment: CONTEXT_COMPANION_NOPE: unknown setting"):
        resolve_settings([], None, {"CONTEXT_COMPANION_NOPE": "1"}, user_dir)


def test_profile_validation():
    p = parse_profile({"model": "gpt-4o", "tools": ["read_file"], "approvalMode": "autoEdit"}, "profile.json")
    assert p.approval_mode == "autoEdit"
    with pytest.raises(ProfileError, match=r"profile.json: sandbox: Input should be"):
        parse_profile({"sandbox": "vm"}, "profile.json")
    with pytest.raises(ProfileError, match="tool name"):
        parse_profile({"tools": ["bad name!"]}, "p")
    with pytest.raises(ProfileError, match="must be an object"):
        parse_profile(["x"], "p")


@pytest.mark.parametrize(
    "toml",
    [
        'systemPromptFile = "~/.ssh/id_ed25519"',
        'systemPromptFile = "../outside.md"',
        '[systemPrompt]\ncontributors = [{ id = "x", type = "file", files = ["rules.md", "/etc/hostname"] }]',
    ],
)
def test_a_workspace_settings_file_may_not_name_prompt_files_outside_the_workspace(tmp_path, toml):
    """A cloned repository's .context-companion.toml cannot make the instruction carry your files:
    the value is left out (the other settings stay) and one line names the key, the value and why."""
    from context_companion.settings.layers import resolve_with_refusals

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "rules.md").write_text("ok")
    (ws / ".context-companion.toml").write_text(toml + "\n")
    settings, refusals = resolve_with_refusals([ws], environ={}, user_dir=tmp_path / "user")
    assert settings.system_prompt_file is None
    if settings.system_prompt is not None and not isinstance(settings.system_prompt, str):
        assert [c.files for c in settings.system_prompt.contributors] == [["rules.md"]]
    (refusal,) = refusals
    assert "outside the workspace folders" in refusal.message and ".context-companion.toml" in refusal.message
    assert refusal.value in ("~/.ssh/id_ed25519", "../outside.md", "/etc/hostname"), refusal
    (ws / ".context-companion.toml").write_text('systemPromptFile = "rules.md"\n')  # inside: allowed
    assert resolve_settings([ws], environ={}, user_dir=tmp_path / "user").system_prompt_file == "rules.md"


def test_an_untrusted_workspace_keeps_its_trust_when_the_editor_settings_are_invalid(tmp_path):
    """Invalid editor settings fall back to the other layers, still judged as Restricted Mode: the
    workspace's settings file names no file."""
    from context_companion.workspace.snapshot import initial_snapshot

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "rules.md").write_text("Workspace template.\n")
    (ws / ".context-companion.toml").write_text('systemPromptFile = "rules.md"\n')
    for section in (
        {"memory": {"maxTokens": -1}, "workspaceTrusted": False},
        {"memory": {"maxTokens": -1}, "workspaceTrusted": "no"},
    ):
        snapshot, errors = initial_snapshot([ws], section, "utf-16", environ={}, user_dir=tmp_path / "user")
        assert errors and snapshot.settings.system_prompt_file is None
        assert [r.key for r in snapshot.refusals] == ["systemPromptFile"]
    snapshot, _ = initial_snapshot([ws], {"memory": {"maxTokens": -1}}, "utf-16", environ={}, user_dir=tmp_path / "u")
    assert snapshot.settings.system_prompt_file == "rules.md"  # trusted (not said): inside the workspace is fine
