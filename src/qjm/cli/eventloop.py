"""The event loop the qjm daemons and commands run on: uvloop when installed."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
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
