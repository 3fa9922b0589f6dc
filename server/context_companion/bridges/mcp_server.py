"""The MCP face of the workspace core: tools, resources and a prompt on the official SDK's server.

Every tool is a row of :data:`~context_companion.workspace.commands.COMMANDS`: its input schema is
the row's pydantic params model (``model_json_schema``), its arguments are validated by the same
model, and it runs the same function, so the LSP commands and the MCP tools cannot drift. Where
the tool's argument is named differently (``session``, ``text``), the model accepts both names.

Where the state comes from is a :class:`StateSource`: a standalone process (``mcp_main``) or a
language server hosting this endpoint. The source calls :meth:`McpBridge.changed` after memory
or editor state changed; the bridge decides from etags whether a resource really changed and
sends ``notifications/resources/updated`` (to clients that subscribed: ``resources/subscribe``
on handshake connections, ``subscriptions/listen`` on 2026-07-28 ones) and
``notifications/resources/list_changed``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..errors import ContextCompanionError
from ..workspace.changes import MemoryChange, changed_sections
from ..workspace.commands import COMMANDS, Command, Outcome
from ..workspace.companion import Companion
from ..workspace.params import parse_object
from ..workspace.sessions import DEFAULT_SESSION, AgentSession

log = logging.getLogger(__name__)

SCHEME = "context-companion://"
INSTRUCTION_URI = SCHEME + "instruction"
TURN_CONTEXT_URI = SCHEME + "turn-context"
MEMORY_PREFIX = SCHEME + "memory/"
MEMORY_TEMPLATE = MEMORY_PREFIX + "{path}"
PROMPT_NAME = "refreshed_system_instruction"
SESSION = {"sessionId": "session"}  # LSP field name → MCP argument name
# Sent by ``mcp --attach --memory-elsewhere`` on every HTTP request to the language server's endpoint: this
# connection's agent gets the memory files another way (VS Code's chat instructions).
MEMORY_HEADER = "Context-Companion-Memory"
MEMORY_ELSEWHERE = "elsewhere"
INCLUDE_MEMORY = "includeMemory"
# The session of such an agent when a call names none: VS Code's chat (its language model tools use it too),
# apart from ``default``, whose instruction (the editor's status bar, other clients) keeps its memory.
MEMORY_ELSEWHERE_SESSION = "vscode-chat"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    command: str  # the row of workspace.commands.COMMANDS it runs
    description: str
    names: Mapping[str, str]  # LSP argument name → the name this tool uses
    writes: bool = False
    idempotent: bool = True


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "get_system_instruction",
        "contextCompanion.getSystemInstruction",
        "The system instruction for this workspace (memory files, rules, environment), with its etag, token "
        "counts and the sections changed since this session's last call. Pass ifNoneMatch (the last etag) to "
        "get only unchanged=true when nothing changed.",
        SESSION,
    ),
    ToolSpec(
        "get_turn_context",
        "contextCompanion.getTurnContext",
        "The editor context for the next turn (open files, active file, cursor, selection) as JSON: the full "
        "context the first time in a session, then only what changed, or kind=none when nothing did.",
        SESSION,
        idempotent=False,
    ),
    ToolSpec(
        "build_messages",
        "contextCompanion.buildMessages",
        "The message list to send to a model: the current system instruction first, then the given messages "
        "unchanged, with the editor context of this turn attached.",
        SESSION,
        idempotent=False,
    ),
    ToolSpec(
        "show_memory",
        "contextCompanion.showMemory",
        "Every memory and rule file found: tier, tokens, whether and why it is included, plus files dropped "
        "by the token budget and warnings (skipped duplicates, failed imports).",
        {},
    ),
    ToolSpec(
        "add_memory",
        "contextCompanion.addMemory",
        "Remember a fact: append it as a bullet to the workspace or the global AGENTS.md (created if missing).",
        {"fact": "text"},
        writes=True,
        idempotent=False,
    ),
)

_ROWS: dict[str, Command] = {c.name: c for c in COMMANDS}


def input_schema(spec: ToolSpec, memory_elsewhere: bool = False) -> dict[str, Any]:
    """The JSON schema of the row's params model, with this tool's argument names; for an agent that
    gets the memory files another way, ``includeMemory`` defaults to false."""
    schema = _ROWS[spec.command].params_model().model_json_schema(by_alias=True)
    props = schema.get("properties", {})
    renamed = {}
    for key, value in props.items():
        name = spec.names.get(key, key)
        if name != key:
            value = {k: v for k, v in value.items() if k != "title"}
        if memory_elsewhere and key == INCLUDE_MEMORY:
            value = {**value, "default": False}
        if memory_elsewhere and key == "sessionId":
            value = {**value, "default": MEMORY_ELSEWHERE_SESSION}
        renamed[name] = value
    schema["properties"] = renamed
    if "required" in schema:
        schema["required"] = [spec.names.get(k, k) for k in schema["required"]]
    schema.pop("title", None)
    return schema


class StateSource(Protocol):
    """Where the bridge reads the workspace state from."""

    async def ready(self) -> Companion:
        """The companion, once memory and the tokenizer are loaded."""
        ...

    def texts(self) -> Mapping[str, str]:
        """URI → text of the documents the editor has open."""
        ...

    def applied(self, change: MemoryChange) -> None:
        """A tool changed memory (``add_memory``): the change is already applied."""
        ...


def _etag(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=_text(message), is_error=True)


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    # The SDK (pinned) keeps the connection on the per-request session; notifications outside a
    # request (resources/updated after a file change) go through the connection.
    return ctx.session._connection


def _without_memory(arguments: Any) -> Any:
    """A call's arguments for an agent that gets the memory files another way: ``includeMemory`` false and its
    own session unless the call says otherwise (anything but an object is left to the params check)."""
    if arguments is not None and not isinstance(arguments, dict):
        return arguments
    given = arguments or {}
    session = {} if {"session", "sessionId"} & set(given) else {"session": MEMORY_ELSEWHERE_SESSION}
    return {INCLUDE_MEMORY: False, **session, **given}


def _memory_elsewhere(ctx: Any) -> bool:
    """Whether the request came over HTTP from ``mcp --attach --memory-elsewhere`` (its header)."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    if headers is None:
        return False
    return str(headers.get(MEMORY_HEADER, "")).strip().lower() == MEMORY_ELSEWHERE


class McpBridge:
    """One MCP server over one :class:`StateSource`; serves any number of connections.

    ``memory_elsewhere``: the agent gets the project's memory files another way (VS Code's chat
    instructions), so the instruction, the turn context and the prompt leave them out unless a call asks
    for them (``includeMemory: true``). A language server's endpoint serves agents of both kinds: there a
    connection says so with the :data:`MEMORY_HEADER` header."""

    def __init__(
        self, source: StateSource, *, mode: str, read_only: bool = False, memory_elsewhere: bool = False
    ) -> None:
        self.source = source
        self.read_only = read_only
        self.memory_elsewhere = memory_elsewhere
        self._bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus)
        self._subscriptions: dict[Any, set[str]] = {}  # handshake connection → subscribed URIs
        self._connections: set[Any] = set()  # handshake connections seen (for list_changed)
        self._etags: dict[str, str] = {}  # URI → etag last announced
        self._memory_uris: frozenset[str] | None = None
        self.server: Server[Any] = Server(
            "context-companion",
            version=__version__,
            title="Context Companion",
            instructions=mode,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=self._listen,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )
        self.server.middleware.append(self._track)
        self._tools = {spec.name: spec for spec in TOOLS}
        self._tool_lists = {flag: [self._tool(spec, flag) for spec in TOOLS] for flag in (False, True)}
        # The tools whose answer holds memory files unless told (``includeMemory``).
        self._memory_tools = {s.name for s in TOOLS if "include_memory" in _ROWS[s.command].params_model().model_fields}

    def initialization_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(resources_changed=True))

    # ------------------------------------------------------------------ tools

    def _elsewhere(self, ctx: Any) -> bool:
        return self.memory_elsewhere or _memory_elsewhere(ctx)

    def _tool(self, spec: ToolSpec, memory_elsewhere: bool) -> types.Tool:
        annotations = types.ToolAnnotations(
            read_only_hint=not spec.writes,
            destructive_hint=False,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        )
        schema = input_schema(spec, memory_elsewhere)
        return types.Tool(name=spec.name, description=spec.description, input_schema=schema, annotations=annotations)

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tool_lists[self._elsewhere(ctx)])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self._tools.get(params.name)
        if spec is None:
            return _error(f"unknown tool {params.name!r}; the tools are {', '.join(self._tools)}")
        if spec.writes and self.read_only:
            return _error(f"{spec.name}: refused: the server was started with --read-only")
        arguments = params.arguments
        if spec.name in self._memory_tools and self._elsewhere(ctx):
            arguments = _without_memory(arguments)
        try:
            return await self._run(spec, arguments)
        except ContextCompanionError as exc:
            return _error(str(exc))
        except Exception as exc:
            log.exception("%s failed", spec.name)
            return _error(f"{spec.name} failed: {type(exc).__name__}: {exc}")

    async def _run(self, spec: ToolSpec, arguments: Any) -> types.CallToolResult:
        row = _ROWS[spec.command]
        parsed = parse_object(row.params_model(), {} if arguments is None else arguments, spec.name, spec.names)
        companion = await self.source.ready()
        session_id = getattr(parsed, "session_id", None)
        previous = companion.sessions.find(session_id) if session_id else None
        before = previous.instruction if previous is not None else None
        result = row.run(companion, parsed, self.source.texts())
        if isinstance(result, Outcome):
            self.source.applied(result.change)
            await self.changed(result.change)
            return types.CallToolResult(
                content=_text(f"Added to {result.result['path']}"), structured_content=result.result
            )
        if spec.name == "get_system_instruction":
            return self._instruction_result(companion, result, before)
        return types.CallToolResult(content=_text(json.dumps(result, ensure_ascii=False)), structured_content=result)

    def _instruction_result(self, companion: Companion, result: dict[str, Any], before: Any) -> types.CallToolResult:
        agent = companion.sessions.find(result["sessionId"])
        instruction = agent.instruction if agent is not None else None
        assert instruction is not None  # the row's function just built it
        structured = {
            "sessionId": result["sessionId"],
            "etag": instruction.etag,
            "unchanged": result["unchanged"],
            "tokens": instruction.tokens.to_wire(),
            "changedSections": list(changed_sections(before, instruction)) if before is not None else [],
        }
        # The text too, as getSystemInstruction answers it: a client that gives the model the structured
        # content instead of the text blocks (VS Code 1.139 does) would get no instruction at all otherwise.
        if not result["unchanged"]:
            structured["text"] = instruction.text
        text = f"Unchanged (etag {instruction.etag})." if result["unchanged"] else instruction.text
        return types.CallToolResult(content=_text(text), structured_content=structured)

    # ------------------------------------------------------------------ resources

    def _memory_files(self, companion: Companion) -> dict[str, Any]:
        return {MEMORY_PREFIX + quote(f.path, safe="/~"): f for f in companion.show_memory().files}

    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        companion = await self.source.ready()
        resources = [
            types.Resource(
                name="instruction",
                title="System instruction",
                uri=INSTRUCTION_URI,
                mime_type="text/markdown",
                description="The system instruction an agent should run with now.",
            ),
            types.Resource(
                name="turn-context",
                title="Editor context",
                uri=TURN_CONTEXT_URI,
                mime_type="application/json",
                description="The full editor context (open files, active file, cursor, selection).",
            ),
        ]
        for uri, info in self._memory_files(companion).items():
            state = "included" if info.included else "not included"
            resources.append(
                types.Resource(
                    name=info.path,
                    uri=uri,
                    mime_type="text/markdown",
                    description=f"{info.tier} memory file, {state}: {info.reason}",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def _list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            name="memory-file",
            title="Memory file",
            uri_template=MEMORY_TEMPLATE,
            mime_type="text/markdown",
            description="A memory or rule file by its path as show_memory lists it.",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        companion = await self.source.ready()
        text, mime = self._content(companion, uri, self._elsewhere(ctx))
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    def _content(self, companion: Companion, uri: str, memory_elsewhere: bool = False) -> tuple[str, str]:
        """A resource's text; ``memory_elsewhere``: the instruction and turn context without the memory files
        (a memory file's own resource is still its text: it is asked for by name)."""
        if uri == INSTRUCTION_URI:
            return self._instruction(companion, memory_elsewhere).text, "text/markdown"
        if uri == TURN_CONTEXT_URI:
            return json.dumps(self._turn_context(companion, memory_elsewhere), ensure_ascii=False), "application/json"
        if uri.startswith(MEMORY_PREFIX):
            info = self._memory_files(companion).get(MEMORY_PREFIX + quote(unquote(uri[len(MEMORY_PREFIX) :]), "/~"))
            if info is None:
                raise MCPError(types.INVALID_PARAMS, f"{uri}: not a memory file of this workspace")
            text, why = companion.memory.source_text(info.abs_path)
            if text is None:
                raise MCPError(types.INVALID_PARAMS, f"{uri}: {why}")
            return text, "text/markdown"
        raise MCPError(types.INVALID_PARAMS, f"{uri}: unknown resource")

    def _instruction(self, companion: Companion, memory_elsewhere: bool = False) -> Any:
        # The default session's instruction, without giving it to that session (a read is not a turn).
        agent = companion.sessions.find(DEFAULT_SESSION) or AgentSession(DEFAULT_SESSION, None)
        return companion.build(agent, include_memory=not memory_elsewhere)

    def _turn_context(self, companion: Companion, memory_elsewhere: bool = False) -> dict[str, Any]:
        # Always the full context, in a throwaway session never registered: reading it moves no
        # session's baseline and evicts none (the registry keeps at most server.maxSessions).
        probe = AgentSession("\0resource", None)
        turn = companion.turn_for(probe, self.source.texts(), force_full=True, memory=not memory_elsewhere)
        wire: dict[str, Any] = turn.to_wire()
        return wire

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
        uri = str(params.uri)
        self._content(await self.source.ready(), uri)  # raises for an unknown resource
        self._subscriptions.setdefault(_connection_of(ctx), set()).add(uri)
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams) -> Any:
        self._subscriptions.get(_connection_of(ctx), set()).discard(str(params.uri))
        return types.EmptyResult()

    async def _track(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Remember handshake connections (they get list_changed) and forget them when they close."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            conn = _connection_of(ctx)
            if conn not in self._connections:
                self._connections.add(conn)
                conn.exit_stack.callback(self._forget, conn)
        return await call_next(ctx)

    def _forget(self, conn: Any) -> None:
        self._connections.discard(conn)
        self._subscriptions.pop(conn, None)

    # ------------------------------------------------------------------ prompts

    async def _list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        prompt = types.Prompt(
            name=PROMPT_NAME,
            title="Refreshed system instruction",
            description="The current system instruction, to start or refresh a conversation with.",
            arguments=[types.PromptArgument(name="session", description="agent session id (default: default)")],
        )
        return types.ListPromptsResult(prompts=[prompt])

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}")
        companion = await self.source.ready()
        args = dict(params.arguments or {})
        elsewhere = self._elsewhere(ctx)
        if elsewhere and not {"session", "sessionId"} & set(args):
            args["session"] = MEMORY_ELSEWHERE_SESSION
        try:
            parsed = parse_object(
                _ROWS["contextCompanion.getSystemInstruction"].params_model(), args, PROMPT_NAME, SESSION
            )
            instruction = companion.system_instruction(
                parsed.session_id,  # type: ignore[attr-defined]
                include_memory=not elsewhere,
            )
        except ContextCompanionError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=instruction.text))
        return types.GetPromptResult(description=f"System instruction (etag {instruction.etag})", messages=[message])

    # ------------------------------------------------------------------ change notifications

    async def changed(self, change: MemoryChange | None = None) -> None:
        """State changed (files, editor): announce each resource whose content really changed."""
        try:
            companion = await self.source.ready()
            memory = self._memory_files(companion)
            current = {
                INSTRUCTION_URI: self._instruction(companion).etag,
                TURN_CONTEXT_URI: _etag(json.dumps(self._turn_context(companion), sort_keys=True)),
            }
        except Exception:
            log.exception("cannot recompute the MCP resources")
            return
        updated = [uri for uri, etag in current.items() if self._etags.get(uri, etag) != etag]
        self._etags.update(current)
        if change is not None:
            updated += [uri for uri, info in memory.items() if info.path in change.files]
        uris = frozenset(memory)
        list_changed = self._memory_uris is not None and uris != self._memory_uris
        self._memory_uris = uris
        for uri in updated:
            await self._bus.publish(ResourceUpdated(uri=uri))
            for conn, subscribed in list(self._subscriptions.items()):
                if uri in subscribed:
                    await self._send(conn, "updated", uri)
        if list_changed:
            await self._bus.publish(ResourcesListChanged())
            for conn in list(self._connections):
                await self._send(conn, "list_changed", None)

    async def prime(self) -> None:
        """Record the etags in force now: the first change is measured against them."""
        await self.changed()

    async def _send(self, conn: Any, kind: str, uri: str | None) -> None:
        try:
            if uri is not None:
                await conn.send_resource_updated(uri)
            else:
                await conn.send_resource_list_changed()
        except Exception as exc:  # a client that went away: forget it
            log.info("dropping an MCP connection that cannot be notified: %s", exc)
            self._forget(conn)
