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


def test_every_command_and_notification_is_documented_in_the_protocol_doc():
    from context_companion.workspace.commands import COMMANDS, NOTIFICATIONS

    doc = (DOCS / "protocol.md").read_text()
    for name in [c.name for c in COMMANDS] + list(NOTIFICATIONS):
        assert f"### `{name}`" in doc, f"{name} missing from docs/protocol.md"


def test_every_command_names_an_existing_params_model():
    from context_companion.workspace.commands import COMMANDS

    for command in COMMANDS:
        assert issubclass(command.params_model(), BaseModel), command.name
