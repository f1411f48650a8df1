"""Structured logs for the daemons: one line per event, key=value, UTC timestamps."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

REPEAT_INTERVAL_SECONDS = 10.0
MAX_TRACKED_MESSAGES = 1000


class RateLimitFilter(logging.Filter):
    """Lets one line per distinct first line through per interval, then says how many it held.

    Only a run of the same line is held back: a line its logger did not log just before
    passes (a state change such as "nn1 is active" after "nn1 is standby" is news).
    """

    def __init__(
        self,
        interval: float = REPEAT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.clock = clock
        self._seen: OrderedDict[tuple[str, int, str], list[float]] = OrderedDict()
        self._last: dict[str, tuple[str, int, str]] = {}  # logger name -> its last line
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        """True to emit the record (with a repeat count appended), False to hold it back."""
        # The first line: asyncio's accept errors differ only in the socket line after it,
        # and every listener of a daemon fails alike at the descriptor limit.
        key = (record.name, record.levelno, record.getMessage().split("\n", 1)[0])
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            run = self._last.get(record.name) == key
            self._last[record.name] = key
            if seen is not None and run and now - seen[0] < self.interval:
                seen[1] += 1
                return False
            held = int(seen[1]) if seen is not None else 0
            self._seen[key] = [now, 0]
            self._seen.move_to_end(key)
            while len(self._seen) > MAX_TRACKED_MESSAGES:
                self._seen.popitem(last=False)
        if held:
            record.msg = (
                f"{record.getMessage()} (repeated {held} times in the last {self.interval:g}s)"
            )
            record.args = None
        return True


class KeyValueFormatter(logging.Formatter):
    """Formats a record as `ts=... level=... daemon=... logger=... msg="..."`."""

    def __init__(self, daemon: str) -> None:
        super().__init__()
        self.daemon = daemon

    def format(self, record: logging.LogRecord) -> str:
        """Render one record on one line."""
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        msg = record.getMessage()
        if record.exc_info:
            msg += " | " + self.formatException(record.exc_info).replace("\n", " | ")
        return (
            f"ts={ts}.{int(record.msecs):03d}Z level={record.levelname} daemon={self.daemon} "
            f"logger={record.name} msg={json.dumps(msg)}"
        )


def setup_logging(daemon: str, level: str = "INFO") -> None:
    """Send every qjm log line of this process to stderr in key=value form."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter(daemon))
    handler.addFilter(RateLimitFilter())  # e.g. accept failing at the fd limit
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


LOG_DIR_ENV = "QJM_LOG_DIR"  # HDFS's HADOOP_LOG_DIR (the hadoop.log.dir property)


def log_dir() -> Path | None:
    """This daemon's log directory: QJM_LOG_DIR when set (the launcher sets it), else None.

    HDFS serves it as /logs and writes `dfsadmin -metasave` files there (design §N.11).
    """
    value = os.environ.get(LOG_DIR_ENV, "").strip()
    return Path(value) if value else None
