"""Structured logs for the daemons: one line per event, key=value, UTC timestamps."""

from __future__ import annotations

import json
import logging
import sys
import time


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
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
