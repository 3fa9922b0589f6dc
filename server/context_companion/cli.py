"""The ``context-companion`` command line.

Subcommands: ``serve`` (the language server), ``instruction``, ``memory``, ``explain``,
``compression-prompt``, ``mcp`` (the MCP server). User errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


_PATHS_EPILOG = (
    "Relative --open/--active paths resolve against --workspace when it is given (like git -C), otherwise "
    "against the current directory. A path that does not exist or lies outside the workspace folder is an "
    "error (exit status 2)."
)


def _editor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", default=None, help="workspace folder (default: current directory)")
    parser.add_argument(
        "--open",
        nargs="*",
        default=[],
        metavar="FILE",
        help="treat these files as open in the editor (relative to --workspace when given, else the current directory)",
    )
    parser.add_argument(
        "--active",
        default=None,
        metavar="FILE",
        help="the active file (also open; default: the last --open file; resolved like --open)",
    )


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
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

    instr = sub.add_parser("instruction", help="print the system instruction for a workspace", epilog=_PATHS_EPILOG)
    _editor_arguments(instr)
    instr.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    instr.add_argument("--json", action="store_true", help="print JSON with text, etag, tokens, memoryFiles, ...")
    _add_quiet(instr)

    mem = sub.add_parser("memory", help="show the memory files found, which are included and why", epilog=_PATHS_EPILOG)
    _editor_arguments(mem)
    mem.add_argument("--json", action="store_true", help="print JSON")
    _add_quiet(mem)

    exp = sub.add_parser(
        "explain", help="which memory and rule files an agent would load, and why", epilog=_PATHS_EPILOG
    )
    exp.add_argument("--agent", required=True, help="claude-code, codex, gemini-cli, cursor, copilot, windsurf, ...")
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
    mcp.add_argument("--read-only", action="store_true", help="refuse add_memory")
    mcp.add_argument("-v", "--verbose", action="count", default=0, help="log more on stderr")
    return parser


def _add_quiet(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print no warnings on stderr (errors still print; --json keeps them in 'warnings')",
    )


def _warn(args: argparse.Namespace, warning: str) -> None:
    if not getattr(args, "quiet", False):
        sys.stderr.write(f"context-companion: warning: {warning}\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"context-companion: {message}\n")
    return EXIT_USAGE


def _workspace(raw: str | None) -> Path:
    from .errors import ContextCompanionError

    path = Path(raw if raw is not None else ".").expanduser()
    if not path.is_dir():
        raise ContextCompanionError(f"--workspace {raw}: not a directory")
    return path.resolve()


def _profile(raw: str | None) -> Any:
    if raw is None:
        return None
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
    from .errors import ContextCompanionError

    p = Path(raw).expanduser()
    full = Path(os.path.normpath(p if p.is_absolute() else base / p))  # a symlink keeps the name the editor uses
    if not full.exists():
        raise ContextCompanionError(f"{flag} {raw}: no such file ({full})")
    if full.is_relative_to(workspace):
        return full
    if full.resolve().is_relative_to(workspace):
        return full.resolve()
    raise ContextCompanionError(f"{flag} {raw}: outside the workspace folder {workspace}")


def _editor_files(args: argparse.Namespace, workspace: Path) -> tuple[list[Path], Path | None]:
    """The open files and the active one; relative paths resolve like ``git -C``."""
    base = workspace if args.workspace is not None else Path.cwd()
    opened = [_editor_path("--open", f, base, workspace) for f in args.open]
    active = _editor_path("--active", args.active, base, workspace) if args.active is not None else None
    if active is not None and active not in opened:
        opened.append(active)
    return opened, active if active is not None else (opened[-1] if opened else None)


def _cmd_instruction(args: argparse.Namespace) -> int:
    from .workspace.companion import Companion

    workspace = _workspace(args.workspace)
    open_paths, active = _editor_files(args, workspace)
    profile = _profile(args.profile)
    companion = Companion.open([workspace])
    instruction = companion.engine.build(profile, open_paths, active)
    instruction = companion.export(instruction)
    for warning in instruction.warnings:
        _warn(args, warning)
    if args.json:
        out = instruction.to_wire()
        out["environmentPlacement"] = instruction.environment_placement
        if instruction.initial_message is not None:
            out["initialMessage"] = instruction.initial_message
        active = open_paths[-1] if open_paths else None
        out["memoryUpdates"] = [u.to_wire() for u in companion.first_turn_memory(open_paths, active)]
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(instruction.text + "\n")
    return 0


def _cmd_memory(args: argparse.Namespace) -> int:
    from .workspace.companion import Companion

    workspace = _workspace(args.workspace)
    open_paths, active = _editor_files(args, workspace)
    companion = Companion.open([workspace])
    result = companion.memory.compose(open_paths, active)
    if args.json:
        payload = {
            "files": [f.to_wire() for f in result.files],
            "dropped": list(result.dropped),
            "warnings": list(result.warnings),
            "tokens": companion.memory_tokens(result),
            "text": result.text,
        }
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not result.files:
        sys.stdout.write("No memory files found.\n")
        return 0
    width = max((len(f.path) for f in result.files), default=0)
    for f in result.files:
        mark = "+" if f.included else "-"
        sys.stdout.write(f"{mark} {f.path.ljust(width)}  {f.tier:<9} {f.tokens:>6} tokens  {f.reason}\n")
    for w in result.warnings:
        sys.stdout.write(f"! {w}\n")
    included = [f for f in result.files if f.included]
    sys.stdout.write(
        f"{len(included)} of {len(result.files)} files included, {companion.memory_tokens(result)} tokens\n"
    )
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from .memory.agents import AGENT_IDS

    if args.agent not in AGENT_IDS:
        return _fail(f"unknown agent {args.agent!r}; known agents: {', '.join(AGENT_IDS)}")
    from .workspace.companion import Companion

    workspace = _workspace(args.workspace)
    companion = Companion.open([workspace])
    open_paths, active = _editor_files(args, workspace)
    interactive = companion.snapshot.settings.profile.interactive
    wire = companion.memory.explain(args.agent, open_paths, active, interactive=interactive).to_wire()
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


def _cmd_serve(args: argparse.Namespace) -> int:
    from .lsp.main import serve

    return serve(args)


def _cmd_mcp(args: argparse.Namespace) -> int:
    from .bridges.mcp_main import run

    return run(args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handlers = {
        "serve": _cmd_serve,
        "instruction": _cmd_instruction,
        "memory": _cmd_memory,
        "explain": _cmd_explain,
        "compression-prompt": _cmd_compression,
        "mcp": _cmd_mcp,
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
