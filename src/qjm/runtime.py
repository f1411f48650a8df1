"""What every qjm daemon and command runs with: the event loop, readiness, stop signals."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# QJM_EVENT_LOOP=asyncio runs on asyncio's own loop even where uvloop is installed.
EVENT_LOOP_ENV = "QJM_EVENT_LOOP"


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on uvloop if available, else on asyncio's loop."""
    if os.environ.get(EVENT_LOOP_ENV, "") != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            result: T = uvloop.run(main)
            return result
    return asyncio.run(main)


def write_ready_file(ready_file: Path, info: dict[str, Any]) -> None:
    """Report a daemon ready: {pid, ...info} as JSON, replacing the file atomically."""
    tmp = ready_file.with_name(ready_file.name + ".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **info}))
    os.replace(tmp, ready_file)


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (on the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
