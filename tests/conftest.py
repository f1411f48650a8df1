"""Shared fixtures: fixture paths, real JournalNode processes, disk snapshots."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from inmem_cluster import formatted_cluster
from ports import free_address
from qjm.cluster.process import Daemon, spawn, stop_pid, wait_ready
from qjm.cluster.zookeeper import start_zookeeper
from qjm.journalnode.journal import Journal
from qjm.testing.in_memory import InMemoryCluster

# Real HDFS files from Apache Hadoop (Apache-2.0, see fixtures/hadoop/NOTICE), in the tree.
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hadoop"

# The daemons a test spawns run this tree's code, as the test process does (pytest's
# `pythonpath` setting puts src/ first here; a child process learns it from PYTHONPATH).
_SRC = str(Path(__file__).resolve().parent.parent / "src")
if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != _SRC:
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_SRC, os.environ.get("PYTHONPATH")) if p)


@pytest.fixture
def fixtures_dir() -> Path:
    """The folder of real HDFS files (part of the tree: a missing one is a failure)."""
    assert (FIXTURES / "editsStored").is_file(), f"HDFS fixtures missing from {FIXTURES}"
    return FIXTURES


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root with a digest of its contents (lock files excluded)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "in_use.lock":
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[str(path.relative_to(root)) + "/"] = "dir"
    return out


def run_qjm(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the qjm command in a subprocess and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "qjm", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@dataclass
class JNProcess:
    """A JournalNode running as a real process."""

    name: str
    edits_dir: Path
    daemon: Daemon
    rpc: str
    http: str
    log: Path
    extra: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        """Its pid."""
        return self.daemon.pid


class JNFactory:
    """Starts JournalNode processes on free loopback ports and stops them at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.running: list[JNProcess] = []

    def start(
        self, name: str, rpc: str | None = None, http: str | None = None, *extra: str
    ) -> JNProcess:
        """Start (or restart on the same ports) the JournalNode called name."""
        rpc = rpc or free_address()
        http = http or free_address()
        edits = self.root / name
        log = self.root / "logs" / f"{name}.log"
        daemon = spawn(
            name,
            [
                "journalnode",
                "--edits-dir",
                str(edits),
                "--rpc-address",
                rpc,
                "--http-address",
                http,
                *extra,
            ],
            log,
            self.root / "run" / f"{name}.ready",
        )
        info = wait_ready([daemon])[name]
        jn = JNProcess(name, edits, daemon, info["rpc"], info["http"], log, list(extra))
        self.running.append(jn)
        return jn

    def stop(self, jn: JNProcess) -> None:
        """SIGTERM and reap."""
        stop_pid(jn.pid)
        jn.daemon.process.wait(timeout=10)
        self.running.remove(jn)

    def restart(self, jn: JNProcess) -> JNProcess:
        """Stop and start again on the same ports and storage."""
        self.stop(jn)
        return self.start(jn.name, jn.rpc, jn.http, *jn.extra)

    def close(self) -> None:
        """Stop everything still running."""
        for jn in list(self.running):
            self.stop(jn)


@pytest.fixture
def jn_factory(tmp_path: Path) -> Iterator[JNFactory]:
    """A factory of real JournalNode processes, all stopped after the test."""
    factory = JNFactory(tmp_path)
    try:
        yield factory
    finally:
        factory.close()


def read_json(text: str) -> dict[str, object]:
    """Parse JSON output with a readable failure."""
    try:
        data: dict[str, object] = json.loads(text)
    except json.JSONDecodeError as e:  # pragma: no cover - shows the output on failure
        raise AssertionError(f"not JSON: {e}\n{text}") from None
    return data


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    """A formatted in-process journal (test_journal's NS) on tmp_path/test."""
    from test_journal import NS, open_journal

    j = open_journal(tmp_path)
    j.format(NS, force=False)
    yield j
    j.close()


@pytest.fixture(scope="module")
def zookeeper() -> Iterator[str]:
    """A standalone ZooKeeper (Debian's server) shared by a module's tests; yields host:port."""
    with tempfile.TemporaryDirectory(prefix="qjm-test-zk-") as tmp:
        ensemble = start_zookeeper(Path(tmp))
        try:
            yield ensemble.connect_string
        finally:
            ensemble.stop()


@pytest.fixture
async def mem_cluster(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    """Three JournalNodes in this process (no sockets), journal inmem_cluster.JID formatted."""
    async with formatted_cluster(tmp_path) as cluster:
        yield cluster


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long modules first, so that with `--dist loadfile` they start at once instead of
    trailing behind the quick ones: modules marked slow as a whole (one real cluster each),
    then modules by how many slow test functions they hold; the order within a module is
    kept."""

    def whole_module_slow(item: pytest.Item) -> bool:
        marks = getattr(getattr(item, "module", None), "pytestmark", [])
        marks = marks if isinstance(marks, list) else [marks]
        return any(getattr(m, "name", "") == "slow" for m in marks)

    def module_of(item: pytest.Item) -> str:
        return item.nodeid.split("::")[0]

    slow_functions: dict[str, set[str]] = {}
    for item in items:
        if item.get_closest_marker("slow"):
            name = getattr(item, "originalname", item.name)
            slow_functions.setdefault(module_of(item), set()).add(name)
    items.sort(
        key=lambda item: (
            not whole_module_slow(item),
            -len(slow_functions.get(module_of(item), ())),
        )
    )


@pytest.fixture(scope="module")
def fs(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The genuine FsShell for a module's commands against its cluster (an HACluster), in one
    JVM, each command with a fresh client."""
    from hadoop_clients import FsShellSession

    session = FsShellSession(cluster.conf, tmp_path_factory.getbasetemp())
    try:
        yield session
    finally:
        session.close()
