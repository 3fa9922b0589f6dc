"""The documented settings stay true to the model."""

from __future__ import annotations

from pathlib import Path

import tomllib
from context_companion.settings import Settings, validate_layer
from pydantic import BaseModel

DOCS = Path(__file__).resolve().parent.parent / "docs"


def leaf_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += leaf_keys(ann, f"{prefix}{alias}.")
        else:
            keys.append(prefix + alias)
    return keys


def test_example_settings_file_is_valid_and_equals_the_defaults():
    data = tomllib.loads((DOCS / "settings.example.toml").read_text())
    assert validate_layer(data, "settings.example.toml") == Settings(prompt=validate_layer(data, "x").prompt)
    assert validate_layer(data, "x").model_dump(exclude={"prompt"}) == Settings().model_dump(exclude={"prompt"})


def test_every_setting_is_in_the_example_and_the_configuration_doc():
    example = (DOCS / "settings.example.toml").read_text()
    doc = (DOCS / "configuration.md").read_text()
    for key in leaf_keys(Settings):
        leaf = key.split(".")[-1]
        assert leaf in example, f"{key} missing from docs/settings.example.toml"
        assert f"`{key}`" in doc, f"{key} missing from docs/configuration.md"


def documented_settings() -> list[str]:
    """Keys in the first column of docs/configuration.md's tables."""
    import re

    doc = (DOCS / "configuration.md").read_text()
    return re.findall(r"^\| `([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*)` \|", doc, re.MULTILINE)


def test_every_documented_setting_exists_in_the_model():
    keys = set(leaf_keys(Settings))
    documented = documented_settings()
    assert len(documented) >= len(keys) // 2, "the table format of docs/configuration.md changed: fix this test"
    assert [k for k in documented if k not in keys] == [], "documented in docs/configuration.md but not a setting"
    assert len(documented) == len(set(documented)), "a setting is documented twice"


def server_methods() -> set[str]:
    """Commands and custom methods the real server handles or sends."""
    from context_companion.lsp.push import MEMORY_CHANGED, SYSTEM_INSTRUCTION_CHANGED
    from context_companion.lsp.server import create_server
    from context_companion.workspace.commands import COMPANION_STARTED, SERVER_REQUESTS

    fm = create_server().protocol.fm
    custom = {name for name in fm.features if name.startswith("contextCompanion")}
    return set(fm.commands) | custom | {SYSTEM_INSTRUCTION_CHANGED, MEMORY_CHANGED, COMPANION_STARTED, *SERVER_REQUESTS}


def test_the_protocol_doc_and_the_server_list_the_same_commands_and_notifications():
    import re

    doc = (DOCS / "protocol.md").read_text()
    headings = re.findall(r"^### `(contextCompanion[./][A-Za-z]+)`", doc, re.MULTILINE)
    documented = set(headings)
    served = server_methods()
    assert sorted(served - documented) == [], "handled or sent by the server but missing from docs/protocol.md"
    assert sorted(documented - served) == [], "in docs/protocol.md but not handled or sent by the server"
    # One description each: two texts for one method drift apart (companionStarted and showDiff had).
    assert sorted({h for h in headings if headings.count(h) > 1}) == [], "described more than once"


def test_every_command_and_notification_is_documented_in_the_protocol_doc():
    from context_companion.workspace.commands import COMMANDS, NOTIFICATIONS

    doc = (DOCS / "protocol.md").read_text()
    for name in [c.name for c in COMMANDS] + list(NOTIFICATIONS):
        assert f"### `{name}`" in doc, f"{name} missing from docs/protocol.md"


def test_every_command_names_an_existing_params_model():
    from context_companion.workspace.commands import COMMANDS

    for command in COMMANDS:
        assert issubclass(command.params_model(), BaseModel), command.name


def test_every_release_file_and_version_the_docs_name_is_this_release() -> None:
    """Artifact names (wheel, sdist, .vsix, the installed extension's folder), the .vsix users install and the
    version our discovery files carry: in README.md and docs/ they are all ``__version__`` (docs/editors/vscode.md
    said ``context-companion.vsix`` and ``0.1.0`` after the release was 0.2.0)."""
    import re

    from context_companion import __version__

    named = re.compile(
        r"context_companion-([0-9][^-/\s`]*?)(?:-py3-none-any\.whl|\.tar\.gz)"
        r"|context-companion-([0-9][^/\s`]*?)\.vsix"
        r"|context-companion\.context-companion-([0-9][^/\s`]*)"
        r'|"version": "([^"]+)"'
    )
    wrong = []
    for doc in [DOCS.parent / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for match in named.finditer(text):
            found = next(g for g in match.groups() if g is not None)
            if found != __version__:
                wrong.append(f"{doc.relative_to(DOCS.parent)}: {match[0]}")
        for vsix in re.findall(r"code --install-extension (\S+)", text):
            if vsix != f"context-companion-{__version__}.vsix":
                wrong.append(f"{doc.relative_to(DOCS.parent)}: code --install-extension {vsix}")
    assert wrong == []


def test_every_setting_that_touches_files_ports_or_secrets_says_whether_a_workspace_may_set_it():
    """The keys come from the model's field markers, so a new file-naming key cannot be left out;
    each row says what the key does and the policy the server enforces for workspace values."""
    import re

    from context_companion.settings.provenance import sensitive

    doc = (DOCS / "configuration.md").read_text()
    rows = {
        key: (touches, policy)
        for touches, key, policy in re.findall(r"^\| ([a-z ]+) \| `([^`]+)` \| ([a-z ]+) \|", doc, re.MULTILINE)
    }
    marked = {s.key: (s.touches, s.workspace) for s in sensitive()}
    assert {"systemPromptFile", "writeSystemPromptTo", "tokens.encodingFile"} <= set(marked)
    assert rows == marked


def test_the_vscode_extension_restricts_every_setting_a_workspace_may_not_set_freely():
    """VS Code ignores the workspace values of restricted configurations in Restricted Mode: every
    declared setting that names a file or guards secrets is one."""
    import json

    from context_companion.settings.provenance import sensitive

    manifest = json.loads((DOCS.parent / "editors" / "vscode" / "package.json").read_text())
    blocks = manifest["contributes"]["configuration"]
    blocks = blocks if isinstance(blocks, list) else [blocks]
    declared = {k.removeprefix("contextCompanion.") for b in blocks for k in b.get("properties", {})}
    assert "systemPromptFile" in declared
    restricted = set(manifest["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"])
    for s in sensitive():
        top = s.key.split("[]")[0].rsplit(".contributors", 1)[0]  # systemPrompt.contributors[].files → systemPrompt
        if s.workspace != "yes" and top in declared:
            assert f"contextCompanion.{top}" in restricted, s.key
