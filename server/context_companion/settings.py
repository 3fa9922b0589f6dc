"""Settings: one pydantic model, resolved from layered sources.

Layers, lowest to highest priority:

1. the defaults below;
2. the user file ``config.toml`` in the platformdirs user config dir for ``context-companion``;
3. the workspace file ``.context-companion.toml`` (first workspace folder that has one);
4. the editor's settings (initializationOptions / ``workspace/configuration``);
5. environment variables ``CONTEXT_COMPANION_*``.

Keys are camelCase on the wire and in files (``maxOpenFiles``); snake_case is accepted too.
Each layer is validated on its own first, so an error names the layer it came from.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from .errors import SettingsError
from .exclusion import DEFAULT_EXCLUDE

log = logging.getLogger(__name__)

ENV_PREFIX = "CONTEXT_COMPANION_"
APP_NAME = "context-companion"
WORKSPACE_SETTINGS_FILE = ".context-companion.toml"

BUILTIN_SECTION_IDS: tuple[str, ...] = (
    "preamble",
    "coreMandates",
    "agentContexts",
    "agentSkills",
    "hookContext",
    "primaryWorkflows",
    "planningWorkflow",
    "operationalGuidelines",
    "sandbox",
    "git",
    "finalReminder",
)
DYNAMIC_SOURCES: tuple[str, ...] = ("dateTime", "memory", "userInstructions", "toolListing", "environment")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


# --------------------------------------------------------------------------- agent profile


class Skill(_Model):
    """A skill the agent can activate (normally discovered from ``SKILL.md`` files)."""

    name: str = Field(min_length=1)
    description: str = ""
    location: str = ""


class Subagent(_Model):
    """A sub-agent the main agent may delegate to."""

    name: str = Field(min_length=1)
    description: str = ""


ApprovalMode = Literal["default", "plan", "autoEdit", "yolo"]
SandboxMode = Literal["outside", "container", "macos-seatbelt"]


class AgentProfile(_Model):
    """Who the agent is for one session: model, tools, mode. Passed per session or in settings."""

    model: str | None = None
    tools: list[str] = Field(default_factory=list)
    interactive: bool = True
    approval_mode: ApprovalMode = "default"
    sandbox: SandboxMode = "outside"
    skills: list[Skill] = Field(default_factory=list)
    discover_skills: bool = True
    subagents: list[Subagent] = Field(default_factory=list)
    include_subagent_delegation: bool = False
    mcp_instructions: str = ""
    hooks: bool = False
    user_instructions: str = ""

    @field_validator("tools")
    @classmethod
    def _tool_names(cls, tools: list[str]) -> list[str]:
        for name in tools:
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
                raise ValueError(f"tool name {name!r} may only hold letters, digits, '_', '-' and '.'")
        return tools


# --------------------------------------------------------------------------- prompt


class ContributorConfig(_Model):
    """One contributor of the system prompt: built-in, static, dynamic or ``file``."""

    id: str = Field(min_length=1)
    type: Literal["static", "dynamic", "file"] = "static"
    priority: int = 100
    enabled: bool = True
    content: str | None = None
    source: str | None = None
    files: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_kind(self) -> ContributorConfig:
        if not self.enabled:
            return self
        if self.type == "static" and not (self.content and self.content.strip()):
            raise ValueError(f"contributor {self.id!r}: a static contributor needs non-empty 'content'")
        if self.type == "dynamic" and self.source not in DYNAMIC_SOURCES:
            raise ValueError(
                f"contributor {self.id!r}: unknown source {self.source!r}; expected one of {', '.join(DYNAMIC_SOURCES)}"
            )
        if self.type == "file" and not self.files:
            raise ValueError(f"contributor {self.id!r}: a file contributor needs 'files'")
        return self


class SystemPromptConfig(_Model):
    contributors: list[ContributorConfig] = Field(default_factory=list)


class PromptSettings(_Model):
    sections: dict[str, bool] = Field(default_factory=dict)

    @field_validator("sections")
    @classmethod
    def _known_sections(cls, sections: dict[str, bool]) -> dict[str, bool]:
        known = {s.lower(): s for s in BUILTIN_SECTION_IDS}
        out: dict[str, bool] = {}
        for key, value in sections.items():
            canonical = known.get(key.lower())
            if canonical is None:
                raise ValueError(f"unknown section {key!r}; expected one of {', '.join(BUILTIN_SECTION_IDS)}")
            out[canonical] = value
        return out


# --------------------------------------------------------------------------- environment, tokens


class EnvironmentSettings(_Model):
    # The first user message by default: date and folder tree vary by day and session, and at the top of
    # the instruction they would change the bytes providers cache the prompt by.
    placement: Literal["initialMessage", "systemInstruction", "systemInstructionEnd", "off"] = "initialMessage"
    max_items: int = Field(default=200, ge=0, le=10_000)
    include_folder_tree: bool = True


class TokenSettings(_Model):
    encoding: str = "o200k_base"
    encoding_file: str | None = None
    allow_download: bool = False


# --------------------------------------------------------------------------- memory, context


# Families of memory and rule files, each turned off with one entry in ``memory.sources``.
SourceFamily = Literal[
    "agents",
    "claude",
    "gemini",
    "codex",
    "cursor",
    "copilot",
    "windsurf",
    "cline",
    "continue",
    "kiro",
    "zed",
    "junie",
    "roo",
    "context-companion",
]
SOURCE_FAMILIES: tuple[str, ...] = get_args(SourceFamily)


class MemorySettings(_Model):
    file_names: list[str] = Field(default_factory=lambda: ["AGENTS.md", "GEMINI.md", "CLAUDE.md", "CLAUDE.local.md"])
    read_vendor_globals: bool = True
    boundary_markers: list[str] = Field(default_factory=lambda: [".git"])
    max_file_bytes: int = Field(default=256 * 1024, ge=1)
    max_total_bytes: int = Field(default=1024 * 1024, ge=0)
    max_tokens: int = Field(default=0, ge=0)
    debounce_ms: int = Field(default=25, ge=0, le=10_000)
    import_max_depth: int = Field(default=5, ge=0, le=20)
    max_ignore_patterns: int = Field(default=10_000, ge=1, le=1_000_000)
    # The walk of a workspace folder for memory files (and the file watch, which follows it) stops
    # after this many directories or files listed: a folder such as / or a home directory is
    # searched near its top, and a warning names what was left out.
    max_walk_directories: int = Field(default=50_000, ge=1)
    max_walk_files: int = Field(default=500_000, ge=1)
    watch: bool = True
    sources: list[SourceFamily] = Field(default_factory=lambda: list(SOURCE_FAMILIES))  # type: ignore[arg-type]
    # "turn": memory that depends on the open files (JIT files, glob rules) arrives as per-turn updates,
    # so opening a file never changes the instruction; "instruction": it is part of the instruction.
    on_demand_delivery: Literal["turn", "instruction"] = "turn"
    # "live": edits to memory rebuild the instruction; "session": the instruction keeps the memory of
    # the session start and edits arrive as per-turn updates until refreshMemory applies them.
    reload: Literal["live", "session"] = "live"

    @field_validator("file_names")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or "/" in name or "\\" in name or name in (".", ".."):
                raise ValueError(f"{name!r} is not a plain file name")
        return names


class ContextSettings(_Model):
    enabled: bool = True
    max_open_files: int = Field(default=10, ge=0, le=1000)
    max_selected_chars: int = Field(default=16384, ge=0)
    cursor_context_lines: int = Field(default=0, ge=0, le=200)
    exclude: list[str] = Field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    redact_secrets: bool = True


# --------------------------------------------------------------------------- server


class ServerSettings(_Model):
    # Read at start from the user's config file and the environment only: a WebSocket handshake
    # is checked before any editor or workspace settings exist.
    allowed_origins: list[str] = Field(default_factory=list)
    # Every session keeps an instruction and a turn baseline: a client minting ids must not
    # grow the server without bound.
    max_sessions: int = Field(default=64, ge=1, le=10_000)


# --------------------------------------------------------------------------- agent companions


class GeminiCliSettings(_Model):
    # The language server starts the companion for the editor it serves; the one-shot CLI
    # commands never do, so this default only matters where an editor is attached.
    enabled: bool = True
    port: int = Field(default=0, ge=0, le=65535)  # 0: a random free port


class ClaudeCodeSettings(_Model):
    # On: tested end to end against the real Claude Code (tests/agents/test_claude_code_agent.py); loopback
    # only, a per-start token in a private lock file, Host/Origin checked on every handshake.
    enabled: bool = True


class CompanionSettings(_Model):
    """IDE integrations other agents connect to while the language server runs."""

    gemini_cli: GeminiCliSettings = Field(default_factory=GeminiCliSettings)
    claude_code: ClaudeCodeSettings = Field(default_factory=ClaudeCodeSettings)


# --------------------------------------------------------------------------- the whole


class Settings(_Model):
    """Every setting of Context Companion. See docs/configuration.md."""

    system_prompt: Annotated[str | SystemPromptConfig | None, Field(union_mode="left_to_right")] = None
    system_prompt_file: str | None = None
    write_system_prompt_to: str | None = None
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)
    tokens: TokenSettings = Field(default_factory=TokenSettings)
    profile: AgentProfile = Field(default_factory=AgentProfile)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    companion: CompanionSettings = Field(default_factory=CompanionSettings)


# --------------------------------------------------------------------------- resolution


_UNION_MARKERS = ("function-", "json-or-python", "union[", "lax-or-strict")


def field_path(loc: Sequence[Any]) -> str:
    """A pydantic error location as a dotted camelCase path (``systemPrompt.contributors[0]``)."""
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
            continue
        text = str(item)
        if text in ("str", "SystemPromptConfig") or text.startswith(_UNION_MARKERS):
            continue  # the branch names pydantic adds inside unions
        out += ("." if out else "") + (to_camel(text) if "_" in text else text)
    return out


def first_error(exc: ValidationError, source: str) -> SettingsError:
    """The most useful single error of a pydantic ``ValidationError``, as a :class:`SettingsError`."""
    errors = exc.errors(include_url=False)
    # For ``systemPrompt`` (str | object) prefer the error of the object branch.
    errors.sort(key=lambda e: 0 if "SystemPromptConfig" in map(str, e["loc"]) else 1)
    err = errors[0]
    msg = str(err["msg"])
    if err["type"] == "extra_forbidden":
        msg = "unknown setting"
    msg = msg.removeprefix("Value error, ")
    return SettingsError(source, field_path(err["loc"]), msg)


def validate_layer(data: Mapping[str, Any], source: str) -> Settings:
    """Validate one layer alone (every field has a default). Raises :class:`SettingsError`."""
    if not isinstance(data, Mapping):
        raise SettingsError(source, "", f"expected a table/object of settings, got {type(data).__name__}")
    try:
        return Settings.model_validate(dict(data))
    except ValidationError as exc:
        raise first_error(exc, source) from None


def _normalise_keys(data: Any) -> Any:
    """snake_case → camelCase for dict keys, recursively (so layers merge key by key)."""
    if isinstance(data, Mapping):
        return {(to_camel(k) if isinstance(k, str) and "_" in k else k): _normalise_keys(v) for k, v in data.items()}
    return data


def deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``over`` into a copy of ``base``; nested tables merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) and key != "systemPrompt":
            out[key] = deep_merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def editor_layer(initialization_options: Mapping[str, Any], answer: Mapping[str, Any]) -> dict[str, Any]:
    """The editor's one layer: ``initializationOptions``, with the client's later answer
    (``workspace/configuration`` or ``didChangeConfiguration`` settings) merged over it key by key.

    A null value sets nothing (the value below it stays), so an answer of ``{}``, ``null`` or a
    partial table never erases what the initialization options set."""
    return deep_merge(_without_nulls(_normalise_keys(initialization_options)), _without_nulls(_normalise_keys(answer)))


def _without_nulls(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        out[key] = _without_nulls(value) if isinstance(value, Mapping) and key != "systemPrompt" else value
    return out


def user_config_dir() -> Path:
    """The user's config dir for context-companion (``CONTEXT_COMPANION_CONFIG_DIR`` overrides)."""
    override = os.environ.get(ENV_PREFIX + "CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir as _ucd

    return Path(_ucd(APP_NAME, appauthor=False))


def read_toml(path: Path) -> dict[str, Any]:
    """Read a TOML settings file. Raises :class:`SettingsError` naming the file."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as fh:
            data: dict[str, Any] = tomllib.load(fh)
            return data
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(str(path), "", f"not valid TOML: {exc}") from None
    except OSError as exc:
        raise SettingsError(str(path), "", f"cannot read: {exc.strerror or exc}") from None


_FIELD_INDEX: dict[type[BaseModel], dict[str, tuple[str, Any]]] = {}


def _fields_of(model: type[BaseModel]) -> dict[str, tuple[str, Any]]:
    """``{folded name: (alias, annotation)}`` where folded drops case and underscores."""
    if model not in _FIELD_INDEX:
        _FIELD_INDEX[model] = {
            name.replace("_", "").lower(): (info.alias or name, info.annotation)
            for name, info in model.model_fields.items()
        }
    return _FIELD_INDEX[model]


def _parse_env_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from ``CONTEXT_COMPANION_*`` variables.

    * ``CONTEXT_COMPANION_<FIELD>__<FIELD>`` sets any setting; ``__`` separates nesting levels,
      names match case-insensitively with or without underscores
      (``CONTEXT_COMPANION_MEMORY__MAX_TOKENS=2000``). Values are JSON when they parse as JSON
      (numbers, booleans, lists), else plain strings.
    * ``CONTEXT_COMPANION_PROMPT_<ID>=0|false|1|true`` switches a built-in section.
    * ``CONTEXT_COMPANION_SYSTEM_MD`` and ``CONTEXT_COMPANION_WRITE_SYSTEM_MD`` (see docs/prompt.md).
    """
    out: dict[str, Any] = {}
    section_ids = {s.lower(): s for s in BUILTIN_SECTION_IDS}
    for key in sorted(environ):
        if not key.startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX) :]
        raw = environ[key]
        if rest in ("SYSTEM_MD", "WRITE_SYSTEM_MD", "CONFIG_DIR", "LOG_LEVEL"):
            continue  # handled where they are used
        if rest.startswith("PROMPT_") and "__" not in rest:
            section = section_ids.get(rest[len("PROMPT_") :].lower())
            if section is None:
                raise SettingsError(
                    "environment", key, f"unknown section; expected one of {', '.join(BUILTIN_SECTION_IDS)}"
                )
            out.setdefault("prompt", {}).setdefault("sections", {})[section] = _env_switch(key, raw)
            continue
        parts = rest.split("__")
        model: type[BaseModel] | None = Settings
        target = out
        path: list[str] = []
        for i, part in enumerate(parts):
            fields = _fields_of(model) if model is not None else {}
            hit = fields.get(part.replace("_", "").lower())
            if hit is None:
                raise SettingsError("environment", key, "unknown setting")
            alias, annotation = hit
            path.append(alias)
            if i == len(parts) - 1:
                target[alias] = _parse_env_value(raw)
            else:
                target = target.setdefault(alias, {})
                model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return out


def _env_switch(key: str, raw: str) -> bool:
    """An on/off environment value (``0``/``false``/``no``/``off`` or ``1``/``true``/``yes``/``on``)."""
    value = raw.strip().lower()
    if value in ("0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise SettingsError("environment", key, f"expected 0, 1, true or false, got {raw!r}")


def system_md_env(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """``CONTEXT_COMPANION_SYSTEM_MD`` → ``("switch"|"off"|"path", value)`` or None when unset."""
    raw = environ.get(ENV_PREFIX + "SYSTEM_MD")
    if raw is None or raw.strip() == "":
        return None
    low = raw.strip().lower()
    if low in ("1", "true"):
        return ("switch", "")
    if low in ("0", "false"):
        return ("off", "")
    return ("path", raw.strip())


def resolve_settings(
    workspace_folders: list[Path] | tuple[Path, ...] = (),
    editor: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_dir: Path | None = None,
) -> Settings:
    """Resolve the layered settings. Raises :class:`SettingsError` naming the bad layer."""
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, Any]]] = []
    user_file = (user_dir if user_dir is not None else user_config_dir()) / "config.toml"
    if user_file.is_file():
        layers.append((str(user_file), read_toml(user_file)))
    for folder in workspace_folders:
        ws_file = Path(folder) / WORKSPACE_SETTINGS_FILE
        if ws_file.is_file():
            ws_data = read_toml(ws_file)
            _confine_files(validate_layer(ws_data, str(ws_file)), Path(folder), str(ws_file))
            layers.append((str(ws_file), ws_data))
            break
    if editor:
        layers.append(("editor settings", editor))
    env = env_layer(environ)
    if env:
        layers.append(("environment", env))

    merged: dict[str, Any] = {}
    for source, data in layers:
        validate_layer(data, source)
        merged = deep_merge(merged, _normalise_keys(data))
    return validate_layer(merged, "settings")


def allowed_origins() -> frozenset[str]:
    """``server.allowedOrigins`` from the user's config file and the environment: a socket's
    handshake comes before ``initialize``, so editor and workspace settings cannot widen it.
    Settings in error allow no Origin (said in the log)."""
    try:
        return frozenset(o.rstrip("/") for o in resolve_settings().server.allowed_origins)
    except SettingsError as exc:
        log.warning("settings: %s; no Origin is allowed", exc)
        return frozenset()


def _confine_files(layer: Settings, folder: Path, source: str) -> None:
    """The files a workspace's own settings file names for the prompt must lie in that workspace:
    a cloned repository may not make the instruction carry ``~/.ssh`` or any other file of yours."""
    named: list[tuple[str, str]] = []
    template = (layer.system_prompt_file or "").strip()
    if template.lower() not in ("", "0", "1", "false", "true"):
        named.append(("systemPromptFile", template))
    if isinstance(layer.system_prompt, SystemPromptConfig):
        for i, c in enumerate(layer.system_prompt.contributors):
            named += [(f"systemPrompt.contributors[{i}].files[{j}]", f) for j, f in enumerate(c.files)]
    root = os.path.realpath(folder)
    for key, raw in named:
        path = Path(raw).expanduser()
        real = os.path.realpath(path if path.is_absolute() else folder / path)
        if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
            raise SettingsError(
                source, key, f"names a file outside the workspace folder ({raw}); only your own settings may"
            )


def parse_profile(data: Any, source: str) -> AgentProfile:
    """Validate an agent profile given per session or in a ``--profile`` file."""
    from .errors import ProfileError

    if not isinstance(data, Mapping):
        raise ProfileError(source, "", f"a profile must be an object, got {type(data).__name__}")
    try:
        return AgentProfile.model_validate(dict(data))
    except ValidationError as exc:
        err = first_error(exc, source)
        raise ProfileError(source, err.field, err.reason) from None
