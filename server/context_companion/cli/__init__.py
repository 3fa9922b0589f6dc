"""The ``context-companion`` command line.

Subcommands: ``serve`` (the language server), ``instruction``, ``turn``, ``memory``, ``explain``,
``agents``, ``compression-prompt``, ``mcp`` (the MCP server), ``hook`` (what an agent's hook runs: see
:mod:`..hooks.client`; it skips argparse, it runs before every prompt) and ``setup`` (writes those
hooks into an agent's settings: :mod:`..setup.command`).

- :mod:`.parser`: the argument parser;
- :mod:`.editor`: the editor state a command line describes, in a workspace
  :class:`~..workspace.companion.Companion` (``OneShot``): ``instruction``, ``turn`` and ``memory``
  ask it what a language server client would get, one code path for both;
- :mod:`.reports`: those commands, ``explain``, ``agents`` and ``compression-prompt``;
- :mod:`.servers`: ``serve``, ``mcp`` and ``setup``;
- :mod:`.output`: warnings, and the one line and exit status 2 of every user error.
"""

from __future__ import annotations

import sys

# ``hook`` runs before every prompt of an agent: this module imports nothing more at the top.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence


# The commands that print what an agent would get: their warnings go to a person at a terminal, and
# the one about estimated token counts is said once per machine unless -v (cli/output.py).
REPORTS = ("instruction", "turn", "memory", "explain")


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    if command in ("serve", "mcp", "setup"):
        from . import servers

        return {"serve": servers.cmd_serve, "mcp": servers.cmd_mcp, "setup": servers.cmd_setup}[command]
    from . import reports

    return {
        "instruction": reports.cmd_instruction,
        "turn": reports.cmd_turn,
        "memory": reports.cmd_memory,
        "explain": reports.cmd_explain,
        "compression-prompt": reports.cmd_compression_prompt,
        "agents": reports.cmd_agents,
    }[command]


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["hook"] and not {"-h", "--help"} & set(arguments):
        from ..hooks.client import run as run_hook  # before every prompt: no argparse, nothing heavy

        return run_hook(arguments[1:])
    from .parser import build_parser

    parser = build_parser()
    args = parser.parse_args(arguments)
    from ..errors import ContextCompanionError
    from .output import EXIT_USAGE, fail

    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = _handler(args.command)
    if args.command != "serve":
        import logging

        quiet = getattr(args, "quiet", False)
        stderr = logging.StreamHandler(sys.stderr)
        if args.command in REPORTS and not args.verbose:
            from .output import OncePerMachine

            stderr.addFilter(OncePerMachine())
        logging.basicConfig(
            level=logging.ERROR if quiet else logging.WARNING,
            handlers=[stderr],
            format="context-companion: warning: %(message)s",
        )
    try:
        return handler(args)
    except ContextCompanionError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
