"""The chaos nemesis: a seeded schedule of faults (the same seed gives the same schedule),
and the hands that make them on a local cluster's processes and heal them.

Faults: kill -9 or SIGSTOP (longer than the ZooKeeper session, then SIGCONT) of the active
or the standby NameNode; kill -9 of one JournalNode or of two at once (no quorum: every
write must fail), SIGSTOP of one; kill -9 of the active's or the standby's ZKFC; a restart
of ZooKeeper. Healing starts again what was killed and continues what was stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qjm.cluster.launcher import (
    CLUSTER_JSON,
    ZOOKEEPER_DIR,
    daemons_of,
    namenode_state,
    read_cluster,
    start_daemons,
)
from qjm.cluster.process import LaunchError, pid_alive, tail
from qjm.config import load_config

# kind -> weight in the schedule
ACTION_WEIGHTS: dict[str, int] = {
    "kill-active-nn": 5,
    "stop-active-nn": 5,
    "kill-standby-nn": 3,
    "stop-standby-nn": 2,
    "kill-jn": 4,
    "stop-jn": 2,
    "kill-two-jns": 3,
    "kill-active-zkfc": 3,
    "kill-standby-zkfc": 1,
    "restart-zookeeper": 2,
}
ACTION_KINDS = tuple(ACTION_WEIGHTS)
ON_ACTIVE = ("kill-active-nn", "stop-active-nn", "kill-active-zkfc")  # each makes a failover
JOURNALNODES = ("jn1", "jn2", "jn3")


@dataclass(frozen=True)
class Action:
    """One fault of the schedule: its number, kind, the JournalNodes it hits (JN kinds), how
    long the fault lasts before it is healed, and how long the workload runs before it."""

    index: int
    kind: str
    journalnodes: tuple[str, ...]
    hold_s: float
    gap_s: float


def schedule(
    seed: int,
    count: int,
    session_s: float,
    kinds: tuple[str, ...] = ACTION_KINDS,
    fence_s: float = 2.0,
) -> list[Action]:
    """The first count actions of seed's schedule over kinds (pure: the same arguments give
    the same list; a longer count extends a shorter one).

    A NameNode's host (the NameNode and its ZKFC) is stopped past the ZooKeeper session and
    the other ZKFC's graceful fencing timeout (fence_s), so that the other NameNode has
    mostly taken over when it wakes.
    """
    unknown = [k for k in kinds if k not in ACTION_WEIGHTS]
    if unknown or not kinds:
        raise ValueError(
            f"unknown nemesis action kind(s) {', '.join(unknown) or '(none given)'}; the kinds "
            f"are {', '.join(ACTION_KINDS)}"
        )
    kinds = tuple(k for k in ACTION_KINDS if k in kinds)  # the order given does not matter
    rng = random.Random(f"chaos-schedule:{seed}")
    weights = [ACTION_WEIGHTS[k] for k in kinds]
    out = []
    for i in range(count):
        kind = rng.choices(kinds, weights)[0]
        jns: tuple[str, ...] = ()
        if kind in ("kill-jn", "stop-jn"):
            jns = (rng.choice(JOURNALNODES),)
        elif kind == "kill-two-jns":
            jns = tuple(sorted(rng.sample(JOURNALNODES, 2)))
        if kind.startswith("stop-") and kind.endswith("-nn"):
            hold = session_s + fence_s + rng.uniform(1.5, 5.0)
        elif kind == "restart-zookeeper":
            hold = rng.uniform(0.2, 2.0 * session_s)  # sessions survive, or expire
        else:
            hold = rng.uniform(1.0, 6.0)
        out.append(Action(i, kind, jns, round(hold, 2), round(rng.uniform(0.5, 3.0), 2)))
    return out


def exit_expected(action_kind: str, daemon_kind: str, daemon: str, stopped: str) -> str:
    """Why a daemon that exited without the nemesis killing it may do so during an action
    of action_kind ("" when it may not): a NameNode without a quorum of JournalNodes stops,
    as HDFS's does; a NameNode that was stopped past its session is fenced when it wakes."""
    if daemon_kind != "namenode":
        return ""
    if action_kind == "kill-two-jns":
        return "no quorum of JournalNodes: the active stops, as HDFS's does"
    if action_kind in ("stop-active-nn", "stop-standby-nn") and daemon == stopped:
        return "it was stopped past its ZooKeeper session and fenced"
    return ""


class ClusterControl:
    """The processes of a local cluster (DIR/cluster.json): who runs, kill, stop, continue,
    start again; which NameNode is active."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()
        self.cluster = read_cluster(self.directory)
        self.config = load_config(self.cluster["config"])
        self.stopped: set[str] = set()

    def reload(self) -> None:
        """Read cluster.json again (after a start)."""
        self.cluster = read_cluster(self.directory)

    @property
    def daemons(self) -> dict[str, dict[str, Any]]:
        """name -> cluster.json entry of every daemon."""
        return daemons_of(self.cluster)

    def kind(self, name: str) -> str:
        """journalnode, namenode, zkfc or zookeeper."""
        return str(self.daemons[name].get("kind", ""))

    def pid(self, name: str) -> int | None:
        """The daemon's pid as cluster.json has it."""
        pid = self.daemons[name].get("pid")
        return int(pid) if pid else None

    def alive(self, name: str) -> bool:
        """True when the daemon's process runs (stopped counts as running)."""
        return pid_alive(self.pid(name))

    def namenodes(self) -> dict[str, str]:
        """NameNode name -> RPC address."""
        return {n: d["rpc"] for n, d in self.daemons.items() if d.get("kind") == "namenode"}

    def zkfc_of(self, namenode: str) -> str:
        """The ZKFC of a NameNode."""
        return next(n for n, d in self.daemons.items() if d.get("namenode") == namenode)

    def log_tail(self, name: str, lines: int = 6) -> str:
        """The last lines of a daemon's log."""
        return tail(Path(self.daemons[name]["log"]), lines)

    def edits_dirs(self) -> dict[str, Path]:
        """JournalNode name -> its journal's current/ directory."""
        jid = self.config.journal_id
        return {
            name: Path(jn.edits_dir) / jid / "current"
            for name, jn in self.config.journalnodes.items()
        }

    async def states(self) -> dict[str, str]:
        """NameNode name -> HA state ("down" when it does not answer)."""
        out = {}
        for name, address in self.namenodes().items():
            out[name] = "stopped" if name in self.stopped else await namenode_state(address, 3.0)
        return out

    # -- faults (blocking: call them off the event loop)

    def kill(self, name: str, timeout_s: float = 10.0) -> None:
        """kill -9, and wait until the process is gone."""
        pid = self.pid(name)
        if pid is None or not pid_alive(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout_s
        while pid_alive(pid):
            _reap(pid)
            if time.monotonic() > deadline:
                raise LaunchError(f"{name} (pid {pid}) still runs {timeout_s:.0f}s after kill -9")
            time.sleep(0.01)
        _reap(pid)
        self.stopped.discard(name)

    def stop(self, name: str) -> None:
        """SIGSTOP."""
        pid = self.pid(name)
        if pid is not None:
            os.kill(pid, signal.SIGSTOP)
            self.stopped.add(name)

    def cont(self, name: str) -> None:
        """SIGCONT."""
        pid = self.pid(name)
        self.stopped.discard(name)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def start(self, names: list[str]) -> None:
        """Start daemons again on their ports and data (ZooKeeper too)."""
        zk = [n for n in names if self.kind(n) == "zookeeper"]
        for name in zk:
            self._start_zookeeper(name)
        rest = [n for n in names if n not in zk]
        try:
            if rest:
                start_daemons(self.directory, rest, timeout=90.0)
        finally:
            # the pids of those that did start, even when one of them did not come up: a
            # retry starts only the ones still down
            self.reload()

    def _start_zookeeper(self, name: str) -> None:
        from qjm.cluster.zookeeper import (
            DEFAULT_JVM_OPTIONS,
            MAIN,
            ZooKeeperEnsemble,
            ZooKeeperMember,
            find_java,
            zookeeper_classpath,
        )

        entry = self.daemons[name]
        zk_dir = self.directory / ZOOKEEPER_DIR
        member = ZooKeeperMember(
            myid=int(name.removeprefix("zk")),
            client_port=int(str(entry["rpc"]).rsplit(":", 1)[1]),
            quorum_port=None,
            election_port=None,
            config=zk_dir / "conf" / f"{name}.cfg",
            data_dir=zk_dir / "data" / name,
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
        ZooKeeperEnsemble(zk_dir, [member], argv, 60.0).start()
        cluster = read_cluster(self.directory)
        cluster[name]["pid"] = member.pid
        path = self.directory / CLUSTER_JSON
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(cluster, indent=2) + "\n")
        os.replace(tmp, path)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
