"""Starting, watching and stopping daemon processes of a local cluster."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qjm.errors import QjmError
from qjm.logs import LOG_DIR_ENV


class LaunchError(QjmError):
    """A daemon did not start or stop as asked."""


@dataclass
class Daemon:
    """A started daemon process and the files it reports through."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    ready_file: Path

    @property
    def pid(self) -> int:
        """Its process id."""
        return self.process.pid


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a daemon's log, for an error that says why it did not start."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:]) or "(empty log)"


def port_is_free(host: str, port: int) -> bool:
    """True when nothing listens on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the daemons bind: a stopped daemon's connections in TIME_WAIT are not a user.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def spawn(name: str, argv: list[str], log: Path, ready_file: Path) -> Daemon:
    """Start `python -m qjm <argv>` detached, logging to log, reporting readiness to ready_file."""
    log.parent.mkdir(parents=True, exist_ok=True)
    ready_file.parent.mkdir(parents=True, exist_ok=True)
    ready_file.unlink(missing_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "qjm", *argv, "--ready-file", str(ready_file)],
            stdin=subprocess.DEVNULL,
            # the daemon serves its log directory as /logs/ (design §N.11)
            env={**os.environ, LOG_DIR_ENV: str(log.parent)},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return Daemon(name, proc, log, ready_file)


def tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def wait_ready(daemons: list[Daemon], timeout: float = 30.0) -> dict[str, dict[str, Any]]:
    """Wait until every daemon wrote its ready file; raise with its log if one exits."""
    deadline = time.monotonic() + timeout
    ready: dict[str, dict[str, Any]] = {}
    while len(ready) < len(daemons):
        for d in daemons:
            if d.name in ready:
                continue
            if d.ready_file.exists():
                ready[d.name] = json.loads(d.ready_file.read_text())
                continue
            code = d.process.poll()
            if code is not None:
                raise LaunchError(
                    f"{d.name} exited with code {code} before it was ready; the end of "
                    f"{d.log}:\n{tail(d.log)}"
                )
        if len(ready) == len(daemons):
            break
        if time.monotonic() > deadline:
            late = [d.name for d in daemons if d.name not in ready]
            raise LaunchError(f"{', '.join(late)} not ready after {timeout:.0f}s")
        time.sleep(0.02)
    return ready


def pid_alive(pid: int | None) -> bool:
    """True when a process with this pid exists (and is not a zombie)."""
    if not pid:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


def wait_or_kill(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to timeout for a child to exit, then SIGKILL it; False if it outlived that."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return False
    return True


def stop_pid(pid: int, timeout: float = 10.0) -> bool:
    """SIGTERM a process, then SIGKILL after timeout; True if it had been running."""
    if not pid_alive(pid):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            kill_deadline = time.monotonic() + 5
            while pid_alive(pid) and time.monotonic() < kill_deadline:
                _reap(pid)
                time.sleep(0.01)
            break
        _reap(pid)
        time.sleep(0.01)
    return True


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
