"""The ``context-companion`` command line.

Subcommands: ``serve`` (the language server), ``instruction``, ``turn``, ``memory``, ``explain``,
``compression-prompt``, ``mcp`` (the MCP server), ``hook`` (what an agent's hook runs: see
:mod:`.agent_hook`; it skips argparse, it runs before every prompt) and ``setup`` (writes those
hooks into an agent's settings: :mod:`.agent_setup`). ``instruction``, ``turn`` and ``memory`` put the
given files in a workspace :class:`~.workspace.companion.Companion`'s editor state and ask it what
a language server client would get: one code path for both. User errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys

# ``hook`` runs before every prompt of an agent: this module imports no more than it needs for
# that at the top (argparse, pathlib and typing are imported where they are used).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, NoReturn

EXIT_USAGE = 2


_PATHS_EPILOG = (
    "Relative --open/--active paths resolve against --workspace when it is given (like git -C), otherwise "
    "against the current directory. A path that does not exist or lies outside the workspace folder is an "
    "error (exit status 2)."
)


_POSITIONS_EPILOG = (
    "Positions are 1-based LINE:COL as editors show them (Ln 5, Col 10); a column counts characters "
    "(Unicode code points), and COL may be one past the line's last character. A position outside the "
    "active file is an error (exit status 2)."
)

SESSION = "cli"  # the one agent session a command line run starts

# Between the instruction and the memory that comes with the first turn (``instruction``'s text).
TURN_MEMORY_SEPARATOR = (
    "======== Memory that comes with the first turn (delivered with the user's first message, "
    "not part of the system instruction above) ========"
)


def _editor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=None, help="workspace folder (default: current directory)")
    parser.add_argument(
        "--open",
        nargs="*",
        action="extend",
        default=[],
        metavar="FILE",
        help="treat these files as open in the editor; may be repeated, every --open adds (relative to --workspace "
        "when given, else the current directory)",
    )
    parser.add_argument(
        "--active",
        default=None,
        metavar="FILE",
        help="the active file (also open; default: the last --open file; resolved like --open)",
    )


def _parser() -> argparse.ArgumentParser:
    import argparse

    from . import __version__

    class OneLineErrors(argparse.ArgumentParser):
        """A usage error is one line and exit 2, as every other user error here (argparse prints the usage
        block first; ``--help`` still shows it)."""

        def error(self, message: str) -> NoReturn:
            self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    parser = OneLineErrors(
        prog="context-companion",
        description="Keeps an editor-hosted AI agent's system instruction and editor context true.",
    )
    parser.add_argument("--version", action="version", version=f"context-companion {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    transport.add_argument(
        "--tcp", action="store_true", help="listen for one LSP client over TCP (its initialize must carry the token)"
    )
    transport.add_argument(
        "--ws", action="store_true", help="listen for one LSP client over WebSocket (token required; needs pygls[ws])"
    )
    serve.add_argument("--host", default=None, help="address to bind with --tcp/--ws (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port for --tcp/--ws (default 2087)")
    serve.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="with --tcp/--ws: read the token clients must present from PATH (default: a new random token, "
        "written to the discovery file in the user runtime dir)",
    )
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="UNSAFE: with --tcp/--ws accept any client without a token or Host/Origin checks "
        "(any local process or web page can then read your memory files)",
    )
    serve.add_argument("--log-file", default=None, help="also write the log to this file")
    serve.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    serve.add_argument(
        "--mcp-endpoint",
        action="store_true",
        help="also serve MCP on 127.0.0.1 from the editor's state, for `context-companion mcp --attach`",
    )
    serve.add_argument("--clientProcessId", default=None, help=argparse.SUPPRESS)  # some clients append it

    instr = sub.add_parser(
        "instruction",
        help="print the system instruction for a workspace, then the memory that comes with the first turn",
        description="Print the system instruction. Memory that applies to the open files only (sub-folder "
        "memory files, glob-scoped rules) comes with the first turn, not in the instruction: it is printed "
        "after the instruction, under a separator line that says so (--instruction-only leaves it out).",
        epilog=_PATHS_EPILOG,
    )
    _editor_arguments(instr)
    instr.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    instr.add_argument(
        "--instruction-only",
        action="store_true",
        help="print the system instruction alone, without the memory that comes with the first turn: the bytes "
        "of --json's text, with no newline added",
    )
    instr.add_argument(
        "--json",
        action="store_true",
        help="print JSON with text (the instruction alone), etag, tokens, memoryFiles, memoryUpdates, ...",
    )
    _add_quiet(instr)

    turn = sub.add_parser(
        "turn",
        help="print the first turn's context for these files: editor context plus memory updates",
        description="Print what contextCompanion.getTurnContext returns for a session's first (full) turn "
        "with these files open: the editor context and the memory that comes with it.",
        epilog=_PATHS_EPILOG + " " + _POSITIONS_EPILOG,
    )
    _editor_arguments(turn)
    turn.add_argument(
        "--cursor",
        default=None,
        metavar="LINE:COL",
        help="the cursor in the active file: 1-based line and column, as editors show them (columns count characters)",
    )
    turn.add_argument(
        "--selection",
        default=None,
        metavar="START:END",
        help="the selection in the active file: START and END are LINE:COL each (e.g. 3:1:5:10, or 3:1-5:10); "
        "END is the position after the last selected character; the cursor is at END unless --cursor says otherwise",
    )
    turn.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    turn.add_argument(
        "--json", action="store_true", help="print the getTurnContext result: kind, context, text, memoryUpdates"
    )
    _add_quiet(turn, json_warnings=False)

    mem = sub.add_parser("memory", help="show the memory files found, which are included and why", epilog=_PATHS_EPILOG)
    _editor_arguments(mem)
    mem.add_argument("--json", action="store_true", help="print JSON")
    _add_quiet(mem)

    exp = sub.add_parser(
        "explain", help="which memory and rule files an agent would load, and why", epilog=_PATHS_EPILOG
    )
    exp.add_argument(
        "--agent",
        required=True,
        help="claude-code (or claude), codex, gemini-cli (or gemini), cursor, copilot, windsurf, cline, continue, "
        "kiro, zed, vscode, context-companion",
    )
    _editor_arguments(exp)
    exp.add_argument("--json", action="store_true", help="print JSON")
    _add_quiet(exp)

    sub.add_parser("compression-prompt", help="print the prompt for compressing a conversation")

    mcp = sub.add_parser("mcp", help="serve MCP (tools, resources, a prompt) to an agent over stdio or HTTP")
    mcp.add_argument("--workspace", default=".", help="workspace folder (default: current directory)")
    mcp.add_argument(
        "--http",
        nargs="?",
        type=int,
        const=0,
        default=None,
        metavar="PORT",
        help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio (no PORT or 0: a free port)",
    )
    attach = mcp.add_mutually_exclusive_group()
    attach.add_argument(
        "--attach",
        action="store_true",
        default=None,
        help="be a view of the running language server for this workspace (default: when exactly one runs)",
    )
    attach.add_argument("--no-attach", dest="attach", action="store_false", help="always read the workspace itself")
    mcp.add_argument(
        "--server-pid",
        type=int,
        default=None,
        metavar="PID",
        help="attach to the language server with this process id (an editor passes its own server's; implies --attach)",
    )
    mcp.add_argument("--read-only", action="store_true", help="refuse add_memory")
    mcp.add_argument(
        "--memory-elsewhere",
        action="store_true",
        help="the agent gets the memory files another way (VS Code's chat instructions): the instruction, turn "
        "context and prompt leave them out unless a call passes includeMemory: true",
    )
    mcp.add_argument("-v", "--verbose", action="count", default=0, help="log more on stderr")

    hook = sub.add_parser(
        "hook",
        help="what an agent's hook runs: the memory it does not read itself, once, as JSON on stdout",
        description="Reads the agent's hook input (JSON) on stdin and prints its hook output "
        '({"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}), or nothing when nothing '
        "is new. Asks the editor's language server for the folder (open files, active file), or composes from "
        "disk when none runs. Always exits 0; a failure prints one line on stderr. Set it up with `setup`.",
    )
    hook.add_argument("--agent", required=True, choices=AGENT_HOOK_IDS, type=_hook_agent)

    setup = sub.add_parser(
        "setup",
        help="write the hooks that run `context-companion hook` into an agent's settings",
        description="Adds SessionStart and the per-prompt hook (UserPromptSubmit; Gemini CLI: BeforeAgent) to "
        "Claude Code's .claude/settings.local.json, Gemini CLI's .gemini/settings.json or Codex's "
        ".codex/hooks.json (with --user: ~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json, "
        "~/.gemini/settings.json, $CODEX_HOME/hooks.json). Merges into what is there, keeps every other key and "
        "hook, writes atomically; refuses a file it cannot parse (exit 2, file untouched).",
    )
    setup.add_argument("--agent", required=True, choices=AGENT_HOOK_IDS, type=_hook_agent)
    setup.add_argument("--workspace", default=None, help="the project folder (default: current directory)")
    setup.add_argument("--user", action="store_true", help="the agent's user settings instead of the project's")
    setup.add_argument("--remove", action="store_true", help="take out Context Companion's hooks (only those)")
    setup.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    return parser


AGENT_HOOK_IDS = ("claude-code", "gemini-cli", "codex")


def _hook_agent(name: str) -> str:
    """``--agent`` of hook and setup: an id or a short name (``claude``, ``gemini``), in any case."""
    from .agent_hook import hook_agent

    return hook_agent(name)


def _add_quiet(sub: argparse.ArgumentParser, *, json_warnings: bool = True) -> None:
    kept = "; --json keeps them in 'warnings'" if json_warnings else ""
    sub.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help=f"print no warnings on stderr (errors still print{kept})",
    )


def _warn(args: argparse.Namespace, warning: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"context-companion: warning: {warning}\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"context-companion: {message}\n")
    return EXIT_USAGE


def _workspace(raw: str | None) -> Path:
    from pathlib import Path

    from .errors import ContextCompanionError

    path = Path(raw if raw is not None else ".").expanduser()
    if not path.is_dir():
        raise ContextCompanionError(f"--workspace {raw}: not a directory")
    return path.resolve()


def _profile(raw: str | None) -> Any:
    if raw is None:
        return None
    from pathlib import Path

    from .errors import ProfileError
    from .settings import parse_profile

    try:
        data = json.loads(Path(raw).expanduser().read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProfileError(raw, "", "file not found") from None
    except OSError as exc:
        raise ProfileError(raw, "", f"cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProfileError(raw, "", f"not valid JSON: {exc}") from None
    return parse_profile(data, raw)


def _editor_path(flag: str, raw: str, base: Path, workspace: Path) -> Path:
    """An --open/--active path, absolute; one clear error when it does not exist or is outside the folder."""
    from pathlib import Path

    from .errors import ContextCompanionError

    p = Path(raw).expanduser()
    full = Path(os.path.normpath(p if p.is_absolute() else base / p))
    if not full.exists():
        raise ContextCompanionError(f"{flag} {raw}: no such file ({full})")
    if full.is_dir():
        raise ContextCompanionError(f"{flag} {raw}: a folder, not a file ({full})")
    real = full.resolve()
    if not real.is_relative_to(workspace):  # a symlink inside the folder may lead out of it
        raise ContextCompanionError(f"{flag} {raw}: outside the workspace folder {workspace}")
    return real  # a link as its target, so context.exclude judges the file whose text is read


def _editor_files(args: argparse.Namespace, workspace: Path) -> tuple[list[Path], Path | None]:
    """The open files and the active one; relative paths resolve like ``git -C``."""
    base = workspace if args.workspace is not None else type(workspace).cwd()
    opened = [_editor_path("--open", f, base, workspace) for f in args.open]
    active = _editor_path("--active", args.active, base, workspace) if args.active is not None else None
    if active is not None and active not in opened:
        opened.append(active)
    return opened, active if active is not None else (opened[-1] if opened else None)


_POSITION = re.compile(r"^([0-9]{1,9}):([0-9]{1,9})$")
_SELECTION = re.compile(r"^([0-9]{1,9}):([0-9]{1,9})[:-]([0-9]{1,9}):([0-9]{1,9})$")
MAX_ACTIVE_BYTES = 32 * 1024 * 1024  # the active file is read for the lines around the cursor


def _positions(
    args: argparse.Namespace,
) -> tuple[tuple[int, int] | None, tuple[tuple[int, int], tuple[int, int]] | None]:
    """--cursor and --selection as 1-based (line, column) pairs; a one-line error when malformed."""
    from .errors import ContextCompanionError

    cursor = selection = None
    raw = getattr(args, "cursor", None)
    if raw is not None:
        m = _POSITION.match(raw.strip())
        if m is None or 0 in (int(m[1]), int(m[2])):
            raise ContextCompanionError(f"--cursor {raw}: expected LINE:COL, 1-based (e.g. 12:5)")
        cursor = (int(m[1]), int(m[2]))
    raw = getattr(args, "selection", None)
    if raw is not None:
        m = _SELECTION.match(raw.strip())
        if m is None or 0 in (int(m[1]), int(m[2]), int(m[3]), int(m[4])):
            raise ContextCompanionError(
                f"--selection {raw}: expected START:END as LINE:COL:LINE:COL, 1-based (e.g. 3:1:5:10)"
            )
        selection = ((int(m[1]), int(m[2])), (int(m[3]), int(m[4])))
        if selection[1] < selection[0]:
            raise ContextCompanionError(f"--selection {raw}: END comes before START")
    return cursor, selection


def _active_text(active: Path, workspace: Path) -> str:
    from .errors import ContextCompanionError
    from .memory.reading import read_text_file

    shown = os.path.relpath(active, workspace)
    read = read_text_file(str(active), MAX_ACTIVE_BYTES)  # regular files only, never blocks, capped
    if read.text is None:
        why = "no such file" if read.missing else read.skip
        raise ContextCompanionError(f"--active {shown}: {why}, so it has no positions")
    if read.cut is not None:
        raise ContextCompanionError(f"--active {shown}: larger than {MAX_ACTIVE_BYTES // (1024 * 1024)} MiB")
    return read.text


def _check_position(flag: str, raw: str, point: tuple[int, int], lines: list[str], shown: str) -> None:
    from .errors import ContextCompanionError

    line, col = point
    if line > len(lines):
        count = len(lines)
        raise ContextCompanionError(f"{flag} {raw}: {shown} has {count} line{'' if count == 1 else 's'}")
    width = len(lines[line - 1])
    if col > width + 1:
        raise ContextCompanionError(f"{flag} {raw}: line {line} of {shown} has {width} characters")


class OneShot:
    """A companion whose editor holds the files of the command line, and the texts it was told."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .context.positions import split_lines
        from .context.state import RawPosition
        from .errors import ContextCompanionError
        from .workspace.companion import Companion
        from .workspace.snapshot import WorkspaceSnapshot

        workspace = _workspace(args.workspace)
        opened, active = _editor_files(args, workspace)
        cursor, selection = _positions(args)
        profile = _profile(getattr(args, "profile", None))
        if (cursor or selection) and active is None:
            flag = "--cursor" if cursor else "--selection"
            raise ContextCompanionError(f"{flag}: needs an active file (--active or --open)")
        self.texts: dict[str, str] = {}
        moved: tuple[str, RawPosition, list[tuple[RawPosition, RawPosition]]] | None = None
        if active is not None and (cursor or selection):  # checked before the slow load: errors come at once
            text = _active_text(active, workspace)
            lines = split_lines(text)
            shown = os.path.relpath(active, workspace)
            if cursor is not None:
                _check_position("--cursor", args.cursor, cursor, lines, shown)
            if selection is not None:
                for point in selection:
                    _check_position("--selection", args.selection, point, lines, shown)
            uri = active.as_uri()
            self.texts[uri] = text
            ranges: list[tuple[RawPosition, RawPosition]] = []
            if selection is not None:
                (a, b), (c, d) = selection
                ranges.append((RawPosition(a - 1, b - 1), RawPosition(c - 1, d - 1)))
            line, col = cursor if cursor is not None else selection[1]  # type: ignore[index]  # one is given
            moved = (uri, RawPosition(line - 1, col - 1), ranges)
        # Positions on the command line count characters: the editor state is told code points.
        self.companion = companion = Companion(WorkspaceSnapshot.resolve([workspace], position_encoding="utf-32"))
        companion.load()
        for path in [p for p in opened if p != active] + ([active] if active is not None else []):
            companion.did_open(path.as_uri())  # the active file last: the most recently used, as in an editor
        if moved is not None:
            companion.did_change_cursor(*moved)
        agent = companion.sessions.get(SESSION)
        agent.profile = profile

    def start(self) -> Any:
        """Start the session: its instruction, written where ``writeSystemPromptTo`` says."""
        return self.companion.export(self.companion.start_session(SESSION))

    def turn(self, *, editor: bool = True) -> Any:
        """The session's next turn context (``editor=False``: its memory updates only)."""
        return self.companion.turn_context(SESSION, self.texts, editor=editor)


def _cmd_instruction(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    instruction = shot.start()
    for warning in instruction.warnings:
        _warn(args, warning)
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


def _cmd_turn(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    instruction = shot.start()
    for warning in instruction.warnings:
        _warn(args, warning)
    turn = shot.turn()
    if args.json:
        sys.stdout.write(json.dumps(turn.to_wire(), indent=2, ensure_ascii=False) + "\n")
    elif turn.text:
        sys.stdout.write(turn.text + "\n")
    return 0


def _cmd_memory(args: argparse.Namespace) -> int:
    shot = OneShot(args)
    companion = shot.companion
    if args.json:
        from .workspace.commands import memory_payload

        sys.stdout.write(json.dumps(memory_payload(companion), indent=2, ensure_ascii=False) + "\n")
        return 0
    result = companion.show_memory()
    with_turn = companion.turn_delivered()
    if not result.files:
        sys.stdout.write("No memory files found.\n")
        return 0
    width = max((len(f.path) for f in result.files), default=0)
    for f in result.files:
        mark = "+" if f.included else "-"
        turn = f" ({COMES_WITH_TURN})" if f.path in with_turn else ""
        sys.stdout.write(f"{mark} {f.path.ljust(width)}  {f.tier:<9} {f.tokens:>6} tokens  {f.reason}{turn}\n")
    said = {f"{f.path}: {f.reason}" for f in result.files}  # a skip is on its file's row already
    for w in result.warnings:
        if w not in said:
            sys.stdout.write(f"! {w}\n")
    included = [f for f in result.files if f.included]
    sys.stdout.write(
        f"{len(included)} of {len(result.files)} files included, {companion.memory_tokens(result)} tokens\n"
    )
    return 0


COMES_WITH_TURN = "comes with the turn"


def _cmd_explain(args: argparse.Namespace) -> int:
    from .memory.agents import agent_id, known_agents

    agent = agent_id(args.agent)
    if agent is None:
        return _fail(f"--agent {args.agent}: unknown agent; known agents: {known_agents()}")
    from .workspace.companion import Companion

    workspace = _workspace(args.workspace)
    companion = Companion.open([workspace])
    open_paths, active = _editor_files(args, workspace)
    interactive = companion.snapshot.settings.profile.interactive
    wire = companion.memory.explain(agent, open_paths, active, interactive=interactive).to_wire()
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
    return 0


def _cmd_compression(_: argparse.Namespace) -> int:
    from .prompt.compression import compression_prompt

    sys.stdout.write(compression_prompt())
    return 0


def _server_done(status: int) -> int:
    """A server process has ended: what is left is the whole heap (pygls, lsprotocol, pydantic, the
    MCP SDK, the domain), which the collection at interpreter exit would walk to free nothing the
    OS does not take back anyway: ~0.2 s between the client's ``exit`` and the process being gone."""
    gc.freeze()
    return status


def _cmd_serve(args: argparse.Namespace) -> int:
    from .lsp.main import serve

    return _server_done(serve(args))


def _cmd_mcp(args: argparse.Namespace) -> int:
    from .bridges.mcp_main import run

    return _server_done(run(args))


def _cmd_setup(args: argparse.Namespace) -> int:
    from .agent_setup import run

    return run(args)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["hook"] and not {"-h", "--help"} & set(arguments):
        from .agent_hook import run as run_hook  # before every prompt: no argparse, nothing heavy

        return run_hook(arguments[1:])
    parser = _parser()
    args = parser.parse_args(arguments)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handlers = {
        "serve": _cmd_serve,
        "instruction": _cmd_instruction,
        "turn": _cmd_turn,
        "memory": _cmd_memory,
        "explain": _cmd_explain,
        "compression-prompt": _cmd_compression,
        "mcp": _cmd_mcp,
        "setup": _cmd_setup,
    }
    from .errors import ContextCompanionError

    if args.command != "serve":
        import logging

        quiet = getattr(args, "quiet", False)
        logging.basicConfig(
            level=logging.ERROR if quiet else logging.WARNING,
            stream=sys.stderr,
            format="context-companion: warning: %(message)s",
        )
    try:
        return handlers[args.command](args)
    except ContextCompanionError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
