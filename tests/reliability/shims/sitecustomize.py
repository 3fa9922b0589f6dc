"""Fault and watch shims loaded into the *server* process by the reliability tests.

The tests put this folder on the server's PYTHONPATH and name the shims to switch on in
``CC_TEST_SHIMS`` (comma separated). Nothing here runs in normal use.

* ``inotify_limit``: every inotify watch fails with ENOSPC ("inotify watch limit reached"), as
  when ``fs.inotify.max_user_watches`` is exhausted (a machine-wide limit a test must not touch).
* ``nonroot_read``: opening a regular file for reading fails with EACCES when its mode has no read
  bit, as it would for an unprivileged user (the tests run as root, where chmod 000 stops nothing).
* ``fake_websockets``: a stand-in for the optional ``websockets`` package (not among the dev
  dependencies) whose ``serve()`` opens a plain TCP listener on the host and port it is given,
  so a test can see which address the ``--ws`` transport asks for.
* ``no_websockets``: ``import websockets`` fails, as where the optional package is not installed.
* ``stack_dump``: SIGUSR1 dumps every thread's stack to stderr (for diagnosing a hang).
* ``audit``: a ``sys.addaudithook`` hook that records and refuses every attempt to reach the
  network or to start a process (``CC_AUDIT_LOG`` names the record file).
* ``protocol_tables``: a request ``test/tables`` answers the sizes of what pygls keeps per message
  (``_request_futures``, ``_result_types``, the progress tokens), as the server holds them.
* ``watch_walk_gate``: the file watcher's walk (``memory/_inotify.py``'s scandir walk, or ``os.walk``)
  stops at a directory named ``watch-gate``: it creates the file ``CC_GATE_REACHED`` names and
  waits until the file ``CC_GATE_OPEN`` names exists (a walk of a huge folder, held still).
"""

from __future__ import annotations

import os
import sys

_SHIMS = {s.strip() for s in os.environ.get("CC_TEST_SHIMS", "").split(",") if s.strip()}


def _inotify_limit() -> None:
    import ctypes
    import errno

    import watchdog.observers.inotify_c as inotify_c

    def add_watch(fd: int, path: bytes, mask: int) -> int:
        ctypes.set_errno(errno.ENOSPC)
        return -1

    inotify_c.inotify_add_watch = add_watch


def _nonroot_read() -> None:
    import builtins
    import errno
    import io
    import stat

    def denied(path: object) -> bool:
        try:
            st = os.stat(path)  # type: ignore[arg-type]
        except (OSError, TypeError, ValueError):
            return False
        return stat.S_ISREG(st.st_mode) and not (st.st_mode & 0o444)

    real_os_open = os.open
    real_open = builtins.open

    def os_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if (flags & os.O_ACCMODE) in (os.O_RDONLY, os.O_RDWR) and denied(path):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
        return real_os_open(path, flags, *args, **kwargs)

    def open_(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(file, (str, bytes, os.PathLike)) and ("r" in mode or "+" in mode) and denied(file):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(file))
        return real_open(file, mode, *args, **kwargs)

    os.open = os_open
    builtins.open = open_
    io.open = open_


def _fake_websockets() -> None:
    import asyncio
    import types

    async def serve(handler, host, port, **kwargs):  # type: ignore[no-untyped-def]
        async def on_connection(reader, writer):  # type: ignore[no-untyped-def]
            writer.close()

        return await asyncio.start_server(on_connection, host, port)

    top = types.ModuleType("websockets")
    sub = types.ModuleType("websockets.asyncio")
    server = types.ModuleType("websockets.asyncio.server")
    server.serve = serve  # type: ignore[attr-defined]
    server.ServerConnection = object  # type: ignore[attr-defined]
    top.asyncio = sub  # type: ignore[attr-defined]
    sub.server = server  # type: ignore[attr-defined]
    sys.modules.update({"websockets": top, "websockets.asyncio": sub, "websockets.asyncio.server": server})


_AUDITED = (
    "socket.connect",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyaddr",
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.fork",
    "os.forkpty",
    "pty.spawn",
    "urllib.Request",
    "http.client.connect",
    "webbrowser.open",
)


def _audit() -> None:
    import traceback

    log_path = os.environ.get("CC_AUDIT_LOG", "")
    busy = False

    def hook(event: str, args: tuple) -> None:
        nonlocal busy
        if busy or not event.startswith(_AUDITED):
            return
        busy = True
        try:
            if log_path:
                stack = "".join(traceback.format_stack(limit=12)[:-1])
                with open(log_path, "a", encoding="utf-8") as fh:
                    fh.write(f"EVENT {event} {args!r}\n{stack}\n")
        finally:
            busy = False
        raise RuntimeError(f"reliability audit: {event} refused")

    sys.addaudithook(hook)


def _protocol_tables() -> None:
    from pygls.protocol import json_rpc

    real = json_rpc.JsonRPCProtocol._get_handler

    def _get_handler(self, feature_name):  # type: ignore[no-untyped-def]
        if feature_name == "test/tables":
            progress = getattr(self, "progress", None)
            return lambda params: {
                "requestFutures": len(self._request_futures),
                "resultTypes": len(self._result_types),
                "progressTokens": len(progress.tokens) if progress is not None else 0,
            }
        return real(self, feature_name)

    json_rpc.JsonRPCProtocol._get_handler = _get_handler


# Who walks for the watcher: our inotify emitter lists directories with scandir itself; watchdog's
# own classes (the polling fallback) use os.walk.
_WATCH_WALKERS = frozenset({"os", "context_companion.memory._inotify"})


def _watch_walk_gate() -> None:
    import time

    real = os.scandir
    reached, opened = os.environ["CC_GATE_REACHED"], os.environ["CC_GATE_OPEN"]

    def scandir(path=None):  # type: ignore[no-untyped-def]
        if path is not None and os.fsdecode(os.path.basename(os.fspath(path))) == "watch-gate":
            caller = sys._getframe(1).f_globals.get("__name__")
            if caller in _WATCH_WALKERS:  # the watcher's walk (not the memory walk)
                with open(reached, "w"):
                    pass
                while not os.path.exists(opened):
                    time.sleep(0.01)
        return real(path) if path is not None else real()

    os.scandir = scandir


if "inotify_limit" in _SHIMS:
    _inotify_limit()
if "nonroot_read" in _SHIMS:
    _nonroot_read()
if "fake_websockets" in _SHIMS:
    _fake_websockets()
if "no_websockets" in _SHIMS:
    sys.modules["websockets"] = None  # type: ignore[assignment]  # makes the import raise ImportError
if "stack_dump" in _SHIMS:
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)
if "audit" in _SHIMS:
    _audit()
if "protocol_tables" in _SHIMS:
    _protocol_tables()
if "watch_walk_gate" in _SHIMS:
    _watch_walk_gate()
