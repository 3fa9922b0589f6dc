"""What a setting is: the pydantic models of every setting, their defaults and checks, and how a
value is judged (:func:`validate_layer`, :func:`parse_profile`, errors naming the field).

Where values come from and how the layers merge: :mod:`.layers`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..agents import registry
from ..errors import SettingsError
from ..exclusion import DEFAULT_EXCLUDE
from .markers import marked

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
    files: list[str] = Field(default_factory=list, json_schema_extra=marked("reads files", "inside the workspace"))

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
    encoding_file: str | None = Field(default=None, json_schema_extra=marked("reads a file", "inside the workspace"))
    allow_download: bool = Field(default=False, json_schema_extra=marked("network", "yes"))


# --------------------------------------------------------------------------- memory, context


_AGENT_MODULES = tuple(registry.load(agent) for agent in registry.HOOK_AGENTS)
# Families of memory and rule files, each turned off with one entry in ``memory.sources``: the shared AGENTS.md,
# each agent with hooks that has files of its own (its module's SOURCE_FAMILY, the registry's order), the editors'.
SOURCE_FAMILIES: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "agents",
            *(m.SOURCE_FAMILY for m in _AGENT_MODULES if hasattr(m, "SOURCE_FAMILY")),
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
        )
    )
)
if TYPE_CHECKING:
    SourceFamily = str
else:
    SourceFamily = Literal[SOURCE_FAMILIES]
# The memory file names read by default: the shared AGENTS.md, each agent's own names (its module's
# MEMORY_FILE_NAMES, the registry's order), then the names several agents read besides Claude Code.
DEFAULT_FILE_NAMES: tuple[str, ...] = (
    "AGENTS.md",
    *(name for m in _AGENT_MODULES for name in getattr(m, "MEMORY_FILE_NAMES", ())),
    "CLAUDE.md",
    "CLAUDE.local.md",
)


class MemorySettings(_Model):
    file_names: list[str] = Field(
        default_factory=lambda: list(DEFAULT_FILE_NAMES),
        json_schema_extra=marked("reads files", "yes"),
    )
    read_vendor_globals: bool = Field(default=True, json_schema_extra=marked("reads files", "yes"))
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
    sources: list[SourceFamily] = Field(default_factory=lambda: list(SOURCE_FAMILIES))
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
    exclude: list[str] = Field(
        default_factory=lambda: list(DEFAULT_EXCLUDE), json_schema_extra=marked("secrets", "add only")
    )
    redact_secrets: bool = Field(default=True, json_schema_extra=marked("secrets", "add only"))


# --------------------------------------------------------------------------- server


class ServerSettings(_Model):
    # Read at start from the user's config file and the environment only: a WebSocket handshake
    # is checked before any editor or workspace settings exist.
    allowed_origins: list[str] = Field(default_factory=list, json_schema_extra=marked("opens a port", "no"))
    # Every session keeps an instruction and a turn baseline: a client minting ids must not
    # grow the server without bound.
    max_sessions: int = Field(default=64, ge=1, le=10_000)


# --------------------------------------------------------------------------- agent companions


class GeminiCliSettings(_Model):
    # The language server starts the companion for the editor it serves; the one-shot CLI
    # commands never do, so this default only matters where an editor is attached.
    enabled: bool = Field(default=True, json_schema_extra=marked("opens a port", "yes"))
    port: int = Field(default=0, ge=0, le=65535, json_schema_extra=marked("opens a port", "yes"))  # 0: any free port


class ClaudeCodeSettings(_Model):
    # On: tested end to end against the real Claude Code (tests/agents/test_claude_code_agent.py); loopback
    # only, a per-start token in a private lock file, Host/Origin checked on every handshake.
    enabled: bool = Field(default=True, json_schema_extra=marked("opens a port", "yes"))


class AgentHooksSettings(_Model):
    # On: `context-companion hook` asks the editor's server for the memory of the open files over a
    # loopback socket, found through an owner-only discovery file holding a per-start token.
    enabled: bool = Field(default=True, json_schema_extra=marked("opens a port", "yes"))


class CompanionSettings(_Model):
    """IDE integrations other agents connect to while the language server runs."""

    gemini_cli: GeminiCliSettings = Field(default_factory=GeminiCliSettings)
    claude_code: ClaudeCodeSettings = Field(default_factory=ClaudeCodeSettings)
    agent_hooks: AgentHooksSettings = Field(default_factory=AgentHooksSettings)


# --------------------------------------------------------------------------- the whole


class Settings(_Model):
    """Every setting of Context Companion. See docs/configuration.md."""

    system_prompt: Annotated[str | SystemPromptConfig | None, Field(union_mode="left_to_right")] = None
    system_prompt_file: str | None = Field(
        default=None, json_schema_extra=marked("reads a file", "inside the workspace")
    )
    write_system_prompt_to: str | None = Field(
        default=None, json_schema_extra=marked("writes a file", "inside the workspace")
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)
    tokens: TokenSettings = Field(default_factory=TokenSettings)
    profile: AgentProfile = Field(default_factory=AgentProfile)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    companion: CompanionSettings = Field(default_factory=CompanionSettings)


# --------------------------------------------------------------------------- judging a value


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


def parse_profile(data: Any, source: str) -> AgentProfile:
    """Validate an agent profile given per session or in a ``--profile`` file."""
    from ..errors import ProfileError

    if not isinstance(data, Mapping):
        raise ProfileError(source, "", f"a profile must be an object, got {type(data).__name__}")
    try:
        return AgentProfile.model_validate(dict(data))
    except ValidationError as exc:
        err = first_error(exc, source)
        raise ProfileError(source, err.field, err.reason) from None
