"""Pydantic models of every command's argument and of the cursor notification's params.

Each command takes one optional JSON object. :func:`parse` validates it and raises
:class:`~context_companion.errors.ParamsError` naming the field and the reason; every bridge
(LSP, MCP, ...) validates with the same models, so they reject the same input the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from ..errors import ParamsError
from ..memory.agents import AgentId, agent_id
from ..settings import field_path


class _Params(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True)


# ``session`` is the name agent tools (MCP) use for the same field.
SessionId = Field(
    default="default", min_length=1, max_length=200, validation_alias=AliasChoices("sessionId", "session")
)


class StartSessionParams(_Params):
    session_id: str = SessionId
    profile: dict[str, Any] | None = None


class EndSessionParams(_Params):
    session_id: str = Field(min_length=1, max_length=200)


# ``includeMemory``: whether the memory files are in the answer; False when the agent gets them another way.
INCLUDE_MEMORY = (
    "false: the agent gets the project's memory files another way (VS Code's chat instructions), so they are left out"
)


class GetSystemInstructionParams(_Params):
    session_id: str = SessionId
    if_none_match: str | None = None
    include_memory: bool = Field(default=True, description=INCLUDE_MEMORY)


class RefreshMemoryParams(_Params):
    environment: bool = False  # also take the folder trees again


class GetTurnContextParams(_Params):
    session_id: str = SessionId
    force_full: bool = False
    pending_tool_call: bool = False
    include_memory: bool = Field(default=True, description=INCLUDE_MEMORY)


class Message(BaseModel):
    """A chat message: ``role`` plus any other fields (``content`` may be a string or parts)."""

    model_config = ConfigDict(extra="allow")
    role: str = Field(min_length=1)


MAX_MESSAGES = 10_000  # a conversation longer than this is not one an agent sends per turn


class BuildMessagesParams(_Params):
    session_id: str = SessionId
    messages: list[Message] = Field(max_length=MAX_MESSAGES)
    include_turn_context: bool = True
    include_environment: bool | None = None  # None: on the first turn (no assistant message yet)
    include_memory: bool = Field(default=True, description=INCLUDE_MEMORY)


class SessionOnlyParams(_Params):
    session_id: str = SessionId


class EmptyParams(_Params):
    pass


class OpenListenersParams(_Params):
    """``contextCompanion.openListeners``: which listeners the client wants open now."""

    for_: Literal["terminal", "mcp"] = Field("terminal", alias="for")


class AddMemoryParams(_Params):
    fact: str = Field(validation_alias=AliasChoices("fact", "text"))  # ``text`` for agent tools (MCP)
    scope: Literal["global", "workspace"] = "global"

    @field_validator("fact")
    @classmethod
    def _not_blank(cls, fact: str) -> str:
        if not fact.strip():
            raise ValueError("must not be empty")
        if len(fact) > 10_000:
            raise ValueError("is longer than 10000 characters")
        return fact


AgentName = AgentId  # the agents explainMemory knows, from their data tables


class ExplainMemoryParams(_Params):
    agent: AgentName
    active_file: str | None = Field(default=None, min_length=1, max_length=4096)

    @field_validator("agent", mode="before")
    @classmethod
    def _alias(cls, agent: Any) -> Any:
        """``claude`` and ``gemini`` (any case) stand for ``claude-code`` and ``gemini-cli``."""
        return (agent_id(agent) or agent) if isinstance(agent, str) else agent


class VsCodeChatSettings(_Params):
    """The VS Code settings that decide which memory files its chat reads itself (defaults: VS Code 1.139's)."""

    use_agents_md_file: bool = True  # chat.useAgentsMdFile
    use_nested_agents_md_files: bool = False  # chat.useNestedAgentsMdFiles
    use_claude_md_file: bool = True  # chat.useClaudeMdFile
    use_instruction_files: bool = True  # github.copilot.chat.codeGeneration.useInstructionFiles


class GetAgentMemoryParams(_Params):
    agent: AgentName
    vscode: VsCodeChatSettings | None = None


class Position(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    line: int = Field(ge=0, le=2**31 - 1)
    character: int = Field(ge=0, le=2**31 - 1)


class Range(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    start: Position
    end: Position


class TextDocumentId(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    uri: str = Field(min_length=1)


class DidChangeCursorParams(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, alias_generator=to_camel, populate_by_name=True)
    text_document: TextDocumentId
    position: Position
    selections: list[Range] = Field(default_factory=list, max_length=1000)


P = TypeVar("P", bound=BaseModel)


def parse(model: type[P], args: Sequence[Any], what: str) -> P:
    """Validate ``args`` (the executeCommand arguments: none, or one object) against ``model``."""
    if len(args) > 1:
        raise ParamsError(f"{what}: expected at most one argument (an object), got {len(args)}")
    raw = args[0] if args else {}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{what}: the argument must be a JSON object, got {type(raw).__name__}")
    return parse_object(model, raw, what)


def parse_object(model: type[P], raw: Any, what: str, names: Mapping[str, str] | None = None) -> P:
    """Validate one params object. ``names`` renames fields in the error message (a bridge whose
    arguments go by other names than the LSP ones)."""
    if not isinstance(raw, dict):
        raise ParamsError(f"{what}: params must be a JSON object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = err["loc"]
        if names and loc and isinstance(loc[0], str):
            loc = (names.get(loc[0], loc[0]), *loc[1:])
        field = field_path(loc) or "(params)"
        reason = "unknown field" if err["type"] == "extra_forbidden" else str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "missing":
            reason = "is required"
        raise ParamsError(f"{what}: {field}: {reason}") from None
