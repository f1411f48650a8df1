"""Loopback ports for test servers, taken below the kernel's ephemeral range.

A server restarted on its old port must find it free. Ports from the ephemeral range
(where port 0 and outgoing connections draw from) can be taken in between by any client
socket, so test servers get ports from a range the kernel never hands out by itself.
"""

from __future__ import annotations

import os
import random
import socket

LOW, HIGH = 20000, 32000  # below /proc/sys/net/ipv4/ip_local_port_range (32768-60999)


def _worker_slice(low: int, high: int) -> tuple[int, int]:
    """This pytest-xdist worker's own part of [low, high), so two workers never pick one port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1")
    if not worker.startswith("gw") or count <= 1:
        return low, high
    index = int(worker[2:])
    width = (high - low) // count
    return low + index * width, low + (index + 1) * width


LOW, HIGH = _worker_slice(LOW, HIGH)
_rng = random.Random()
_cursor = _rng.randrange(LOW, HIGH)  # a random start, so two runs side by side rarely meet


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(n: int = 1) -> int:
    """The first of n consecutive free ports, handed out in turn through this worker's range.

    Ports go out in order, wrapping at the end, so the run's earlier picks never fragment
    the range and a port comes round again only after every other one has been handed out.
    """
    global _cursor
    if not 1 <= n <= HIGH - LOW:
        raise ValueError(f"cannot hand out {n} consecutive ports from {LOW}-{HIGH}")
    base, scanned = _cursor, 0
    while scanned < 2 * (HIGH - LOW):
        if base + n > HIGH:
            scanned += HIGH - base
            base = LOW
            continue
        busy = next((p for p in range(base, base + n) if not _bindable(p)), None)
        if busy is None:
            _cursor = base + n if base + n < HIGH else LOW
            return base
        scanned += busy + 1 - base
        base = busy + 1
    raise RuntimeError(f"no {n} consecutive free ports in {LOW}-{HIGH}")


def free_port() -> int:
    """One free port, handed out in turn."""
    return free_port_block(1)


def free_address() -> str:
    """127.0.0.1:<free port>."""
    return f"127.0.0.1:{free_port()}"
