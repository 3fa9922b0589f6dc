"""A log line that a flood cannot multiply: refused connections, bad input from a peer.

:class:`Sparse` logs the first of a kind at once, then at most one line per interval, saying how many
were not logged meanwhile. No I/O of its own beyond ``logging``; no clock but ``time.monotonic``.
"""

from __future__ import annotations

import logging
import time


class Sparse:
    """``warning(...)`` logged at most once every ``every`` seconds, with the count of the ones skipped."""

    def __init__(self, logger: logging.Logger, every: float = 60.0) -> None:
        self._logger = logger
        self._every = every
        self._skipped = 0
        self._last: float | None = None

    def warning(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if self._last is not None and now - self._last < self._every:
            self._skipped += 1
            return
        if self._skipped:
            message += f" (and {self._skipped} more like it in the last {now - self._last:.0f} s)"  # type: ignore[operator]
        self._logger.warning(message, *args)
        self._last = now
        self._skipped = 0
