"""Settings: one pydantic model, resolved from layered sources.

:mod:`.models` holds what a setting is (the models, their defaults and checks, errors that name the
field); :mod:`.layers` where values come from: the defaults, the user's ``config.toml``, the
workspace's ``.context-companion.toml``, the editor's settings and ``CONTEXT_COMPANION_*``
variables, lowest to highest priority, each validated on its own so an error names its layer.

Keys are camelCase on the wire and in files (``maxOpenFiles``); snake_case is accepted too.
Everything is importable from here, as it was when this was one module.
"""

from __future__ import annotations

from .layers import (
    APP_NAME,
    ENV_PREFIX,
    WORKSPACE_SETTINGS_FILE,
    allowed_origins,
    deep_merge,
    editor_layer,
    env_layer,
    read_toml,
    resolve_settings,
    system_md_env,
    user_config_dir,
)
from .models import (
    BUILTIN_SECTION_IDS,
    DYNAMIC_SOURCES,
    SOURCE_FAMILIES,
    AgentProfile,
    ApprovalMode,
    ClaudeCodeSettings,
    CompanionSettings,
    ContextSettings,
    ContributorConfig,
    EnvironmentSettings,
    GeminiCliSettings,
    MemorySettings,
    PromptSettings,
    SandboxMode,
    ServerSettings,
    Settings,
    Skill,
    SourceFamily,
    Subagent,
    SystemPromptConfig,
    TokenSettings,
    field_path,
    first_error,
    parse_profile,
    validate_layer,
)

__all__ = [
    "APP_NAME",
    "BUILTIN_SECTION_IDS",
    "DYNAMIC_SOURCES",
    "ENV_PREFIX",
    "SOURCE_FAMILIES",
    "WORKSPACE_SETTINGS_FILE",
    "AgentProfile",
    "ApprovalMode",
    "ClaudeCodeSettings",
    "CompanionSettings",
    "ContextSettings",
    "ContributorConfig",
    "EnvironmentSettings",
    "GeminiCliSettings",
    "MemorySettings",
    "PromptSettings",
    "SandboxMode",
    "ServerSettings",
    "Settings",
    "Skill",
    "SourceFamily",
    "Subagent",
    "SystemPromptConfig",
    "TokenSettings",
    "allowed_origins",
    "deep_merge",
    "editor_layer",
    "env_layer",
    "field_path",
    "first_error",
    "parse_profile",
    "read_toml",
    "resolve_settings",
    "system_md_env",
    "user_config_dir",
    "validate_layer",
]
