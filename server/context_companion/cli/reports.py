"""The commands that print what an agent would get: ``instruction``, ``turn``, ``memory``, ``explain``,
``compression-prompt``."""

from __future__ import annotations

import json
import sys

from .editor import TURN_MEMORY_SEPARATOR, OneShot, editor_files, workspace_arg
from .output import fail, warn

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_instruction(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    instruction = shot.start()
    for warning in instruction.warnings:
        warn(args, warning)
    if args.instruction_only and not args.json:
        sys.stdout.write(instruction.text)  # the bytes of the JSON text: no newline added (README)
        return 0
    memory = shot.turn(editor=False)
    if args.json:
        out = instruction.to_wire()
        out["environmentPlacement"] = instruction.environment_placement
        if instruction.initial_message is not None:
            out["initialMessage"] = instruction.initial_message
        out["memoryUpdates"] = list(memory.memory_updates)
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
        return 0
    sys.stdout.write(instruction_with_turn_memory(instruction.text, memory.text))
    return 0


def instruction_with_turn_memory(instruction: str, memory: str | None) -> str:
    """``instruction``'s plain text: the instruction, then (when there is any) the memory that
    comes with the first turn, under :data:`TURN_MEMORY_SEPARATOR`."""
    if not memory:
        return instruction + "\n"
    return f"{instruction}\n\n{TURN_MEMORY_SEPARATOR}\n\n{memory}\n"


def cmd_turn(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    instruction = shot.start()
    for warning in instruction.warnings:
        warn(args, warning)
    turn = shot.turn()
    if args.json:
        sys.stdout.write(json.dumps(turn.to_wire(), indent=2, ensure_ascii=False) + "\n")
    elif turn.text:
        sys.stdout.write(turn.text + "\n")
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    companion = shot.companion
    if args.json:
        from ..workspace.commands import memory_payload

        sys.stdout.write(json.dumps(memory_payload(companion), indent=2, ensure_ascii=False) + "\n")
        return 0
    result = companion.show_memory()
    with_turn = companion.turn_delivered()
    if not result.files:
        for line in companion.snapshot.refusal_lines():
            sys.stdout.write(f"! {line}\n")
        sys.stdout.write("No memory files found.\n")
        return 0
    width = max((len(f.path) for f in result.files), default=0)
    for f in result.files:
        mark = "+" if f.included else "-"
        turn = f" ({COMES_WITH_TURN})" if f.path in with_turn else ""
        sys.stdout.write(f"{mark} {f.path.ljust(width)}  {f.tier:<9} {f.tokens:>6} tokens  {f.reason}{turn}\n")
    said = {f"{f.path}: {f.reason}" for f in result.files}  # a skip is on its file's row already
    for w in (*companion.snapshot.refusal_lines(), *result.warnings):
        if w not in said:
            sys.stdout.write(f"! {w}\n")
    included = [f for f in result.files if f.included]
    sys.stdout.write(
        f"{len(included)} of {len(result.files)} files included, {companion.memory_tokens(result)} tokens\n"
    )
    return 0


COMES_WITH_TURN = "comes with the turn"


def cmd_explain(args: argparse.Namespace) -> int:
    from ..memory.agents import HOOK_AGENTS, agent_id, known_agents

    agent = agent_id(args.agent)
    if agent is None:
        return fail(f"--agent {args.agent}: unknown agent; known agents: {known_agents()}")
    from ..workspace.companion import Companion

    workspace = workspace_arg(args.workspace)
    companion = Companion.open([workspace])
    for line in companion.snapshot.refusal_lines():
        warn(args, line)
    open_paths, active = editor_files(args, workspace)
    interactive = companion.snapshot.settings.profile.interactive
    wire = companion.memory.explain(agent, open_paths, active, interactive=interactive).to_wire()
    wire["estimated"] = companion.tokenizer.estimated
    if agent in HOOK_AGENTS:
        # What `context-companion hook` would give a new session of this agent, prompt after prompt, until it has
        # all that applies (memory over the agent's limit takes several prompts; a big file comes in parts).
        wire["hookDelivery"] = [
            {
                "prompt": n,
                "size": d.size,
                "unit": d.unit,
                "files": [*d.files, *d.changed],
                "parts": list(d.parts),
                "stillToCome": list(d.pending),
            }
            for n, d in enumerate(companion.hook_plan(agent, (open_paths, active)), 1)
        ]
    if agent == "gemini-cli":
        from ..bridges.gemini.discovery import ide_dir_problem

        problem = ide_dir_problem()
        if problem is not None:
            wire["skipped"] = [*wire.get("skipped", ()), problem]
    if args.json:
        sys.stdout.write(json.dumps(wire, indent=2, ensure_ascii=False) + "\n")
        return 0
    sys.stdout.write(f"{wire['name']} ({', '.join(wire['docs'])})\n")
    rows = [("+", f["path"], f["tier"], f["tokens"], f["why"]) for f in wire["files"]]
    rows += [("?", f["path"], f["tier"], f["tokens"], f["why"]) for f in wire["listed"]]
    rows += [("-", f["path"], "", None, f["reason"]) for f in wire["notLoaded"]]
    width = max((len(r[1]) for r in rows), default=0)
    for mark, path, tier, tokens, why in rows:
        count = f"{tokens:>6} tokens" if tokens is not None else " " * 13
        sys.stdout.write(f"{mark} {path.ljust(width)}  {tier:<9} {count}  {why}\n")
    for line in wire.get("skipped", ()):
        sys.stdout.write(f"! {line}\n")
    if not rows:
        sys.stdout.write("No memory or rule files found.\n")
    loaded = len(wire["files"])
    sys.stdout.write(f"{loaded} file{'' if loaded == 1 else 's'} loaded, {wire['tokens']} tokens\n")
    if wire["onlyAgent"]:
        sys.stdout.write(f"loaded by {wire['name']}, not by Context Companion: {', '.join(wire['onlyAgent'])}\n")
    if wire["onlyContextCompanion"]:
        sys.stdout.write(
            f"loaded by Context Companion, not by {wire['name']}: {', '.join(wire['onlyContextCompanion'])}\n"
        )
    for note in wire.get("assumed", ()):  # what its own settings said (or what was assumed of them)
        sys.stdout.write(f"{wire['name']}'s settings: {note}\n")
    for step in wire.get("hookDelivery", []):
        what = ", ".join([*step["files"], *step["parts"]]) or "only notes"
        later = f"; still to come: {', '.join(step['stillToCome'])}" if step["stillToCome"] else ""
        sys.stdout.write(
            f"hook, prompt {step['prompt']} of a new session: {step['size']:,} {step['unit']}: {what}{later}\n"
        )
    return 0


def cmd_compression_prompt(_: argparse.Namespace) -> int:
    from ..prompt.compression import compression_prompt

    sys.stdout.write(compression_prompt())
    return 0


def cmd_agents(args: argparse.Namespace) -> int:
    from ..workspace.agent_list import agent_list

    wire = agent_list()
    if args.json:
        sys.stdout.write(json.dumps(wire, indent=2, ensure_ascii=False) + "\n")
        return 0
    for agent in wire["agents"]:
        shorts = f" (or {', '.join(agent['shortNames'])})" if agent["shortNames"] else ""
        setup = agent["setup"]
        where = f"  setup: {setup['kind']} in {setup['project']} (--user: {setup['user']})" if setup else ""
        sys.stdout.write(f"{agent['id']}{shorts}: {agent['name']}{where}\n")
    return 0
