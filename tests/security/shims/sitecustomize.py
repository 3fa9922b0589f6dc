"""Write faults loaded into the *server* process by the security tests.

The tests put this folder on the server's PYTHONPATH and name the shims in ``CC_TEST_SHIMS``
(comma separated). Nothing here runs in normal use.

* ``disk_full``: ``fsync`` of a regular file fails with ENOSPC, as on a full disk with delayed
  allocation (a test must not fill a real disk).
* ``deny_write``: creating a file in a folder without write bits fails with EACCES, as it would
  for an unprivileged user (the tests run as root, where ``chmod 555`` stops nothing).
* ``buggy_handler``: the request ``test/crash`` reaches a handler with a bug: it raises a plain
  exception whose text names a file of the server's own code (as a real bug's message may).
"""

from __future__ import annotations

import errno
import os
import stat

_SHIMS = {s.strip() for s in os.environ.get("CC_TEST_SHIMS", "").split(",") if s.strip()}

if "disk_full" in _SHIMS:
    _real_fsync = os.fsync

    def _fsync(fd: int) -> None:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _real_fsync(fd)

    os.fsync = _fsync

if "deny_write" in _SHIMS:
    _real_open = os.open

    def _open(path, flags, mode=0o777, *, dir_fd=None):  # type: ignore[no-untyped-def]
        if flags & os.O_CREAT:
            parent = (
                os.stat(".", dir_fd=dir_fd) if dir_fd is not None else os.stat(os.path.dirname(os.path.abspath(path)))
            )
            if not parent.st_mode & 0o222:
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(path))
        return _real_open(path, flags, mode, dir_fd=dir_fd)

    os.open = _open

if "buggy_handler" in _SHIMS:
    from pygls.protocol import json_rpc

    _real_get_handler = json_rpc.JsonRPCProtocol._get_handler

    def _get_handler(self, feature_name):  # type: ignore[no-untyped-def]
        if feature_name == "test/crash":
            import context_companion.lsp.server as where

            def crash(*args):  # type: ignore[no-untyped-def]
                raise RuntimeError(f'unexpected state, File "{where.__file__}", line 1')

            return crash
        return _real_get_handler(self, feature_name)

    json_rpc.JsonRPCProtocol._get_handler = _get_handler
