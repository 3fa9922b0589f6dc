"""Write faults loaded into the *server* process by the security tests.

The tests put this folder on the server's PYTHONPATH and name the shims in ``CC_TEST_SHIMS``
(comma separated). Nothing here runs in normal use.

* ``disk_full``: ``fsync`` of a regular file fails with ENOSPC, as on a full disk with delayed
  allocation (a test must not fill a real disk).
* ``deny_write``: creating a file in a folder without write bits fails with EACCES, as it would
  for an unprivileged user (the tests run as root, where ``chmod 555`` stops nothing).
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
