"""`make demo`: automatic failover on a local cluster, shown while a workload writes.

ZooKeeper, 3 JournalNodes, 2 NameNodes and their failover controllers (zkfc1, zkfc2) and 3
DataNodes come up; HA clients given both NameNodes (never told which is active) make
directories and empty files, and writers (hdfs-native with the cluster's hadoop-conf) write
files of a few hundred KB to a few MB in 1 MiB blocks; the active NameNode is killed with
SIGKILL, and the other one's ZKFC makes it active. The failover time runs from the kill until
the other NameNode reports active and a write is acknowledged there. Then every acknowledged
op is checked on the new active, every acknowledged file is read back from it and compared
byte for byte (sha256), the genuine Hadoop FsShell counts the result, and the cluster stays
up until Ctrl-C (or stops at once with --once).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from qjm import runtime
from qjm.cli.cluster import cluster_status, print_status
from qjm.cluster.hadoop_conf import fsshell_argv, read_site
from qjm.cluster.launcher import (
    CLUSTER_JSON,
    DEFAULT_DATANODES,
    cluster_down,
    cluster_up,
    daemons_of,
    read_cluster,
)
from qjm.cluster.process import LaunchError, pid_alive, tail
from qjm.config import load_config
from qjm.errors import QjmError
from qjm.ipc.login import client_login, login
from qjm.ipc.sasl import ClientSecurity
from qjm.namenode.client import HAAdminClient, NameNodeClient
from qjm.namenode.types import HAState
from qjm.testing.wait import wait_until_async

WORKERS = 4
ROOT = "/demo"
WRITERS = 3  # hdfs-native clients writing files with bytes, each in a thread of its own
FILES = f"{ROOT}/files"
BLOCK_SIZE = 1 << 20  # the NameNode's minimum (dfs.namenode.fs-limits.min-block-size)
FILE_SIZES = (200_000, 3_000_000)  # each file's size is drawn between these (bytes)
VERIFY_DEADLINE_S = 60.0  # reading every acknowledged file back must end within this
SHOW_BEFORE_S = 4.0  # the workload runs this long before the kill (for the display only)
SHOW_AFTER_S = 3.0  # and this long after the failover (for the display only)
FIRST_ACK_DEADLINE_S = 30.0  # the workload must get its first op acknowledged within this
FAILOVER_DEADLINE_S = 60.0  # no new active with a write acknowledged by then: the demo failed
STOP_DEADLINE_S = 30.0  # clients still in a call this long after being told to stop are cancelled
POLL_S = 0.05  # how often HA states are asked while waiting for the failover
HA_RPC_TIMEOUT_S = 2.0
# Clients retry a call across both NameNodes for about 20 s (HDFS's DFSClient tries 15
# failovers with a growing sleep), so an op in flight during the failover is delayed, not failed.
CLIENT_ROUNDS = 80
CLIENT_BACKOFF_S = 0.05
CLIENT_MAX_BACKOFF_S = 0.25
DEMO_SUBDIRS = ("data", "logs", "run", "hadoop-conf", "zookeeper", "kdc")


class DemoError(QjmError):
    """The demo scenario could not go on (what was waited for is named)."""


def say(text: str) -> None:
    """Print a step of the demo."""
    print(f"\n== {text}", flush=True)


def show(text: str) -> None:
    """Print a command's output, indented."""
    for line in text.strip().splitlines():
        print(f"    {line}".rstrip())


def qjm_exe() -> str:
    """How to run qjm from here: the venv's script when there is one, else `qjm`."""
    script = Path(sys.executable).parent / "qjm"
    if not script.exists():
        return "qjm"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


class Console:
    """Event lines and a one-line progress bar, redrawn in place on a terminal."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self._bar_shown = False

    def line(self, text: str) -> None:
        """Print a line of its own (above the bar on a terminal)."""
        if self._bar_shown:
            self.stream.write("\r\033[K")
            self._bar_shown = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def bar(self, text: str) -> None:
        """Show the progress line: redrawn in place on a terminal, a plain line otherwise."""
        if self.tty:  # cut to the terminal's width, or \r would not go back over it
            text = text[: shutil.get_terminal_size().columns - 1]
            self.stream.write("\r\033[K" + text)
            self._bar_shown = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def end_bar(self) -> None:
        """Leave the last progress line on screen and move below it."""
        if self._bar_shown:
            self.stream.write("\n")
            self.stream.flush()
            self._bar_shown = False


def render_bar(fraction: float, width: int = 20) -> str:
    """[#####-----] for a fraction between 0 and 1."""
    filled = round(max(0.0, min(1.0, fraction)) * width)
    return "[" + "#" * filled + "-" * (width - filled) + "]"


@dataclass
class Ack:
    """An acknowledged op: its path, when the answer came, which NameNode gave it."""

    path: str
    at: float
    namenode: str


@dataclass
class Workload:
    """WORKERS concurrent HA clients making directories and empty files under ROOT."""

    addresses: dict[str, str]  # NameNode RPC address -> name
    attempted: set[str] = field(default_factory=set)
    acked: list[Ack] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    active: str = "?"  # the NameNode that acknowledged the last op
    watch: tuple[str, float] | None = None  # (NameNode, since): report its first ack
    watched: Ack | None = None
    watched_event: asyncio.Event = field(default_factory=asyncio.Event)

    def watch_for(self, namenode: str, since: float) -> None:
        """Set watched_event at the first op acknowledged by namenode after since."""
        self.watch = (namenode, since)

    def _record(self, path: str, address: str) -> None:
        ack = Ack(path, time.monotonic(), self.addresses.get(address, address))
        self.acked.append(ack)
        self.active = ack.namenode
        if self.watch and self.watched is None:
            name, since = self.watch
            if ack.namenode == name and ack.at > since:
                self.watched = ack
                self.watched_event.set()

    async def worker(self, w: int) -> None:
        """One client: alternately mkdirs and create+complete, recording what was answered."""
        async with NameNodeClient(
            list(self.addresses),
            max_rounds=CLIENT_ROUNDS,
            backoff_s=CLIENT_BACKOFF_S,
            max_backoff_s=CLIENT_MAX_BACKOFF_S,
        ) as client:
            n = 0
            while not self.stop.is_set():
                path = f"{ROOT}/w{w}" if n == 0 else f"{ROOT}/w{w}/{'dir' if n % 2 else 'file'}{n}"
                self.attempted.add(path)
                try:
                    if n % 2 or n == 0:
                        await client.mkdirs(path)
                    else:
                        await client.touch(path)
                except (QjmError, OSError) as e:  # not acknowledged: it may or may not be there
                    self.errors.append(f"{path}: {e}")
                else:
                    self._record(path, client.current)
                n += 1

    async def stop_all(self, tasks: list[asyncio.Task[None]]) -> None:
        """Tell the clients to stop; cancel those still in a call after STOP_DEADLINE_S."""
        self.stop.set()
        _, pending = await asyncio.wait(tasks, timeout=STOP_DEADLINE_S)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class FileAck:
    """A file whose close was acknowledged: its path, size, sha256, when it was begun and
    when the close was answered."""

    path: str
    size: int
    sha256: str
    started: float
    at: float


def blocks_of(size: int) -> int:
    """How many blocks of BLOCK_SIZE a file of size bytes spans."""
    return max(1, -(-size // BLOCK_SIZE))


def client_config(conf_dir: Path) -> dict[str, str]:
    """An HDFS client's properties: core-site.xml and hdfs-site.xml of conf_dir."""
    return read_site(conf_dir / "core-site.xml") | read_site(conf_dir / "hdfs-site.xml")


def native() -> Any:
    """The hdfs_native module (the Rust HDFS client; `make install` brings it)."""
    try:
        import hdfs_native
    except ImportError:
        raise DemoError(
            "the hdfs-native package is not installed: `make install` (or pip install "
            "-e '.[dev]') brings it"
        ) from None
    return hdfs_native


def sha256_of(chunks: Iterator[bytes]) -> tuple[int, str]:
    """The total size and sha256 of a stream of chunks."""
    digest = hashlib.sha256()
    size = 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def read_back(client: Any, path: str) -> tuple[int, str]:
    """The size and sha256 of path as client reads it (blocking)."""
    with client.read(path) as f:
        return sha256_of(iter(lambda: f.read(BLOCK_SIZE), b""))


@dataclass
class DataLoad:
    """WRITERS hdfs-native clients of the nameservice writing files with bytes under FILES,
    each in a thread of its own; every acknowledged close is recorded with its sha256."""

    config: dict[str, str]  # core-site.xml and hdfs-site.xml of the cluster's hadoop-conf
    attempted: set[str] = field(default_factory=set)
    acked: list[FileAck] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=lambda: threading.Event())
    pool: concurrent.futures.ThreadPoolExecutor = field(
        default_factory=lambda: concurrent.futures.ThreadPoolExecutor(
            WRITERS + 1, thread_name_prefix="demo-writer"
        )
    )

    @property
    def bytes_acked(self) -> int:
        """Bytes in the acknowledged files."""
        return sum(a.size for a in self.acked)

    def client(self) -> Any:
        """A new hdfs-native client of the nameservice (it finds the active NameNode)."""
        return native().Client(self.config["fs.defaultFS"], config=self.config)

    def writer(self, w: int) -> None:
        """One writer (blocking, in a thread): files until told to stop."""
        hdfs_native = native()
        client = self.client()
        rng = random.Random(w)
        options = hdfs_native.WriteOptions(block_size=BLOCK_SIZE, create_parent=True)
        n = 0
        while not self.stop.is_set():
            path = f"{FILES}/w{w}/f{n}"
            data = rng.randbytes(rng.randint(*FILE_SIZES))
            self.attempted.update((FILES, f"{FILES}/w{w}", path))
            started = time.monotonic()
            try:
                with client.create(path, options) as f:
                    f.write(data)
            except Exception as e:  # hdfs-native raises several kinds
                self.errors.append(f"{path}: {type(e).__name__}: {e}")
            else:
                sha = hashlib.sha256(data).hexdigest()
                self.acked.append(FileAck(path, len(data), sha, started, time.monotonic()))
            n += 1

    def start(self) -> list[asyncio.Future[None]]:
        """Start the writers on the pool."""
        loop = asyncio.get_running_loop()
        return [loop.run_in_executor(self.pool, self.writer, w) for w in range(WRITERS)]

    async def stop_all(self, futures: list[asyncio.Future[None]]) -> None:
        """Tell the writers to stop; give up on those still in a call after STOP_DEADLINE_S."""
        self.stop.set()
        await asyncio.wait(futures, timeout=STOP_DEADLINE_S)
        self.pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Progress:
    """What the progress line shows: the phase of the scenario and its planned length."""

    t0: float
    phase: str = "before the kill"
    since: float = 0.0
    length_s: float = SHOW_BEFORE_S

    def enter(self, phase: str, length_s: float) -> None:
        """Start a new phase now."""
        self.phase, self.since, self.length_s = phase, time.monotonic(), length_s


async def show_progress(
    load: Workload, data: DataLoad, progress: Progress, console: Console
) -> None:
    """Redraw the progress line (5 times a second on a terminal, once a second otherwise)."""
    interval = 0.2 if console.tty else 1.0
    history: list[tuple[float, int]] = [(time.monotonic(), 0)]
    while True:
        await asyncio.sleep(interval)  # a display refresh, not synchronization
        now, count = time.monotonic(), len(load.acked)
        history.append((now, count))
        while len(history) > 2 and now - history[0][0] > 1.0:
            history.pop(0)
        rate = (count - history[0][1]) / max(now - history[0][0], 1e-3)
        done = (now - progress.since) / progress.length_s
        console.bar(
            f"  {render_bar(done)} {now - progress.t0:5.1f}s  {progress.phase:<14} "
            f"{count:6d} ops ({rate:4.0f}/s), {len(data.acked):4d} files "
            f"({data.bytes_acked / 1e6:6.1f} MB) acknowledged, "
            f"{len(load.errors) + len(data.errors)} errors, by {load.active}"
        )


# HA states are asked as the NameNodes' own principal on a Kerberos cluster: HDFS answers
# getServiceStatus to the superuser only (design §S.3)
_admin: ClientSecurity | None = None


async def ha_state(address: str) -> str:
    """A NameNode's HA state in lower case, or "down" when it does not answer."""
    try:
        async with HAAdminClient(address, timeout=HA_RPC_TIMEOUT_S, security=_admin) as admin:
            return (await admin.get_service_state()).name.lower()
    except (QjmError, OSError):
        return "down"


async def ha_states(namenodes: dict[str, str]) -> dict[str, str]:
    """name -> HA state of every NameNode (name -> RPC address)."""
    states = await asyncio.gather(*(ha_state(a) for a in namenodes.values()))
    return dict(zip(namenodes, states, strict=True))


async def wait_active(address: str, deadline: float) -> float | None:
    """When the NameNode at address first answered that it is active; None at the deadline."""
    while time.monotonic() < deadline:
        try:
            async with HAAdminClient(address, timeout=HA_RPC_TIMEOUT_S, security=_admin) as admin:
                if await admin.get_service_state() == HAState.ACTIVE:
                    return time.monotonic()
        except (QjmError, OSError):
            pass
        await asyncio.sleep(POLL_S)
    return None


async def wait_until(test: Callable[[], bool], within_s: float, what: str) -> None:
    """Return once test() holds; DemoError naming what was waited for after within_s."""
    try:
        await wait_until_async(what, test, timeout_s=within_s, poll_s=POLL_S)
    except AssertionError:
        raise DemoError(f"{what} did not happen within {within_s:.0f} s") from None


@dataclass
class Outcome:
    """What the scenario saw."""

    load: Workload
    data: DataLoad
    killed: str = ""
    pid: int = 0
    new_active: str = ""
    active_after_s: float | None = None  # from the kill until the other one said active
    first_ack_after_s: float | None = None  # from the kill until a write was acked there
    missing: list[str] = field(default_factory=list)  # acknowledged, not on the new active
    unexpected: list[str] = field(default_factory=list)  # on the new active, never attempted
    first_close_after_s: float | None = None  # from the kill until a file begun after it closed
    first_read_after_s: float | None = None  # from the kill until a file read back whole
    first_read_path: str = ""
    verified: int = 0  # acknowledged files read back from the new active with their sha256
    verified_bytes: int = 0
    lost: list[str] = field(default_factory=list)  # acknowledged files not read back (why)
    verify_s: float = 0.0

    @property
    def failover_s(self) -> float | None:
        """From the kill until the other NameNode is active and acknowledged a write."""
        if self.active_after_s is None or self.first_ack_after_s is None:
            return None
        return max(self.active_after_s, self.first_ack_after_s)


LOG_LINE = re.compile(
    r'^ts=(?P<ts>\S+) .*\blogger=(?P<logger>qjm\.ha\.[\w.]+) msg=(?P<msg>"(?:[^"\\]|\\.)*")\s*$'
)


class LogFollower:
    """New lines of the failover controllers' own messages (qjm.ha.*) in their logs."""

    def __init__(self, logs: dict[str, Path]) -> None:
        self.logs = logs
        self.offsets = {name: _size(path) for name, path in logs.items()}
        self.partial = {name: b"" for name in logs}

    def read(self) -> list[tuple[str, str, str]]:
        """(timestamp, daemon, message) of every complete line written since the last read."""
        out: list[tuple[str, str, str]] = []
        for name, path in self.logs.items():
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets[name])
                    data = self.partial[name] + f.read()
            except OSError:
                continue
            self.offsets[name] += len(data) - len(self.partial[name])
            *lines, self.partial[name] = data.split(b"\n")
            for raw in lines:
                m = LOG_LINE.match(raw.decode(errors="replace"))
                if m:
                    out.append((m["ts"], name, json.loads(m["msg"])))
        return sorted(out)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _since(ts: str, wall_kill: float) -> str:
    """+S.SSs: a log timestamp (ISO 8601, UTC) as seconds since the kill."""
    try:
        at = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return ts
    return f"{at - wall_kill:+.2f}s"


async def follow_logs(follower: LogFollower, console: Console, wall_kill: float) -> None:
    """Print the failover controllers' messages as they log them (until cancelled)."""
    while True:
        for ts, name, msg in await asyncio.to_thread(follower.read):
            console.line(f"     {_since(ts, wall_kill)} {name}: {msg}")
        await asyncio.sleep(0.1)  # a display refresh, not synchronization


def namenodes_of(cluster: dict[str, Any]) -> dict[str, str]:
    """name -> RPC address of the cluster's NameNodes."""
    return {n: d["rpc"] for n, d in daemons_of(cluster).items() if d["kind"] == "namenode"}


async def scenario(directory: Path, cluster: dict[str, Any], console: Console) -> Outcome:
    """Run the workload, kill -9 the active NameNode, measure the failover, verify the ops."""
    nns = namenodes_of(cluster)
    load = Workload({address: name for name, address in nns.items()})
    data = DataLoad(client_config(Path(cluster["hadoop_conf"])))
    out = Outcome(load, data)
    progress = Progress(time.monotonic(), since=time.monotonic())
    workers = [asyncio.create_task(load.worker(w)) for w in range(WORKERS)]
    writers = data.start()
    display = asyncio.create_task(show_progress(load, data, progress, console))
    zkfc_logs = {
        n: Path(d["log"]) for n, d in daemons_of(cluster).items() if d.get("kind") == "zkfc"
    }
    follow: asyncio.Task[None] | None = None
    try:
        await wait_until(
            lambda: bool(load.acked), FIRST_ACK_DEADLINE_S, "the first acknowledged op"
        )
        await wait_until(
            lambda: bool(data.acked), FIRST_ACK_DEADLINE_S, "the first acknowledged file"
        )
        await asyncio.sleep(max(0.0, progress.since + SHOW_BEFORE_S - time.monotonic()))  # show
        states = await ha_states(nns)
        active = [n for n, s in states.items() if s == "active"]
        if len(active) != 1:
            raise DemoError(f"expected one active NameNode before the kill, found {states}")
        out.killed = active[0]
        out.new_active = next(n for n in nns if n != out.killed)
        out.pid = int(read_cluster(directory)[out.killed]["pid"])  # as an operator would
        t_kill = time.monotonic()
        load.watch_for(out.new_active, t_kill)
        follower = LogFollower(zkfc_logs)
        wall_kill = time.time()
        os.kill(out.pid, signal.SIGKILL)
        follow = asyncio.create_task(follow_logs(follower, console, wall_kill))
        await gone(out.pid, out.killed)
        progress.enter("failing over", FAILOVER_DEADLINE_S)
        console.line(
            f"  >> {out.killed} killed with SIGKILL (pid {out.pid}) at "
            f"t={t_kill - progress.t0:.1f}s; {out.new_active} was {states[out.new_active]}"
        )
        before = data.acked[-1] if data.acked else None  # a file written before the kill
        await asyncio.gather(
            failover(out, nns[out.new_active], t_kill, console),
            first_close(out, t_kill, console),
            first_read(out, before, t_kill, console),
        )
        if out.failover_s is not None:
            progress.enter("after failover", SHOW_AFTER_S)
            await asyncio.sleep(SHOW_AFTER_S)  # let the workload run on the new active: a show
    finally:
        for task in (display, follow):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        console.end_bar()
        await asyncio.gather(load.stop_all(workers), data.stop_all(writers))
    if out.failover_s is not None:
        await verify(out, nns[out.new_active])
        console.line(
            f"  reading back the {len(data.acked)} acknowledged files from {out.new_active} "
            f"({data.bytes_acked / 1e6:.1f} MB) and comparing their sha256"
        )
        await verify_files(out, nns[out.new_active])
    return out


async def gone(pid: int, name: str) -> None:
    """Return once the killed process is gone (reaped when it is our child); bounded."""
    deadline = time.monotonic() + 10.0
    while True:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # noqa: ASYNC222 (WNOHANG: never blocks)
        if not pid_alive(pid):
            return
        if time.monotonic() > deadline:
            raise DemoError(f"{name} (pid {pid}) still runs 10 s after SIGKILL")
        await asyncio.sleep(0.01)


async def failover(out: Outcome, address: str, t_kill: float, console: Console) -> None:
    """Wait (bounded) for the other NameNode to be active and acknowledge a write; report."""
    deadline = t_kill + FAILOVER_DEADLINE_S

    async def active() -> None:
        at = await wait_active(address, deadline)
        if at is not None:
            out.active_after_s = at - t_kill
            console.line(f"  >> {out.new_active} is active after {out.active_after_s:.2f} s")

    async def first_ack() -> None:
        try:
            await asyncio.wait_for(out.load.watched_event.wait(), deadline - time.monotonic())
        except TimeoutError:
            return
        ack = out.load.watched
        assert ack is not None
        out.first_ack_after_s = ack.at - t_kill
        console.line(
            f"  >> first write acknowledged by {out.new_active} after "
            f"{out.first_ack_after_s:.2f} s ({ack.path})"
        )

    await asyncio.gather(active(), first_ack())


async def first_close(out: Outcome, t_kill: float, console: Console) -> None:
    """Report the first file begun after the kill whose close was acknowledged (bounded)."""
    data = out.data
    deadline = t_kill + FAILOVER_DEADLINE_S
    while time.monotonic() < deadline:
        ack = next((a for a in data.acked if a.started > t_kill), None)
        if ack is not None:
            out.first_close_after_s = ack.at - t_kill
            console.line(
                f"  >> first file written after the kill closed after "
                f"{out.first_close_after_s:.2f} s ({ack.path}, {ack.size} bytes)"
            )
            return
        await asyncio.sleep(POLL_S)


async def first_read(out: Outcome, ack: FileAck | None, t_kill: float, console: Console) -> None:
    """Read a file written before the kill until it comes back whole (bounded); report when."""
    if ack is None:
        return
    client = out.data.client()
    deadline = t_kill + FAILOVER_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            got = await asyncio.get_running_loop().run_in_executor(
                out.data.pool, read_back, client, ack.path
            )
        except Exception:  # not readable yet: no active NameNode
            got = None
        if got == (ack.size, ack.sha256):
            out.first_read_after_s = time.monotonic() - t_kill
            out.first_read_path = ack.path
            console.line(
                f"  >> first read after the kill: {ack.path} ({ack.size} bytes, written "
                f"before it) read back whole after {out.first_read_after_s:.2f} s"
            )
            return
        await asyncio.sleep(POLL_S)


async def verify_files(out: Outcome, address: str) -> None:
    """Read every acknowledged file from the NameNode at address alone; compare its sha256."""
    t0 = time.monotonic()
    # the cluster's client config: its security settings (Kerberos) with them
    client = native().Client(f"hdfs://{address}", config=out.data.config)

    def check_all() -> None:
        for ack in out.data.acked:
            if time.monotonic() - t0 > VERIFY_DEADLINE_S:
                out.lost.append(f"{ack.path}: not read (past {VERIFY_DEADLINE_S:.0f} s)")
                continue
            try:
                size, sha = read_back(client, ack.path)
            except Exception as e:  # hdfs-native raises several kinds
                out.lost.append(f"{ack.path}: {type(e).__name__}: {e}")
                continue
            if (size, sha) != (ack.size, ack.sha256):
                out.lost.append(
                    f"{ack.path}: read {size} bytes, sha256 {sha[:16]}...; acknowledged "
                    f"{ack.size} bytes, sha256 {ack.sha256[:16]}..."
                )
            else:
                out.verified += 1
                out.verified_bytes += size

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="demo-verify") as pool:
        await asyncio.get_running_loop().run_in_executor(pool, check_all)
    out.verify_s = time.monotonic() - t0


async def verify(out: Outcome, address: str) -> None:
    """Which acknowledged paths the new active lacks, and which it has that were never tried."""
    async with NameNodeClient([address]) as nn:
        present = {path async for path, _ in nn.walk(ROOT)}
    acked = {a.path for a in out.load.acked} | {a.path for a in out.data.acked}
    out.missing = sorted(acked - present)
    out.unexpected = sorted(present - out.load.attempted - out.data.attempted)


def print_cluster_status(directory: Path) -> None:
    """What `qjm cluster status` prints: the daemons (state, role, pid, URLs) and the journal."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print_status(cluster_status(directory))
    show(text.getvalue())


def log_in_as_user(cluster: dict[str, Any]) -> list[str]:
    """On a Kerberos cluster, use the user's ticket (what `kinit` gives, design §S.4) for
    this process's clients, hdfs-native's and Java's; the JVM options Java needs for it."""
    global _admin
    kdc = cluster.get("kdc")
    if not kdc:
        return []
    os.environ["KRB5_CONFIG"] = kdc["krb5_conf"]
    os.environ["KRB5CCNAME"] = f"FILE:{kdc['user_ccache']}"
    settings = load_config(Path(cluster["config"])).security
    login(settings, ccache=kdc["user_ccache"])
    _admin = client_login(settings, ccache=kdc["admin_ccache"])
    return java_kerberos_options(kdc["krb5_conf"])


def java_kerberos_options(krb5_conf: str) -> list[str]:
    """JVM options that point Java's Kerberos at the cluster's KDC."""
    return [f"-Djava.security.krb5.conf={krb5_conf}", "-Dsun.security.krb5.disableReferrals=true"]


def fsshell_count(conf: Path, ack: FileAck | None, jvm_options: list[str]) -> None:
    """`hadoop fs -count -v ROOT` with the genuine Hadoop client, and `-cat` of an
    acknowledged file compared with its sha256, when Java is installed."""
    java = shutil.which("java")
    if not java:
        print("  (no java on PATH: the genuine Hadoop client is skipped)")
        return
    say(f"the genuine Hadoop client: hadoop fs -count -v {ROOT} (HADOOP_CONF_DIR={_shown(conf)})")
    try:
        r = subprocess.run(
            fsshell_argv(conf, "-count", "-v", ROOT, java=java, jvm_options=jvm_options),
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        print("  hadoop fs -count took over 120 s; skipped")
        return
    show(r.stdout + (r.stderr if r.returncode else ""))
    if ack is None:
        return
    say(f"the genuine Hadoop client reads a file back: hadoop fs -cat {ack.path} | sha256sum")
    try:
        cat = subprocess.run(
            fsshell_argv(conf, "-cat", ack.path, java=java, jvm_options=jvm_options),
            capture_output=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        print("  hadoop fs -cat took over 120 s; skipped")
        return
    if cat.returncode:
        show(cat.stderr.decode(errors="replace"))
        return
    sha = hashlib.sha256(cat.stdout).hexdigest()
    same = "the same as" if sha == ack.sha256 else "NOT the same as"
    print(f"  {len(cat.stdout)} bytes, sha256 {sha}: {same} what was written")


def report(out: Outcome) -> int:
    """Print the failover and the verification; 0 when both are good, else 1."""
    load = out.load
    if out.failover_s is None:
        print(
            f"  NO FAILOVER within {FAILOVER_DEADLINE_S:.0f} s of killing {out.killed}: "
            f"{out.new_active} active: {_secs(out.active_after_s)}, "
            f"a write acknowledged there: {_secs(out.first_ack_after_s)}"
        )
        return 1
    print(
        f"  failover time: {out.failover_s:.2f} s (from the kill of {out.killed} until "
        f"{out.new_active} reported active: {out.active_after_s:.2f} s; until the first "
        f"write acknowledged there: {out.first_ack_after_s:.2f} s)"
    )
    print(
        f"  {len(load.acked)} ops acknowledged; {len(load.errors)} answered with an error "
        "(not acknowledged: each may or may not have happened)"
    )
    print(f"  acknowledged but missing on {out.new_active}: {len(out.missing)}")
    print(f"  on {out.new_active} but never attempted: {len(out.unexpected)}")
    for path in (out.missing + out.unexpected)[:10]:
        print(f"    {path}")
    data = out.data
    blocks = sum(blocks_of(a.size) for a in data.acked)
    print(
        f"  files: {len(data.acked)} acknowledged ({data.bytes_acked} bytes in {blocks} "
        f"blocks of at most {BLOCK_SIZE >> 20} MiB, by {WRITERS} writers); {len(data.errors)} "
        "answered with an error (not acknowledged)"
    )
    print(
        f"  files verified byte for byte (sha256) on {out.new_active}: {out.verified} of "
        f"{len(data.acked)} ({out.verified_bytes} bytes, read in {out.verify_s:.1f} s); "
        f"lost: {len(out.lost)}"
    )
    for line in out.lost[:10]:
        print(f"    {line}")
    for line in data.errors[:3]:
        print(f"    not acknowledged: {line[:200]}")
    print(
        f"  first read after the failover: {_secs(out.first_read_after_s)} from the kill"
        + (f" ({out.first_read_path}, written before it)" if out.first_read_path else "")
        + f"; first file written after it closed: {_secs(out.first_close_after_s)}"
    )
    good = not out.missing and not out.unexpected and not out.lost
    good = good and out.verified == len(data.acked) > 0 and out.first_read_after_s is not None
    return 0 if good else 1


def show_logs(cluster: dict[str, Any], kinds: tuple[str, ...]) -> None:
    """The last lines of the logs of the daemons of these kinds (when something went wrong)."""
    for name, d in daemons_of(cluster).items():
        if d.get("kind") in kinds and d.get("log"):
            print(f"  the end of {name}'s log {_shown(Path(d['log']))}:")
            show(tail(Path(d["log"]), 8))


def _secs(value: float | None) -> str:
    return "no" if value is None else f"after {value:.2f} s"


def print_next_steps(
    directory: Path, cluster: dict[str, Any], out: Outcome | None, once: bool
) -> None:
    """Where the status pages are, and how to look at, restart and stop the daemons."""
    qjm = qjm_exe()
    d = _shown(directory)
    say("while it runs" + (" (with --once it stops now)" if once else ""))
    rows: list[tuple[str, str]] = []
    nns = {n: e for n, e in daemons_of(cluster).items() if e["kind"] == "namenode"}
    kdc = cluster.get("kdc")

    def url(e: dict[str, Any], path: str = "") -> str:
        # SPNEGO: a browser or curl asks for a ticket to HTTP/localhost, every port's principal
        host = e["http"].replace("127.0.0.1", "localhost") if kdc else e["http"]
        return f"{e.get('scheme') or 'http'}://{host}/{path}"

    curl = "curl --negotiate -u : " if kdc else "curl "
    if tls_info := cluster.get("tls"):  # HTTPS: trust the cluster's own CA (design §S.13)
        curl += f"--cacert {_shown(Path(tls_info['ca']))} "
    for name, e in nns.items():
        note = " (killed)" if out is not None and name == out.killed else ""
        rows.append((f"status page of {name}", f"{url(e)}{note}"))
    live = next((e for n, e in nns.items() if out is None or n != out.killed), None)
    if live is not None:
        rows.append(("status JSON", f"{curl}{url(live, 'status')}"))
        rows.append(("metrics", f"{curl}{url(live, 'metrics')}"))
    for name, e in daemons_of(cluster).items():
        if e["kind"] == "datanode":
            rows.append((f"status page of {name}", url(e)))
    if kdc:
        rows.append(
            ("your ticket (Kerberos)", f"export KRB5_CONFIG={_shown(Path(kdc['krb5_conf']))}")
        )
        rows.append(("", f"export KRB5CCNAME=FILE:{_shown(Path(kdc['user_ccache']))}"))
    rows.append(("daemons and journal", f"{qjm} cluster status --dir {d}"))
    # HDFS answers HA states to the superuser only: the NameNodes' principal's ticket
    admin = f"KRB5CCNAME=FILE:{_shown(Path(kdc['admin_ccache']))} " if kdc else ""
    haadmin = f"{admin}{qjm} haadmin --config {d}/cluster.toml -getAllServiceState"
    rows.append(("HA states", haadmin))
    rows.append(("the namespace", f"{qjm} dfs --config {d}/cluster.toml ls -R {ROOT}"))
    if out is not None and out.data.acked:
        jvm = java_kerberos_options(_shown(Path(kdc["krb5_conf"]))) if kdc else []
        argv = fsshell_argv(
            Path(d) / "hadoop-conf", "-cat", out.data.acked[0].path, jvm_options=jvm
        )
        rows.append(("a file, genuine client", " ".join(argv) + " | sha256sum"))
    if out is not None and out.killed:
        k = out.killed
        rows.append(
            (
                f"restart {k}",
                f"{qjm} cluster start --dir {d} {k}",
            )
        )
        rows.append(("", f"(it rejoins as standby: its ZKFC zkfc{k[2:]} is still running)"))
    rows.append(("stop it", f"{qjm} cluster down --dir {d}"))
    width = max(len(label) for label, _ in rows) + 1
    for label, value in rows:
        print(f"  {(label + ':') if label else '':<{width}}  {value}")


def _shown(directory: Path) -> str:
    try:
        return str(directory.relative_to(Path.cwd()))
    except ValueError:
        return str(directory)


def watch_restart(directory: Path, name: str, old_pid: int) -> int | None:
    """The pid of name once it was started again (`qjm cluster start` records it in
    cluster.json); None while it is not back."""
    try:
        pid = read_cluster(directory).get(name, {}).get("pid")
    except LaunchError:
        return None
    if not isinstance(pid, int) or pid == old_pid or not pid_alive(pid):
        return None
    return pid


def stay_up(directory: Path, cluster: dict[str, Any], out: Outcome | None) -> None:
    """Wait for Ctrl-C, telling when the killed NameNode is back and in which state."""
    print("\n  Ctrl-C stops the cluster.", flush=True)
    back: int | None = None
    while True:
        time.sleep(1.0)  # a watch for the operator, not synchronization
        if out is None or not out.killed or back is not None:
            continue
        back = watch_restart(directory, out.killed, out.pid)
        if back is not None:
            state = runtime.run(ha_state(cluster[out.killed]["rpc"]))
            print(f"  >> {out.killed} is back (pid {back}), {state}", flush=True)


def fresh(directory: Path) -> None:
    """Stop a previous demo cluster in directory and remove its data."""
    if (directory / CLUSTER_JSON).exists():
        say(f"stopping the previous demo cluster in {directory}")
        cluster_down(directory)
    for sub in DEMO_SUBDIRS:
        shutil.rmtree(directory / sub, ignore_errors=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(
    directory: Path, base_port: int | None = None, once: bool = False, insecure: bool = False
) -> int:
    """Start the cluster (Kerberos unless insecure), run the scenario, show the result; stay
    up until Ctrl-C unless once."""
    # Ctrl-C, `kill` of the demo and its terminal closing all stop the cluster (SIGINT too when
    # the demo was started where it is ignored, as in the background of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGHUP, _interrupt)
    code = 130  # interrupted before the scenario ended
    cluster: dict[str, Any] | None = None
    try:
        fresh(directory)
        say(f"qjm cluster up --dir {_shown(directory)}" + (" --insecure" if insecure else ""))
        print(
            ("" if insecure else "  (a KDC, a principal and keytab per daemon and one for you; ")
            + "ZooKeeper; 3 JournalNodes; nn1 formatted, nn2 bootstrapped from it; a ZKFC "
            "for each;\n   the ZKFCs elect the active NameNode through ZooKeeper; "
            f"{DEFAULT_DATANODES} DataNodes report to both NameNodes)",
            flush=True,
        )
        cluster = cluster_up(
            directory,
            journalnodes=3,
            namenodes=2,
            zookeeper=True,
            base_port=base_port,
            datanodes=DEFAULT_DATANODES,
            kerberos=not insecure,
            https=not insecure,  # secure by default: HTTPS_ONLY too (design §S.13)
        )
        jvm_options = log_in_as_user(cluster)
        if kdc := cluster.get("kdc"):
            print(
                f"  Kerberos: realm {kdc['realm']}; every RPC encrypted, every HTTP port behind "
                f"SPNEGO; the clients below use your ticket ({kdc['user_principal']})"
            )
        print(
            f"  config: {_shown(Path(cluster['config']))}; HDFS client config "
            f"(HADOOP_CONF_DIR): {_shown(Path(cluster['hadoop_conf']))}"
        )
        say(f"qjm cluster status --dir {_shown(directory)}")
        print_cluster_status(directory)

        say(f"a workload: {WORKERS} HA clients making directories and files under {ROOT}")
        print(
            f"  and {WRITERS} hdfs-native writers putting files of "
            f"{FILE_SIZES[0] // 1000} KB to {FILE_SIZES[1] // 1_000_000} MB in "
            f"{BLOCK_SIZE >> 20} MiB blocks under {FILES}"
        )
        print("  (each client is given both NameNodes and finds the active one itself;")
        print(f"   after {SHOW_BEFORE_S:.0f} s the active NameNode is killed with kill -9)")
        out: Outcome | None = None
        try:
            out = runtime.run(scenario(directory, cluster, Console()))
        except DemoError as e:
            print(f"  demo: {e}", file=sys.stderr)
            code = 1
        if out is not None:
            say("the failover")
            code = report(out)
            if out.failover_s is None:
                show_logs(cluster, ("zkfc", "namenode"))
            say(f"qjm cluster status --dir {_shown(directory)}")
            print_cluster_status(directory)
        first = out.data.acked[0] if out is not None and out.data.acked else None
        fsshell_count(Path(cluster["hadoop_conf"]), first, jvm_options)
        print_next_steps(directory, cluster, out, once)
        if not once:
            stay_up(directory, cluster, out)
    except KeyboardInterrupt:
        print("\n== interrupted: stopping the cluster", flush=True)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the cluster is stopped whole
        if cluster is not None:
            stopped = cluster_down(directory)
            say(f"stopped {', '.join(stopped) if stopped else 'nothing (no daemon was running)'}")
    return code


def main() -> int:
    """Entry point of `python -m qjm.cli.demo`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=Path("demo"), help="cluster directory (demo)")
    parser.add_argument("--base-port", type=int, help="ports from this one (default: HDFS's)")
    parser.add_argument(
        "--once", action="store_true", help="stop the cluster after the scenario and exit"
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="an open cluster (no KDC; any caller is the user it claims); Kerberos otherwise",
    )
    args = parser.parse_args()
    try:
        return run(args.dir.resolve(), args.base_port, args.once, args.insecure)
    except QjmError as e:
        print(f"demo: error: {e}", file=sys.stderr)
        if "--base-port" in str(e):
            print('  (with make: make demo ARGS="--base-port P")', file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
