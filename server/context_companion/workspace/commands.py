"""The table of ``contextCompanion.*`` commands: name, params model, function.

Every bridge serves the same commands from this table: the language server registers one
``workspace/executeCommand`` handler per row and lists the names in ``initialize``; the docs test
checks each name against docs/protocol.md. A function takes the :class:`~.companion.Companion`,
the validated params and the open documents' texts, and returns the JSON-ready result.

Light on purpose: the params models (pydantic) are named, not imported, so a server can register
the commands before its heavy imports are done.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from . import params as P
    from .changes import MemoryChange
    from .companion import Companion

Texts = Mapping[str, str]  # document URI → text, for the documents the editor has open


@dataclass(frozen=True)
class Outcome:
    """A command result that also changed memory: the bridge sends the result, then the change."""

    result: dict[str, Any]
    change: MemoryChange


@dataclass(frozen=True)
class Command:
    name: str
    params: str  # the model's name in workspace.params
    run: Callable[..., Any]  # (companion, params, texts[, prepared]) -> result | Outcome
    # Slow, thread-safe work run off the loop before ``run``; its value is ``run``'s 4th argument.
    prepare: Callable[[Companion], Any] | None = None
    # False: answered from the package's own tables, without a workspace (``run`` gets None for the companion),
    # so a client may ask before the workspace is read.
    workspace: bool = True

    def params_model(self) -> type[BaseModel]:
        model: type[BaseModel] = getattr(importlib.import_module(__package__ + ".params"), self.params)
        return model


def _start_session(c: Companion, p: P.StartSessionParams, _: Texts) -> dict[str, Any]:
    instruction = c.export(c.start_session(p.session_id, p.profile))
    return {"sessionId": p.session_id, "etag": instruction.etag, "tokens": instruction.tokens.to_wire()}


def _end_session(c: Companion, p: P.EndSessionParams, _: Texts) -> dict[str, Any]:
    c.end_session(p.session_id)
    return {"ended": p.session_id}


def _get_system_instruction(c: Companion, p: P.GetSystemInstructionParams, _: Texts) -> dict[str, Any]:
    instruction, prefix = c.system_instruction_report(p.session_id, include_memory=p.include_memory)
    instruction = c.export(instruction)
    head = {"sessionId": p.session_id, "etag": instruction.etag}
    if p.if_none_match is not None and p.if_none_match == instruction.etag:
        return {**head, "unchanged": True, "prefixStable": prefix}
    return {**head, "unchanged": False, **instruction.to_wire(), "prefixStable": prefix}


def _prepare_refresh(c: Companion) -> Any:
    return c.prepare_memory()


def _refresh_memory(c: Companion, p: P.RefreshMemoryParams, __: Texts, store: Any) -> dict[str, Any]:
    refreshed = c.refresh_memory(store, environment=p.environment)
    instruction = c.export(refreshed.instruction)
    return {
        "changed": refreshed.changed,
        "etag": instruction.etag,
        "tokens": instruction.tokens.to_wire(),
        "memoryFiles": instruction.memory_files(),
        "sessionsUpdated": list(refreshed.sessions_updated),
    }


def _get_turn_context(c: Companion, p: P.GetTurnContextParams, texts: Texts) -> dict[str, Any]:
    turn = c.turn_context(
        p.session_id,
        texts,
        force_full=p.force_full,
        pending_tool_call=p.pending_tool_call,
        memory=p.include_memory,
    )
    return turn.to_wire()


def _build_messages(c: Companion, p: P.BuildMessagesParams, texts: Texts) -> dict[str, Any]:
    messages = [m.model_dump() for m in p.messages]
    built, updates = c.build_messages(
        p.session_id, messages, texts, p.include_turn_context, p.include_environment, p.include_memory
    )
    return {"messages": built, "memoryUpdates": updates}


def _get_initial_history(c: Companion, p: P.SessionOnlyParams, _: Texts) -> dict[str, Any]:
    return {"messages": c.initial_history(p.session_id)}


def _show_memory(c: Companion, _: P.EmptyParams, __: Texts) -> dict[str, Any]:
    return memory_payload(c)


def memory_payload(c: Companion) -> dict[str, Any]:
    """``showMemory``'s result (and ``context-companion memory --json``)."""
    result = c.show_memory()
    with_turn = c.turn_delivered()
    return {
        "files": [{**f.to_wire(), "comesWithTurn": f.path in with_turn} for f in result.files],
        "text": result.text,
        "warnings": [*c.snapshot.refusal_lines(), *result.warnings],
        "dropped": list(result.dropped),
        "tokens": c.memory_tokens(result),
        "estimated": c.tokenizer.estimated,
    }


def _add_memory(c: Companion, p: P.AddMemoryParams, _: Texts) -> Outcome:
    path, change = c.add_memory(p.fact, p.scope)
    return Outcome({"path": str(path)}, change)


def _explain_memory(c: Companion, p: P.ExplainMemoryParams, _: Texts) -> dict[str, Any]:
    return {**c.explain_memory(p.agent, p.active_file).to_wire(), "estimated": c.tokenizer.estimated}


def _get_agent_memory(c: Companion, p: P.GetAgentMemoryParams, _: Texts) -> dict[str, Any]:
    from ..errors import ParamsError
    from ..memory.agents import vscode_rules

    rules: Any = p.agent
    if p.vscode is not None:
        if p.agent != "vscode":
            raise ParamsError('vscode: only allowed with agent "vscode"')
        v = p.vscode
        rules = vscode_rules(
            agents_md=v.use_agents_md_file,
            nested_agents_md=v.use_nested_agents_md_files,
            claude_md=v.use_claude_md_file,
            instruction_files=v.use_instruction_files,
        )
    return c.agent_memory(rules).to_wire(c.tokenizer.count)


def _list_agents(_: Companion | None, __: P.EmptyParams, ___: Texts) -> dict[str, Any]:
    from .agent_list import agent_list

    return agent_list()


def _get_compression_prompt(c: Companion, _: P.EmptyParams, __: Texts) -> dict[str, Any]:
    return {"text": c.compression_prompt()}


COMMANDS: tuple[Command, ...] = (
    Command("contextCompanion.startSession", "StartSessionParams", _start_session),
    Command("contextCompanion.endSession", "EndSessionParams", _end_session),
    Command("contextCompanion.getSystemInstruction", "GetSystemInstructionParams", _get_system_instruction),
    Command("contextCompanion.refreshMemory", "RefreshMemoryParams", _refresh_memory, prepare=_prepare_refresh),
    Command("contextCompanion.getTurnContext", "GetTurnContextParams", _get_turn_context),
    Command("contextCompanion.buildMessages", "BuildMessagesParams", _build_messages),
    Command("contextCompanion.getInitialHistory", "SessionOnlyParams", _get_initial_history),
    Command("contextCompanion.showMemory", "EmptyParams", _show_memory),
    Command("contextCompanion.addMemory", "AddMemoryParams", _add_memory),
    Command("contextCompanion.getCompressionPrompt", "EmptyParams", _get_compression_prompt),
    Command("contextCompanion.explainMemory", "ExplainMemoryParams", _explain_memory),
    Command("contextCompanion.getAgentMemory", "GetAgentMemoryParams", _get_agent_memory),
    Command("contextCompanion.listAgents", "EmptyParams", _list_agents, workspace=False),
)

# Notifications of the custom protocol, for the docs check (the handlers live with each bridge).
# Server → client messages of the agent companions (shared by the Gemini CLI and Claude Code bridges).
COMPANION_STARTED = "contextCompanion/companionStarted"
SHOW_DIFF = "contextCompanion/showDiff"
CLOSE_DIFF = "contextCompanion/closeDiff"
MAX_OPEN_DIFFS = 16  # diffs one bridge keeps waiting in the editor at once (each an editor tab and a task)

MEMORY_CHANGED = "contextCompanion/memoryChanged"  # sent to clients that ask for it (capabilities.memoryChanged)

NOTIFICATIONS = (
    "contextCompanion/didChangeCursor",
    "contextCompanion/systemInstructionChanged",
    COMPANION_STARTED,
    MEMORY_CHANGED,
)
SERVER_REQUESTS = (SHOW_DIFF, CLOSE_DIFF)
