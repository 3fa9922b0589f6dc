"""A clock the tests can move, loaded into the *server* process (tests put this folder first on
its PYTHONPATH). ``CC_TEST_TODAY_FILE`` names a file holding an ISO date: ``date.today()`` returns
it, read afresh on every call, so a test moves the server past midnight by rewriting the file.
Nothing here runs in normal use."""

from __future__ import annotations

import datetime
import os

_FILE = os.environ.get("CC_TEST_TODAY_FILE")

if _FILE:
    _real_date = datetime.date

    class _MovableDate(_real_date):
        @classmethod
        def today(cls) -> datetime.date:
            with open(_FILE, encoding="utf-8") as fh:
                return _real_date.fromisoformat(fh.read().strip())

    datetime.date = _MovableDate  # type: ignore[misc]
