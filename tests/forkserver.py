"""Server processes forked from one pre-imported parent, for the tests (not shipped).

A server start spends most of its CPU importing (lsprotocol builds ~560 attrs classes, pygls,
pydantic, the domain): ~0.5 s each, and the suite starts a few hundred. A *fork server* pays that
once per test process: a parent that has imported what a default ``serve`` imports and waits on a
Unix socket in a private temporary folder; for each start the test sends the command line, the
environment, the working directory, the umask and its three pipe ends (``SCM_RIGHTS``); the parent
forks a child that takes those pipes as its stdin/stdout/stderr, moves into the folder, takes the
environment and runs ``python -m context_companion ...`` as the interpreter would (``runpy``), then
exits as any interpreter does (atexit, threads joined, exit status). The parent reaps it and tells
the test the exit status.

To the test the child is the server it asked for: its own pid (discovery files, signals, ``/proc``),
its argv (``sys.argv``, ``sys.orig_argv``), environment, folder and umask, stdio pipes, and the exit
status a real process has (``-N`` when signal N ended it). What differs, and why some starts exec:

* its parent process is the fork server (itself a child of the test process), and
  ``/proc/<pid>/cmdline`` and ``/proc/<pid>/environ`` show the fork server's;
* it has the fork server's modules loaded (a default start's), also where its settings would not
  have imported them, and its memory starts as a copy of the fork server's (RSS counts those pages);
* so a start is a real ``exec`` for a command other than ``[sys.executable, "-m",
  "context_companion", "serve", ...]`` (wrappers, ``python -c``, other subcommands); for an
  environment that changes how an interpreter starts (``PYTHON*``, ``LD_*``, locale, ``TZ``, the C
  library's malloc settings) differently from the fork server's; for a test marked
  ``exec_server`` or one that records ``figures`` (lsp_harness.fork_servers); and for a whole run
  with ``CC_TEST_FORKSERVER=0`` in its environment.

Tests that watch process-level behaviour through their own ``subprocess.Popen`` (stdin closed,
signals, imports, the heap) keep doing so: only the harness's starters (``start``, ``module_start``,
``spawn``, ``module_spawn``, ``start_editor``) come here.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import contextvars
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from asyncio import base_subprocess
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

COMMAND = [sys.executable, "-m", "context_companion"]
FORKABLE_SUBCOMMANDS = ("serve",)
# What a default server start imports (they pull in the rest; _preload adds what is imported lazily
# on the way). What a child still needs it imports itself: slower, never wrong.
PRELOAD = (
    "context_companion.cli",
    "context_companion.cli.parser",
    "context_companion.cli.output",
    "context_companion.cli.servers",
    "context_companion.lsp.main",
    "context_companion.lsp.server",
    "context_companion.lsp.lifecycle",
    "context_companion.memory.agents",
    "context_companion.workspace.companion",
)
_INTERPRETER_ENV_PREFIXES = ("PYTHON", "LD_", "LC_", "MALLOC_")
_INTERPRETER_ENV = ("LANG", "LANGUAGE", "TZ", "GLIBC_TUNABLES")
_HEADER = struct.Struct("!I")
_MAX_REQUEST = 1 << 24


def enabled() -> bool:
    return os.environ.get("CC_TEST_FORKSERVER", "1") != "0"


def _interpreter_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_INTERPRETER_ENV_PREFIXES) or k in _INTERPRETER_ENV}


def forkable(argv: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Whether a forked child would be this command started with this environment (Linux: the
    fork server checks its clients' uid with SO_PEERCRED)."""
    if not enabled() or not sys.platform.startswith("linux"):
        return False
    if list(argv[:3]) != COMMAND or len(argv) < 4 or argv[3] not in FORKABLE_SUBCOMMANDS:
        return False
    return _interpreter_env(os.environ if env is None else env) == _interpreter_env(_parent_env())


# --------------------------------------------------------------------------- the fork server itself


def _preload() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    # What ``serve`` and a default initialize import on their way (bridges, token counting, the
    # watcher): import them now, not in every child.
    from context_companion.cli import parser
    from context_companion.lsp import server

    parser.build_parser()
    server.create_server()
    for name in (
        "tiktoken",
        "tiktoken.load",
        "tiktoken_ext.openai_public",
        "watchdog.observers",
        "watchdog.observers.inotify",
        "watchdog.observers.polling",
        "context_companion.memory.watcher",
        "context_companion.bridges.gemini.companion",
        "context_companion.bridges.claude_code",
        "context_companion.lsp.companions",
        "context_companion.lsp.hook_endpoint",
        "context_companion.bridges.hook_channel",
        "context_companion.memory._inotify",
        "context_companion.workspace.params",
        "platformdirs",
        "platformdirs.unix",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def _recv_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    while len(data) < _HEADER.size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("request cut short")
        data += more
    (size,) = _HEADER.unpack_from(data)
    if size > _MAX_REQUEST:
        raise ValueError("request too large")
    body = data[_HEADER.size :]
    while len(body) < size:
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("request cut short")
        body += more
    return json.loads(body), list(fds)


class _Parent:
    """The fork server's loop: one request at a time, children reaped on SIGCHLD."""

    def __init__(self, path: str) -> None:
        self.pid = os.getpid()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.path = path
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)
        self.children: dict[int, socket.socket] = {}
        self.poller = select.poll()
        self.poller.register(self.listener, select.POLLIN)
        self.poller.register(self.wake_r, select.POLLIN)
        self.poller.register(0, select.POLLIN)  # the test process closes our stdin to stop us

    def run(self) -> _Child | None:
        """Serve until the test process closes our stdin (None), or return in a forked child."""
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while True:
            try:
                events = self.poller.poll()
            except InterruptedError:
                continue
            for fd, _mask in events:
                if fd == 0:
                    if not os.read(0, 4096):
                        return None
                elif fd == self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_r, 4096):
                            pass
                else:
                    child = self._accept()
                    if child is not None:
                        return child
            self._reap()

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                cpu = usage.ru_utime + usage.ru_stime
                with contextlib.suppress(OSError):
                    conn.sendall(b"exit %d %.3f\n" % (os.waitstatus_to_exitcode(status), cpu))
                conn.close()

    def _accept(self) -> _Child | None:
        conn, _ = self.listener.accept()
        fds: list[int] = []
        try:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", creds)
            if uid != os.getuid():
                raise PermissionError("a request from another user")
            request, fds = _recv_request(conn)
            if len(fds) != 3:
                raise ValueError("three file descriptors expected")
            pid = os.fork()
        except Exception as exc:
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(b"error %s\n" % repr(exc).encode("utf-8", "replace"))
            conn.close()
            return None
        if pid == 0:
            return _Child(self, conn, request, fds)
        for fd in fds:
            os.close(fd)
        self.children[pid] = conn  # the child says its pid once it is set up; we say how it ended
        return None


class _Child:
    """A forked child, back at the top of the fork server's stack (nothing of the parent's loop
    is left to unwind when SystemExit ends it)."""

    def __init__(self, parent: _Parent, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        self.parent, self.conn, self.request, self.fds = parent, conn, request, fds

    def run(self) -> None:
        """Drop the parent's state, take the test's pipes, folder and environment, and run
        ``python -m context_companion`` (SystemExit ends the interpreter as it ends any)."""
        parent, request, fds = self.parent, self.request, self.fds
        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            parent.listener.close()
            for other in parent.children.values():
                other.close()
            os.close(parent.wake_r)
            os.close(parent.wake_w)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)  # the duplicates are inheritable, as a Popen child's stdio
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            os.umask(request["umask"])
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            tempfile.tempdir = None  # gettempdir() reads TMPDIR again
            argv = request["argv"]
            sys.orig_argv = list(argv)
            sys.argv = [argv[0], *argv[3:]]  # runpy puts the module's path in sys.argv[0]
            sys.path[0] = os.getcwd()  # as ``python -m`` puts it
            import runpy

            run_module_as_main = runpy._run_module_as_main  # type: ignore[attr-defined]
            # Set up as an exec'd process is when Popen returns: now the test may look at us.
            self.conn.sendall(b"pid %d\n" % os.getpid())
            self.conn.close()
        except BaseException as exc:  # the child must never go back to the parent's loop
            with contextlib.suppress(Exception):
                os.write(2, f"fork server: the child could not start: {exc!r}\n".encode())
            os._exit(127)
        del self.parent, self.conn, self.request, self.fds, parent
        run_module_as_main("context_companion", alter_argv=True)


def _serve(path: str) -> _Child | None:
    # Import as ``python -m context_companion`` from this empty folder would: the installed package
    # (editable or not), not this script's folder.
    sys.path[0] = os.getcwd()
    _preload()
    assert threading.active_count() == 1, "the fork server must fork with one thread"
    parent = _Parent(path)
    child = parent.run()
    if child is None:  # stopped: leave no socket (nor its private folder) behind
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(path))
    return child


# --------------------------------------------------------------------------- the test side

_lock = threading.Lock()
_parent: subprocess.Popen[bytes] | None = None
_socket_path: str | None = None


# The fork server's environment: the test process's as it started (before any test changed it).
_BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}


def _parent_env() -> dict[str, str]:
    return _BASE_ENV


def _ensure_parent() -> str:
    global _parent, _socket_path
    with _lock:
        if _parent is not None and _parent.poll() is None and _socket_path is not None:
            return _socket_path
        folder = tempfile.mkdtemp(prefix="cc-forkserver-")
        _socket_path = os.path.join(folder, "sock")
        _parent = subprocess.Popen(
            [sys.executable, __file__, _socket_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_parent_env(),
            cwd=folder,
        )
        assert _parent.stdout is not None
        line = _parent.stdout.readline()
        if line != b"ready\n":
            _parent.wait(10)
            raise RuntimeError(f"the fork server did not start (exit status {_parent.returncode})")
        return _socket_path


def stop_parent() -> None:
    """End the fork server (its children, the servers, end as their tests stop them)."""
    global _parent
    with _lock:
        if _parent is None:
            return
        with contextlib.suppress(OSError):
            assert _parent.stdin is not None
            _parent.stdin.close()
        try:
            _parent.wait(10)
        except subprocess.TimeoutExpired:
            _parent.kill()
            _parent.wait(10)
        if _parent.stdout is not None:
            _parent.stdout.close()
        if _socket_path is not None:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(_socket_path))
        _parent = None


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class ForkedPopen:
    """What the tests use of ``subprocess.Popen``, for a server forked by the fork server: ``pid``,
    ``args``, ``stdin``/``stdout``/``stderr`` (binary, buffered as Popen's ``bufsize`` says),
    ``returncode``, ``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: Any = None,
        stdout: Any = None,
        stderr: Any = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        bufsize: int = -1,
        keep_control: bool = False,
    ) -> None:
        """``keep_control``: the status socket stays open once the exit status is read (an event
        loop watches it: its owner closes it, :meth:`close_control`)."""
        self.args = list(argv)
        self.returncode: int | None = None
        self.cpu_seconds: float | None = None  # the child's user + system CPU, once it has exited
        self.stdin: Any = None
        self.stdout: Any = None
        self.stderr: Any = None
        self._bufsize = bufsize
        self._keep_control = keep_control
        self._buffer = b""
        self._eof = False
        child_fds: list[int] = []
        mine: list[int] = []
        try:
            for number, spec in enumerate((stdin, stdout, stderr)):
                child_fds.append(self._child_end(number, spec, mine))
            path = _ensure_parent()
            self._control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._control.connect(path)
            request = {
                "argv": self.args,
                "env": dict(os.environ if env is None else env),
                "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
                "umask": _current_umask(),
            }
            body = json.dumps(request).encode("utf-8")
            data = _HEADER.pack(len(body)) + body
            sent = self._control.sendmsg(
                [data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", child_fds).tobytes())]
            )
            self._control.sendall(data[sent:])
            line = self._readline(timeout=30)
            if not line.startswith(b"pid "):
                raise RuntimeError(f"the fork server did not start {self.args}: {line.decode(errors='replace')}")
            self.pid = int(line[4:])
        except BaseException:
            for fd in mine:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if hasattr(self, "_control"):
                self._control.close()
            raise
        finally:
            for fd in child_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _child_end(self, number: int, spec: Any, mine: list[int]) -> int:
        """The descriptor the child gets as fd ``number`` (a new one: closed here once sent)."""
        if spec == subprocess.PIPE:
            read_end, write_end = os.pipe()
            if number == 0:
                mine.append(write_end)
                self.stdin = open(write_end, "wb", buffering=self._bufsize)  # noqa: SIM115 (the caller's, as Popen's)
                return read_end
            mine.append(read_end)
            stream = open(read_end, "rb", buffering=self._bufsize)  # noqa: SIM115
            if number == 1:
                self.stdout = stream
            else:
                self.stderr = stream
            return write_end
        if spec == subprocess.DEVNULL:
            return os.open(os.devnull, os.O_RDWR)
        if spec == subprocess.STDOUT:
            raise ValueError("stderr=STDOUT: not supported by the fork server (use popen: it execs)")
        if spec is None:
            return os.dup(number)
        return os.dup(spec if isinstance(spec, int) else spec.fileno())

    # ------------------------------------------------------------------ status

    def _readline(self, timeout: float | None) -> bytes:
        """The next line from the fork server; b"" once it has closed the connection."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if self._eof:
                return b""
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self._control], [], [], remaining)
            if not ready:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            chunk = self._control.recv(4096)
            if not chunk:
                self._eof = True
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"

    def _settle(self, timeout: float | None) -> int:
        if self.returncode is not None:
            return self.returncode
        line = self._readline(timeout)
        if line.startswith(b"exit "):
            code, cpu = line[5:].split()
            self.returncode = int(code)
            self.cpu_seconds = float(cpu)
        else:  # the fork server is gone: the status is lost with it; a child that is gone reads as killed
            deadline = None if timeout is None else time.monotonic() + timeout
            while _alive(self.pid):
                if deadline is not None and time.monotonic() >= deadline:
                    raise subprocess.TimeoutExpired(self.args, timeout or 0)
                time.sleep(0.05)
            self.returncode = -signal.SIGKILL
        if not self._keep_control:
            self.close_control()
        return self.returncode

    def close_control(self) -> None:
        self._control.close()

    def control_fileno(self) -> int:
        return self._control.fileno()

    @property
    def status_lost(self) -> bool:
        """The fork server closed the connection without an exit status."""
        return self._eof and self.returncode is None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self._settle(0)
            except subprocess.TimeoutExpired:
                return None
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        return self._settle(timeout)

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def popen(argv: Sequence[str], *, fork: bool = True, **kwargs: Any) -> subprocess.Popen[bytes] | ForkedPopen:
    """``subprocess.Popen(argv, **kwargs)``, forked from the fork server where that is the same
    (and ``fork``)."""
    allowed = {"stdin", "stdout", "stderr", "env", "cwd"}
    if fork and set(kwargs) <= allowed and forkable(argv, kwargs.get("env")):
        return ForkedPopen(argv, **kwargs)
    return subprocess.Popen(list(argv), **kwargs)


# --------------------------------------------------------------------------- asyncio


class _ForkedTransport(base_subprocess.BaseSubprocessTransport):
    """asyncio's subprocess transport over a :class:`ForkedPopen` (the exit status comes from the
    fork server, not from a child watcher: the child is not this process's to wait for)."""

    def _start(self, args: Any, shell: Any, stdin: Any, stdout: Any, stderr: Any, bufsize: Any, **kwargs: Any) -> None:
        self._proc = ForkedPopen(
            args, stdin=stdin, stdout=stdout, stderr=stderr, bufsize=bufsize, keep_control=True, **kwargs
        )


async def create_process(argv: Sequence[str], *, env: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
    """``asyncio.create_subprocess_exec(*argv, env=env, **kwargs)`` (pipes by default, as pygls
    asks), forked from the fork server where that is the same as an exec."""
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    pipes.update({k: kwargs.pop(k) for k in list(kwargs) if k in pipes})
    if kwargs.keys() - {"cwd", "limit"} or not forkable(argv, env):
        return await _create_subprocess_exec(*argv, env=env, **pipes, **kwargs)
    loop = asyncio.get_running_loop()
    protocol = asyncio.subprocess.SubprocessStreamProtocol(limit=kwargs.pop("limit", 2**16), loop=loop)
    waiter = loop.create_future()
    transport = _ForkedTransport(
        loop, protocol, list(argv), False, pipes["stdin"], pipes["stdout"], pipes["stderr"], 0,
        waiter=waiter, env=env, cwd=kwargs.get("cwd"),
    )  # fmt: skip
    child = transport._proc
    assert isinstance(child, ForkedPopen)
    status_fd = child.control_fileno()

    def _status() -> None:
        code = child.poll()
        if code is None and not child.status_lost:
            return  # part of a line
        loop.remove_reader(status_fd)
        if code is None:  # the fork server is gone: wait for the child itself
            loop.call_later(0.05, _lost)
            return
        child.close_control()
        if transport._returncode is None:
            transport._process_exited(code)

    def _lost() -> None:
        code = child.poll()
        if code is None:
            loop.call_later(0.05, _lost)
            return
        child.close_control()
        if transport._returncode is None:
            transport._process_exited(code)

    loop.add_reader(status_fd, _status)
    try:
        await waiter
    except BaseException:
        transport.close()
        await transport._wait()
        raise
    return asyncio.subprocess.Process(transport, protocol, loop)


_create_subprocess_exec = asyncio.create_subprocess_exec


@contextlib.contextmanager
def forked_asyncio_starts() -> Iterator[None]:
    """Within: ``asyncio.create_subprocess_exec`` calls of this task (pygls' ``start_io``) fork
    servers from the fork server where that is the same as an exec."""
    token = _FORKING.set(True)
    try:
        yield
    finally:
        _FORKING.reset(token)


_FORKING: contextvars.ContextVar[bool] = contextvars.ContextVar("cc_forking", default=False)


async def _dispatching_create_subprocess_exec(program: Any, *args: Any, **kwargs: Any) -> Any:
    if _FORKING.get():
        return await create_process([program, *args], **kwargs)
    return await _create_subprocess_exec(program, *args, **kwargs)


def install() -> None:
    """Route pygls' server starts through :func:`create_process` inside :func:`forked_asyncio_starts`."""
    if asyncio.create_subprocess_exec is not _dispatching_create_subprocess_exec:
        asyncio.create_subprocess_exec = _dispatching_create_subprocess_exec  # type: ignore[assignment]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: forkserver.py SOCKET\n")
        sys.exit(2)
    _child = _serve(sys.argv[1])
    if _child is not None:
        _child.run()
