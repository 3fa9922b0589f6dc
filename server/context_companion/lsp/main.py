"""``context-companion serve``: logging set-up and transport choice."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ..heap import resume_older_collections, tune_at_start
from .transport import serve_stdio, serve_tcp, serve_ws


def configure_logging(verbose: int, log_file: str | None) -> None:
    """Logs go to stderr (stdout is the protocol) and optionally to a file."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    env_level = os.environ.get("CONTEXT_COMPANION_LOG_LEVEL")
    if env_level:
        level = getattr(logging, env_level.upper(), level)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level, handlers=handlers, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    # pygls logs every message at INFO: keep it quiet unless debugging.
    pygls_log = logging.getLogger("pygls")
    pygls_log.setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    # A filter on the "pygls" logger would not see records of its children (pygls.protocol...):
    # filter at the handlers, which every record passes.
    for handler in handlers:
        handler.addFilter(_expected_errors)


def _expected_errors(record: logging.LogRecord) -> bool:
    """Drop pygls' tracebacks for errors we answered on purpose (bad params, failed requests);
    the server logs each of them in one line of its own."""
    if record.name.startswith("pygls") and str(record.msg).startswith("Unable to deserialize message"):
        return False  # a traceback in the message text; Protocol.structure_message logs one line
    exc = record.exc_info[1] if record.exc_info else None
    code = getattr(exc, "code", None)
    return code not in (-32602, -32803, -32800)  # InvalidParams, RequestFailed, RequestCancelled


def serve(args: argparse.Namespace) -> int:
    tune_at_start()  # before any thread allocates
    configure_logging(args.verbose, args.log_file)
    token = _socket_token(args) if (args.tcp or args.ws) else None
    from .server import create_server

    server = create_server()
    if getattr(args, "mcp_endpoint", False):
        from .mcp_endpoint import McpEndpoint

        server.mcp = McpEndpoint()
    from .lifecycle import close  # every way out ends here: the bridges stop in order

    if args.tcp or args.ws:
        resume_older_collections()  # paused for the imports (cli.servers.cmd_serve); a socket waits first
    if args.tcp:
        return serve_tcp(server, args.host, args.port, token, on_end=close)
    if args.ws:
        return serve_ws(server, args.host, args.port, token, on_end=close)
    return serve_stdio(server, on_end=close)


def _socket_token(args: argparse.Namespace) -> str | None:
    """The token socket clients must present: from ``--token-file``, else a new random one;
    None with ``--no-auth``."""
    from .sockets import read_token_file, warn_no_auth

    if args.no_auth:
        warn_no_auth()
        return None
    if args.token_file:
        return read_token_file(args.token_file)
    from ..discovery import new_token

    return new_token()
