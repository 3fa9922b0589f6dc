"""The ``context-companion`` command line.

Subcommands: ``serve`` (the language server), ``instruction``, ``memory``,
``compression-prompt``. User errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


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
    serve.add_argument("--clientProcessId", default=None, help=argparse.SUPPRESS)  # some clients append it

    instr = sub.add_parser("instruction", help="print the system instruction for a workspace")
    instr.add_argument("--workspace", default=".", help="workspace folder (default: current directory)")
    instr.add_argument("--profile", default=None, help="agent profile JSON file (model, tools, approvalMode, ...)")
    instr.add_argument("--open", nargs="*", default=[], metavar="FILE", help="treat these files as open in the editor")
    instr.add_argument("--json", action="store_true", help="print JSON with text, etag, tokens, memoryFiles, ...")

    mem = sub.add_parser("memory", help="show the memory files found, which are included and why")
    mem.add_argument("--workspace", default=".", help="workspace folder (default: current directory)")
    mem.add_argument("--open", nargs="*", default=[], metavar="FILE", help="treat these files as open in the editor")
    mem.add_argument("--json", action="store_true", help="print JSON")

    sub.add_parser("compression-prompt", help="print the prompt for compressing a conversation")
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"context-companion: {message}\n")
    return EXIT_USAGE


def _workspace(raw: str) -> Path:
    from .errors import ContextCompanionError

    path = Path(raw).expanduser()
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


def _open_paths(workspace: Path, files: Sequence[str]) -> list[Path]:
    out = []
    for f in files:
        p = Path(f).expanduser()
        out.append((p if p.is_absolute() else (Path.cwd() / p)).resolve())
    return out


def _cmd_instruction(args: argparse.Namespace) -> int:
    from .workspace.companion import Companion

    workspace = _workspace(args.workspace)
    profile = _profile(args.profile)
    companion = Companion.open([workspace])
    open_paths = _open_paths(workspace, args.open)
    instruction = companion.engine.build(profile, open_paths, open_paths[-1] if open_paths else None)
    instruction = companion.export(instruction)
    for warning in instruction.warnings:
        sys.stderr.write(f"context-companion: warning: {warning}\n")
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
    companion = Companion.open([workspace])
    open_paths = _open_paths(workspace, args.open)
    result = companion.memory.compose(open_paths, open_paths[-1] if open_paths else None)
    if args.json:
        payload = {
            "files": [f.to_wire() for f in result.files],
            "dropped": list(result.dropped),
            "warnings": list(result.warnings),
            "tokens": companion.tokenizer.count(result.text),
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
        f"{len(included)} of {len(result.files)} files included, {companion.tokenizer.count(result.text)} tokens\n"
    )
    return 0


def _cmd_compression(_: argparse.Namespace) -> int:
    from .prompt.compression import compression_prompt

    sys.stdout.write(compression_prompt())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from .lsp.main import serve

    return serve(args)


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
        "compression-prompt": _cmd_compression,
    }
    from .errors import ContextCompanionError

    if args.command != "serve":
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="context-companion: warning: %(message)s")
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
