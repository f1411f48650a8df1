"""Automatic failover under faults, with real ZooKeeper, JournalNodes, NameNodes and ZKFCs.

One cluster for the module (ZooKeeper, 3 JournalNodes, 2 NameNodes, their 2 ZKFCs, short
session and health timeouts) and, all along, a Recorder:

* a workload of HA clients given both NameNodes (never told which one is active), each
  acknowledgement recorded with the NameNode that gave it and when the call was sent and
  answered;
* a sampler that every SAMPLE_S sends, at the same instant, a direct mkdirs to each NameNode
  (no failover: it asks that NameNode whether it accepts a write) and asks each its HA state.

The faults, one test each: SIGSTOP of the active NameNode (then SIGCONT: it must wake fenced),
kill -9 of the active's ZKFC, a ZooKeeper restart (no failover), `qjm haadmin -failover`
(graceful), kill -9 of the active NameNode. Each test waits (with deadlines) for the outcome,
then checks its phase: every acknowledged op is on the final active; no sampled instant had
two NameNodes accepting a write; acknowledgements never interleave across the failover (once
the new active acknowledged a write, the old one never acknowledges a write sent after that);
and the genuine Hadoop FsShell, given only DIR/hadoop-conf, works after the failover. The last
test checks the whole recording, gaps between the phases included.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import run_qjm
from ha_cluster import auto_cluster, ha_states
from hadoop_clients import check, hadoop_fs
from qjm.cluster.process import pid_alive, spawn, stop_pid, wait_ready
from qjm.config import load_config
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient, RemoteError
from qjm.namenode import protocols
from qjm.namenode.client import DEFAULT_UMASK, HAAdminClient, NameNodeClient
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SESSION_TIMEOUT_MS = 4000
HEALTH_RPC_TIMEOUT_MS = 2000
SAMPLE_S = 0.03  # the sampler's period
MAX_OUTSTANDING = 40  # direct writes waiting for one NameNode's answer (a stopped one)
PROBE_TIMEOUT_S = 90.0  # a direct write waits this long for its answer
FAILOVER_DEADLINE_S = 60.0  # generous: a 2-core machine shared with other test runs
WORKERS = 2
WORKLOAD_PAUSE_S = 0.01  # between one worker's calls
NAMENODES = ("nn1", "nn2")
STANDBY = "org.apache.hadoop.ipc.StandbyException"

T = TypeVar("T")


@dataclass(frozen=True)
class Ack:
    """An acknowledged write: its path, the NameNode that acknowledged it, when (monotonic)
    the call was made and answered, and (for the sampler's writes) its round. An HA client
    may have retried the call on the other NameNode: the attempt that was acknowledged was
    sent at or after `sent`."""

    path: str
    nn: str
    sent: float
    answered: float
    round: int = -1


@dataclass(frozen=True)
class Answer:
    """A sampled HA state: round, NameNode, state ('?' when it did not answer), times."""

    round: int
    nn: str
    state: str
    sent: float
    answered: float


@dataclass
class Phase:
    """A stretch of the run with one expected change of active (old == new: none)."""

    name: str
    old: str
    new: str
    start: float
    end: float = float("inf")
    strict_states: bool = True  # never two NameNodes saying active at one sampled instant


def mkdirs_request(path: str) -> cn.MkdirsRequestProto:
    """mkdirs path (its parent must exist), 0755."""
    return cn.MkdirsRequestProto(
        src=path,
        masked=hdfs.FsPermissionProto(perm=0o777 & ~DEFAULT_UMASK),
        createParent=False,
        unmasked=hdfs.FsPermissionProto(perm=0o777),
    )


class Recorder:
    """The workload and the sampler (see the module doc), on an event loop in a thread."""

    def __init__(self, rpc: dict[str, str]) -> None:
        self.rpc = rpc
        self.name_of = {a: n for n, a in rpc.items()}
        self.acks: list[Ack] = []
        self.refused: list[tuple[str, str, float, str]] = []  # path, nn, sent, exception class
        self.unknown: list[str] = []  # sent, no answer (timed out, connection lost)
        self.states: list[Answer] = []
        self.outstanding = dict.fromkeys(rpc, 0)
        self.phases: list[Phase] = []  # the phases checked, in order
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.stopping = False
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._main: Future[None] | None = None
        self._direct: dict[str, IpcClient] = {}
        self._admin: dict[str, HAAdminClient] = {}
        self._state_busy = dict.fromkeys(rpc, False)

    # ---- life cycle

    def start(self) -> Recorder:
        """Make the directories, start the workers and the sampler."""
        self.thread.start()
        self.run(self._setup(), 60)
        self._main = asyncio.run_coroutine_threadsafe(self._all(), self.loop)
        return self

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run coro on the recorder's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Start coro on the recorder's loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        """Stop the workers and the sampler (each ends after its call in flight)."""
        self.stopping = True
        if self._main is not None:
            with contextlib.suppress(Exception):
                self._main.result(120)
        with contextlib.suppress(Exception):
            self.run(self._close(), 30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)

    async def _close(self) -> None:
        for c in [*self._direct.values(), *self._admin.values()]:
            with contextlib.suppress(Exception):
                await c.close()

    async def _setup(self) -> None:
        async with NameNodeClient(list(self.rpc.values()), timeout=10, max_rounds=30) as c:
            for nn in self.rpc:
                await c.mkdirs(f"/probe/{nn}")
            for w in range(WORKERS):
                await c.mkdirs(f"/load/w{w}")
            await c.mkdirs("/fenced")

    async def _all(self) -> None:
        tasks = [asyncio.ensure_future(self._worker(w)) for w in range(WORKERS)]
        tasks.append(asyncio.ensure_future(self._sampler()))
        await asyncio.gather(*tasks)

    # ---- the workload

    async def _worker(self, w: int) -> None:
        addresses = list(self.rpc.values())
        async with NameNodeClient(
            addresses, timeout=5, max_rounds=40, backoff_s=0.05, max_backoff_s=0.5
        ) as client:
            n = 0
            while not self.stopping:
                n += 1
                path = f"/load/w{w}/d{n:06d}"
                sent = time.monotonic()
                try:
                    await client.mkdirs(path, create_parent=False)
                except Exception:
                    with self.lock:
                        self.unknown.append(path)
                    continue
                ack = Ack(path, self.name_of[client.current], sent, time.monotonic())
                with self.lock:
                    self.acks.append(ack)
                await asyncio.sleep(WORKLOAD_PAUSE_S)  # pacing: leave the CPUs to the daemons

    # ---- the sampler

    def _client(self, nn: str) -> IpcClient:
        c = self._direct.get(nn)
        if c is None:
            c = self._direct[nn] = IpcClient(
                self.rpc[nn], protocols.CLIENT_PROTOCOL, connect_timeout_s=1.0, reconnect_attempts=1
            )
        return c

    async def direct_mkdirs(self, nn: str, path: str, round_no: int = -1) -> str:
        """mkdirs path on nn alone: '' when acknowledged (recorded), else what was answered."""
        spec = protocols.CLIENT_METHODS["mkdirs"]
        sent = time.monotonic()
        try:
            await self._client(nn).call(
                "mkdirs", mkdirs_request(path), spec.response, timeout=PROBE_TIMEOUT_S
            )
        except RemoteError as e:
            with self.lock:
                self.refused.append((path, nn, sent, e.class_name))
            return e.class_name
        except Exception as e:
            with self.lock:
                self.unknown.append(path)
            return f"no answer: {type(e).__name__}: {e}"
        with self.lock:
            self.acks.append(Ack(path, nn, sent, time.monotonic(), round_no))
        return ""

    async def _probe(self, nn: str, round_no: int) -> None:
        self.outstanding[nn] += 1
        try:
            await self.direct_mkdirs(nn, f"/probe/{nn}/r{round_no:06d}", round_no)
        finally:
            self.outstanding[nn] -= 1

    async def _state(self, nn: str, round_no: int) -> None:
        self._state_busy[nn] = True
        sent = time.monotonic()
        try:
            admin = self._admin.get(nn)
            if admin is None:
                admin = self._admin[nn] = HAAdminClient(self.rpc[nn], timeout=1.0)
            state = (await admin.get_service_state()).name.lower()
        except Exception:
            state = "?"
            with contextlib.suppress(Exception):
                await self._admin.pop(nn).close()
        finally:
            self._state_busy[nn] = False
        with self.lock:
            self.states.append(Answer(round_no, nn, state, sent, time.monotonic()))

    async def _sampler(self) -> None:
        pending: set[asyncio.Future[None]] = set()
        round_no = 0
        while not self.stopping:
            for nn in self.rpc:
                if self.outstanding[nn] < MAX_OUTSTANDING:
                    pending.add(asyncio.ensure_future(self._probe(nn, round_no)))
                if not self._state_busy[nn]:
                    pending.add(asyncio.ensure_future(self._state(nn, round_no)))
            pending = {t for t in pending if not t.done()}
            round_no += 1
            await asyncio.sleep(SAMPLE_S)  # the sampling period
        if pending:
            await asyncio.wait(pending, timeout=PROBE_TIMEOUT_S + 5)

    # ---- queries (from the test's thread)

    def acks_by(self, nn: str, since: float = 0.0) -> list[Ack]:
        """Acknowledgements by nn of writes sent at or after since."""
        with self.lock:
            return [a for a in self.acks if a.nn == nn and a.sent >= since]

    def wait_acks(self, nn: str, more: int = 10, timeout: float = FAILOVER_DEADLINE_S) -> None:
        """Wait until nn acknowledged `more` further writes of the workload and the sampler."""
        now = time.monotonic()
        wait_until(
            f"{more} more writes acknowledged by {nn}",
            lambda: len(self.acks_by(nn, now)) >= more,
            timeout,
        )

    def acked_paths(self) -> set[str]:
        """Every acknowledged path so far."""
        with self.lock:
            return {a.path for a in self.acks}

    def check_phase(self, phase: Phase, *, strict_states: bool) -> None:
        """The no-split-brain checks of one phase (see the module doc)."""
        phase.strict_states = strict_states
        self.phases.append(phase)
        with self.lock:
            acks = [a for a in self.acks if phase.start <= a.sent < phase.end]
            states = [s for s in self.states if phase.start <= s.sent < phase.end]
        assert acks, f"{phase.name}: no write acknowledged at all"
        rounds = {s.round for s in states}
        wanted = (min(phase.end, time.monotonic()) - phase.start) / 1.0
        assert len(rounds) >= wanted, f"{phase.name}: only {len(rounds)} sampled instants"
        # at every sampled instant, at most one NameNode accepted the direct write
        by_round: dict[int, list[Ack]] = {}
        for a in acks:
            if a.round >= 0:
                by_round.setdefault(a.round, []).append(a)
        both = [r for r, got in by_round.items() if len(got) > 1]
        assert not both, f"{phase.name}: both NameNodes accepted a write in rounds {both[:5]}"
        olds = [a for a in acks if a.nn == phase.old]
        news = [a for a in acks if a.nn == phase.new]
        if phase.old == phase.new:
            others = [a for a in acks if a.nn != phase.old and a.answered < phase.end]
            assert not others, f"{phase.name}: no failover expected, but {others[:3]}"
        elif news and olds:
            first_new = min(news, key=lambda a: a.answered)
            late = [a for a in olds if a.sent >= first_new.answered]
            assert not late, (
                f"{phase.name}: {phase.old} acknowledged writes sent after {phase.new} "
                f"acknowledged {first_new}: {late[:3]}"
            )
        assert news, f"{phase.name}: {phase.new} acknowledged nothing"
        if strict_states:
            actives: dict[int, list[Answer]] = {}
            for s in states:
                if s.state == "active":
                    actives.setdefault(s.round, []).append(s)
            two = [r for r, got in actives.items() if len({s.nn for s in got}) > 1]
            assert not two, f"{phase.name}: both NameNodes said active in rounds {two[:5]}"
            new_active = [s for s in states if s.nn == phase.new and s.state == "active"]
            if phase.old != phase.new and new_active:
                first = min(s.answered for s in new_active)
                late_states = [
                    s
                    for s in states
                    if s.nn == phase.old and s.state == "active" and s.sent > first
                ]
                assert not late_states, (
                    f"{phase.name}: {phase.old} said active after {phase.new} did: "
                    f"{late_states[:3]}"
                )

    def check_whole_run(self) -> None:
        """The checks over everything recorded: no sampled instant with two NameNodes
        accepting a write or (outside lax phases) saying active; between the phases checked,
        only the expected active acknowledged writes."""
        assert self.phases, "no phase was checked"
        with self.lock:
            acks, states = list(self.acks), list(self.states)
        by_round: dict[int, set[str]] = {}
        for a in acks:
            if a.round >= 0:
                by_round.setdefault(a.round, set()).add(a.nn)
        both = sorted(r for r, nns in by_round.items() if len(nns) > 1)
        assert not both, f"both NameNodes accepted a write at sampled instants {both[:5]}"
        lax = [(p.start, p.end) for p in self.phases if not p.strict_states]
        actives: dict[int, set[str]] = {}
        for s in states:
            if s.state == "active" and not any(a <= s.sent < b for a, b in lax):
                actives.setdefault(s.round, set()).add(s.nn)
        two = sorted(r for r, nns in actives.items() if len(nns) > 1)
        assert not two, f"both NameNodes said active at sampled instants {two[:5]}"
        gaps = [(0.0, self.phases[0].start, self.phases[0].old)]
        # (a gap where the active changed is a test that failed before its checks)
        gaps += [
            (p.end, q.start, p.new) for p, q in itertools.pairwise(self.phases) if p.new == q.old
        ]
        gaps.append((self.phases[-1].end, float("inf"), self.phases[-1].new))
        for start, end, active in gaps:
            # an HA client's call sent in a gap may be answered, after a retry, by the next
            # active
            stray = [a for a in acks if start <= a.sent and a.answered < end and a.nn != active]
            assert not stray, f"acknowledged by another NameNode than {active}: {stray[:3]}"
        print(f"{len(acks)} writes acknowledged, {len(by_round)} sampled instants")


# ---------------------------------------------------------------- the cluster


class AutoCluster:
    """The module's cluster: cluster.json's contents and what the tests do to its daemons."""

    def __init__(self, directory: Path, info: dict[str, Any]) -> None:
        self.dir = directory
        self.info = info
        self.toml = Path(info["config"])
        self.conf = Path(info["hadoop_conf"])
        self.rpc = {nn: str(info[nn]["rpc"]) for nn in NAMENODES}
        self.fsshell_made: list[str] = []  # directories the FsShell made, in order

    def state(self, nn: str, timeout: float = 2.0) -> str:
        """nn's HA state (active, standby, ...) or '?' when it does not answer in time."""

        async def ask() -> str:
            async with HAAdminClient(self.rpc[nn], timeout=timeout) as c:
                return (await c.get_service_state()).name.lower()

        try:
            return asyncio.run(ask())
        except Exception:
            return "?"

    def states(self) -> dict[str, str]:
        """Both NameNodes' HA states ("down" when one does not answer)."""
        return ha_states(self.info, timeout=2.0)

    def wait_state(self, nn: str, want: str, timeout: float = FAILOVER_DEADLINE_S) -> float:
        """Wait until nn says it is `want`; the time it took."""
        t0 = time.monotonic()
        wait_until(f"{nn} {want}", lambda: self.state(nn) == want, timeout)
        return time.monotonic() - t0

    def single_active(self, timeout: float = FAILOVER_DEADLINE_S) -> str:
        """The one active NameNode, once exactly one is active and the other standby."""

        def one() -> str:
            s = self.states()
            if sorted(s.values()) == ["active", "standby"]:
                return next(nn for nn, st in s.items() if st == "active")
            return ""

        return wait_until("one active NameNode and one standby", one, timeout)

    def pid(self, name: str) -> int:
        """The pid of a daemon of cluster.json."""
        return int(self.info[name]["pid"])

    def zkfc_of(self, nn: str) -> str:
        """The cluster.json name of nn's ZKFC."""
        return next(
            k
            for k, v in self.info.items()
            if isinstance(v, dict) and v.get("kind") == "zkfc" and v.get("namenode") == nn
        )

    def kill9(self, name: str) -> None:
        """SIGKILL a daemon and wait until it is gone."""
        pid = self.pid(name)
        os.kill(pid, signal.SIGKILL)
        wait_until(f"{name} (pid {pid}) gone", lambda: not pid_alive(pid), 30)

    def save(self) -> None:
        """Write the pids back to cluster.json (so cluster_down stops what runs now)."""
        path = self.dir / "cluster.json"
        on_disk = json.loads(path.read_text())
        for name, entry in self.info.items():
            if isinstance(entry, dict) and "pid" in entry and name in on_disk:
                on_disk[name]["pid"] = entry["pid"]
        path.write_text(json.dumps(on_disk, indent=2) + "\n")

    def restart(self, name: str, argv: list[str]) -> None:
        """Start the daemon called name again with `qjm <argv>` (it must not be running)."""
        d = spawn(
            name,
            [*argv, "--config", str(self.toml)],
            self.dir / "logs" / f"{name}.log",
            self.dir / "run" / f"{name}.ready",
        )
        wait_ready([d], timeout=60)
        self.info[name]["pid"] = d.pid
        self.save()

    def restart_zkfc(self, nn: str) -> None:
        """Start nn's ZKFC again (it must not be running)."""
        self.restart(self.zkfc_of(nn), ["zkfc", "--id", nn])

    def ensure_running(self) -> None:
        """Start again every NameNode and ZKFC an earlier test left stopped."""
        for nn in NAMENODES:
            if not pid_alive(self.pid(nn)):
                self.restart(nn, ["namenode", "--id", nn])
        for nn in NAMENODES:
            if not pid_alive(self.pid(self.zkfc_of(nn))):
                self.restart_zkfc(nn)

    def fsshell_works(self, tag: str, active: str, *, ls: bool = False) -> None:
        """The genuine FsShell, given only hadoop-conf, makes /fsshell/<tag> (on the active);
        with ls it then lists /fsshell: every directory it made, after each failover, is
        there (a JVM start each: the suite's time)."""
        check(hadoop_fs(self.conf, "-mkdir", "-p", f"/fsshell/{tag}"))
        self.fsshell_made.append(f"/fsshell/{tag}")
        assert f"/fsshell/{tag}" in self.namespace_paths(active, ["/fsshell"])
        if not ls:
            return
        out = check(hadoop_fs(self.conf, "-ls", "/fsshell"))
        listed = {line.split()[-1] for line in out.splitlines() if line.startswith("d")}
        assert set(self.fsshell_made) <= listed, out

    def namespace_paths(self, nn: str, dirs: list[str]) -> set[str]:
        """Every path in dirs (one level) as nn alone answers."""

        async def walk() -> set[str]:
            async with NameNodeClient([self.rpc[nn]], timeout=60, max_rounds=1) as c:
                out: set[str] = set()
                for d in dirs:
                    for st in await c.listing(d) or []:
                        out.add(f"{d}/{st.name}")
                return out

        return asyncio.run(walk())

    def journal_bytes(self) -> list[bytes]:
        """Every JournalNode's edit files, concatenated (one blob per JournalNode)."""
        cfg = load_config(self.toml)
        blobs = []
        for jn in cfg.journalnodes.values():
            files = sorted(p for p in Path(jn.edits_dir).rglob("edits_*") if p.is_file())
            assert files, f"no edit files under {jn.edits_dir}"
            blobs.append(b"".join(p.read_bytes() for p in files))
        return blobs


def assert_all_acked_on(cluster: AutoCluster, rec: Recorder, nn: str) -> None:
    """Every write acknowledged so far is in nn's namespace."""
    acked = rec.acked_paths()
    dirs = [*(f"/probe/{n}" for n in NAMENODES), *(f"/load/w{w}" for w in range(WORKERS))]
    dirs.append("/fenced")
    present = cluster.namespace_paths(nn, dirs)
    missing = acked - present
    assert not missing, f"acknowledged but not on {nn}: {sorted(missing)[:10]}"


def other(nn: str) -> str:
    """The other NameNode."""
    return "nn2" if nn == "nn1" else "nn1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AutoCluster]:
    """The module's automatic-failover cluster (always stopped at the end)."""
    d = tmp_path_factory.mktemp("autofailover") / "cluster"
    with auto_cluster(
        d, session_timeout_ms=SESSION_TIMEOUT_MS, health_rpc_timeout_ms=HEALTH_RPC_TIMEOUT_MS
    ) as info:
        yield AutoCluster(d.resolve(), dict(info))


@pytest.fixture(scope="module")
def rec(cluster: AutoCluster) -> Iterator[Recorder]:
    """The workload and sampler, running through every test of the module."""
    cluster.single_active()
    r = Recorder(cluster.rpc).start()
    try:
        yield r
    finally:
        r.stop()


# ---------------------------------------------------------------- the checks themselves


def test_the_split_brain_checks_fail_on_what_they_look_for() -> None:
    """The checks above on made-up recordings: each kind of split brain is caught."""

    def recorder(acks: list[Ack], states: list[Answer]) -> Recorder:
        r = Recorder({"nn1": "127.0.0.1:1", "nn2": "127.0.0.1:2"})
        r.loop.close()  # never started: only its records are used
        r.acks, r.states = list(acks), list(states)
        return r

    def fails(check: Callable[[], None], what: str) -> None:
        with pytest.raises(AssertionError, match=what):
            check()

    rounds = [Answer(r, nn, "standby", r, r) for r in range(10) for nn in NAMENODES]
    fine = [Ack("/a", "nn1", 1, 2, 1), Ack("/b", "nn2", 5, 6, 5), Ack("/c", "nn2", 7, 8)]
    recorder(fine, rounds).check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True)
    # both accepted a direct write at one sampled instant
    same = [*fine, Ack("/d", "nn1", 5, 5.5, 5)]
    r = recorder(same, rounds)
    fails(lambda: r.check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True), "rounds")
    # the old active acknowledged a write sent after the new one acknowledged one
    late = [*fine, Ack("/e", "nn1", 6.5, 7)]
    r = recorder(late, rounds)
    fails(lambda: r.check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True), "after")
    # both said active at one instant; the old said active after the new did
    two = [*rounds, Answer(3, "nn1", "active", 3, 3), Answer(3, "nn2", "active", 3, 3)]
    r = recorder(fine, two)
    fails(lambda: r.check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True), "said")
    after = [*rounds, Answer(4, "nn2", "active", 4, 4), Answer(6, "nn1", "active", 6, 6)]
    r = recorder(fine, after)
    fails(lambda: r.check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True), "said")
    # no failover expected, but the other one acknowledged
    r = recorder(fine, rounds)
    fails(lambda: r.check_phase(Phase("p", "nn2", "nn2", 0, 9), strict_states=True), "no fail")
    # between phases, only the expected active acknowledges
    r = recorder([*fine, Ack("/f", "nn1", 9.5, 9.6)], rounds)
    r.check_phase(Phase("p", "nn1", "nn2", 0, 9), strict_states=True)
    fails(r.check_whole_run, "another NameNode")


# ---------------------------------------------------------------- the scenarios


def begin_phase(
    cluster: AutoCluster, rec: Recorder, name: str, *, fails_over: bool = True
) -> Phase:
    """Start a scenario: every daemon running and the single active acknowledging writes;
    the phase from now (to the other NameNode when it fails over)."""
    cluster.ensure_running()
    old = cluster.single_active()
    rec.wait_acks(old)
    return Phase(name, old, other(old) if fails_over else old, time.monotonic())


def test_sigstop_of_the_active_fails_over_and_the_old_active_is_fenced_when_it_wakes(
    cluster: AutoCluster, rec: Recorder
) -> None:
    phase = begin_phase(cluster, rec, "SIGSTOP")
    old, new = phase.old, phase.new
    pid = cluster.pid(old)
    os.kill(pid, signal.SIGSTOP)
    stopped = time.monotonic()  # from here on the old active answers only once it wakes
    try:
        took = cluster.wait_state(new, "active")
        rec.wait_acks(new)
        # a write sent to the sleeping old active directly: answered only when it wakes
        asleep = rec.submit(rec.direct_mkdirs(old, "/fenced/sent-while-stopped"))
        rec.wait_acks(new, 5)
    finally:
        os.kill(pid, signal.SIGCONT)
    answer = asleep.result(PROBE_TIMEOUT_S + 10)
    assert answer and not answer.startswith("no answer"), (
        f"a write sent to {old} while it was stopped: {answer or 'ACKNOWLEDGED'}"
    )
    cluster.wait_state(old, "standby")
    later = rec.run(rec.direct_mkdirs(old, "/fenced/sent-after-waking"), 60)
    assert later == STANDBY, f"a write sent to {old} after it woke: {later or 'ACKNOWLEDGED'}"
    wait_until(
        f"every direct write to {old} answered",
        lambda: rec.outstanding[old] == 0,
        timeout_s=FAILOVER_DEADLINE_S,
    )
    rec.wait_acks(new)
    phase.end = time.monotonic()
    assert cluster.states() == {new: "active", old: "standby"}

    rec.check_phase(phase, strict_states=False)
    # it woke fenced: nothing sent to it while it was stopped was acknowledged...
    woke = rec.acks_by(old, stopped)
    assert not woke, f"{old} acknowledged writes sent while it was stopped: {woke[:3]}"
    assert_all_acked_on(cluster, rec, new)
    # ... and none of them reached the namespace or the journal
    with rec.lock:
        refused = {p for p, nn, sent, _ in rec.refused if nn == old and sent >= stopped}
    assert "/fenced/sent-while-stopped" in refused and len(refused) > 2, refused
    present = cluster.namespace_paths(new, [f"/probe/{old}", "/fenced"])
    assert not refused & present, f"refused writes on {new}: {sorted(refused & present)[:5]}"
    for blob in cluster.journal_bytes():
        leaked = [p for p in refused if p.encode() in blob]
        assert not leaked, f"writes refused by {old} are in the journal: {leaked[:5]}"
    print(
        f"SIGSTOP of {old}: {new} active after {took:.1f}s; the {len(refused)} writes sent to "
        f"{old} while it was stopped were refused when it woke ({answer})"
    )
    cluster.fsshell_works("after-sigstop", new, ls=True)


def test_the_active_zkfc_killed_the_other_takes_over_after_the_session_timeout(
    cluster: AutoCluster, rec: Recorder
) -> None:
    phase = begin_phase(cluster, rec, "ZKFC kill -9")
    old, new = phase.old, phase.new
    zkfc = cluster.zkfc_of(old)
    cluster.kill9(zkfc)
    t0 = time.monotonic()
    cluster.wait_state(new, "active")
    took = time.monotonic() - t0
    assert took >= SESSION_TIMEOUT_MS / 1000 * 0.5, f"{new} active {took:.1f}s after the kill"
    assert cluster.states() == {new: "active", old: "standby"}  # fenced gracefully
    rec.wait_acks(new)
    phase.end = time.monotonic()
    print(f"kill -9 of {zkfc}: {new} active after {took:.1f}s")
    rec.check_phase(phase, strict_states=True)
    assert_all_acked_on(cluster, rec, new)
    cluster.restart_zkfc(old)
    rec.wait_acks(new)
    assert cluster.states() == {new: "active", old: "standby"}
    cluster.fsshell_works("after-zkfc-kill", new)


def test_zookeeper_restart_changes_no_active(cluster: AutoCluster, rec: Recorder) -> None:
    phase = begin_phase(cluster, rec, "ZooKeeper restart", fails_over=False)
    active = phase.old
    down_s = SESSION_TIMEOUT_MS * 1.5 / 1000  # longer than the session timeout

    def while_down() -> None:
        t_down = time.monotonic()
        wait_until(
            f"{active} acknowledging writes for {down_s:.1f}s with ZooKeeper down",
            lambda: time.monotonic() - t_down > down_s and len(rec.acks_by(active, t_down)) >= 10,
            timeout_s=FAILOVER_DEADLINE_S,
        )

    sessions = zookeeper_sessions(cluster)
    assert len(sessions) == 2, f"the ZKFCs' sessions: {sessions}"
    restart_zookeeper(cluster, while_down)
    # both ZKFCs are back on their sessions (they survived), and nothing changes for a while
    seen: list[set[str]] = []

    def back() -> bool:
        seen.append(zookeeper_sessions(cluster))
        return seen[-1] == sessions

    try:
        wait_until(
            f"the ZKFCs' sessions {sorted(sessions)} back", back, timeout_s=FAILOVER_DEADLINE_S
        )
    except AssertionError as e:
        last = sorted(seen[-1]) if seen else "none"
        raise AssertionError(f"{e}; the sessions seen last: {last}") from None
    t_back = time.monotonic()
    wait_until(
        f"{active} still acknowledging {SESSION_TIMEOUT_MS * 2} ms after ZooKeeper is back",
        lambda: (
            time.monotonic() - t_back > SESSION_TIMEOUT_MS * 2 / 1000
            and len(rec.acks_by(active, t_back)) > 0
        ),
        timeout_s=FAILOVER_DEADLINE_S,
    )
    phase.end = time.monotonic()
    assert cluster.states() == {active: "active", other(active): "standby"}
    rec.check_phase(phase, strict_states=True)
    with rec.lock:
        said = [s for s in rec.states if s.sent >= phase.start and s.nn != active]
    assert said and all(s.state != "active" for s in said), "the standby said active"
    assert_all_acked_on(cluster, rec, active)


def test_graceful_failover_by_haadmin(cluster: AutoCluster, rec: Recorder) -> None:
    phase = begin_phase(cluster, rec, "haadmin -failover")
    old, new = phase.old, phase.new
    r = run_qjm("haadmin", "--config", str(cluster.toml), "-failover", old, new, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "Failover to NameNode at" in r.stdout and "successful" in r.stdout, r.stdout
    assert cluster.states() == {new: "active", old: "standby"}
    rec.wait_acks(new)
    phase.end = time.monotonic()
    rec.check_phase(phase, strict_states=True)
    assert_all_acked_on(cluster, rec, new)
    cluster.fsshell_works("after-graceful-failover", new)


def test_kill9_of_the_active_namenode(cluster: AutoCluster, rec: Recorder) -> None:
    phase = begin_phase(cluster, rec, "NameNode kill -9")
    old, new = phase.old, phase.new
    cluster.kill9(old)
    took = cluster.wait_state(new, "active")
    rec.wait_acks(new)
    phase.end = time.monotonic()
    print(f"kill -9 of {old}: {new} active after {took:.1f}s")
    rec.check_phase(phase, strict_states=True)
    assert_all_acked_on(cluster, rec, new)
    cluster.fsshell_works("after-namenode-kill", new, ls=True)
    # started again, it comes back as the standby (its ZKFC makes it so)
    cluster.ensure_running()
    cluster.wait_state(old, "standby")
    rec.wait_acks(new)
    assert cluster.states() == {new: "active", old: "standby"}


# ---------------------------------------------------------------- ZooKeeper


def zookeeper_sessions(cluster: AutoCluster) -> set[str]:
    """The ids of the sessions connected to the ZooKeeper server now (cons)."""
    from qjm.cluster.zookeeper import four_letter_word

    out = four_letter_word(str(cluster.info["zk1"]["rpc"]), "cons", 2.0)
    return set(re.findall(r"sid=(0x[0-9a-f]+)", out))


def restart_zookeeper(cluster: AutoCluster, while_down: Callable[[], None]) -> None:
    """Stop the ZooKeeper server, run while_down, start it again on its config and data."""
    from qjm.cluster.zookeeper import (
        DEFAULT_JVM_OPTIONS,
        MAIN,
        ZooKeeperEnsemble,
        ZooKeeperMember,
        find_java,
        zookeeper_classpath,
    )

    entry = cluster.info["zk1"]
    stop_pid(int(entry["pid"]))
    assert not pid_alive(int(entry["pid"]))
    while_down()
    zk_dir = cluster.dir / "zookeeper"
    member = ZooKeeperMember(
        myid=1,
        client_port=int(str(entry["rpc"]).rsplit(":", 1)[1]),
        quorum_port=None,
        election_port=None,
        config=zk_dir / "conf" / "zk1.cfg",
        data_dir=zk_dir / "data" / "zk1",
        log=Path(entry["log"]),
    )
    argv = [
        find_java(),
        *DEFAULT_JVM_OPTIONS,
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
        "-cp",
        zookeeper_classpath(),
        MAIN,
    ]
    ensemble = ZooKeeperEnsemble(zk_dir, [member], argv, 60.0)
    ensemble.start()
    entry["pid"] = member.pid
    cluster.save()


def test_the_whole_run_had_no_split_brain(rec: Recorder) -> None:
    """At no sampled instant of the module did both NameNodes accept a write (nor, outside
    the SIGSTOP, say active), and between the phases only the expected active acknowledged."""
    rec.check_whole_run()
