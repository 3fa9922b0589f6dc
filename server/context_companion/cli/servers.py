"""The long-running commands (``serve``, ``mcp``) and ``setup``."""

from __future__ import annotations

import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def _server_done(status: int) -> int:
    """A server process has ended: what is left is the whole heap (pygls, lsprotocol, pydantic, the
    MCP SDK, the domain), which the collection at interpreter exit would walk to free nothing the
    OS does not take back anyway: ~0.2 s between the client's ``exit`` and the process being gone."""
    gc.freeze()
    return status


def cmd_serve(args: argparse.Namespace) -> int:
    from ..heap import pause_older_collections

    pause_older_collections()  # until the first message is dealt with (lsp.framing.run_frames); see heap.py
    from ..lsp.main import serve

    return _server_done(serve(args))


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..bridges.mcp_main import run

    return _server_done(run(args))


def cmd_setup(args: argparse.Namespace) -> int:
    from ..agents.registry import hook_agent
    from ..setup.command import remove_everywhere, run
    from .output import fail
    from .parser import AGENT_HOOK_IDS, HOOK_AGENTS

    if args.agent is None:
        if args.remove:
            return remove_everywhere(args)
        return fail("setup --agent: required (see context-companion setup --help)")
    agent = hook_agent(args.agent)
    if agent not in AGENT_HOOK_IDS:
        return fail(f"--agent {args.agent}: unknown agent; setup takes {HOOK_AGENTS}")
    args.agent = agent
    return run(args)
