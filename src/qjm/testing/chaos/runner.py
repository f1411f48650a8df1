"""The chaos run: a real cluster (ZooKeeper, 3 JournalNodes, 2 NameNodes, 2 ZKFCs), the
workload clients, the nemesis' schedule one action at a time (fault, hold, heal, recover),
and the checks after each healing and at the end; then the summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from qjm.cluster.launcher import (
    AUTO_PORT_RANGE,
    HOST,
    cluster_down,
    cluster_up,
    plan_cluster_ports,
)
from qjm.cluster.process import LaunchError, port_is_free
from qjm.config import FailoverControllerSettings, NameNodeSettings, ZooKeeperSettings
from qjm.errors import QjmError
from qjm.namenode.client import NameNodeClient
from qjm.namenode.types import FileStatus
from qjm.testing.chaos.checker import (
    JournalIndex,
    SegmentReader,
    Violation,
    check_namespace,
    check_reads,
    compare_trees,
    no_quorum_acks,
    without_quorum,
)
from qjm.testing.chaos.history import History
from qjm.testing.chaos.model import Op, SubtreeModel
from qjm.testing.chaos.nemesis import (
    ACTION_KINDS,
    ON_ACTIVE,
    Action,
    ClusterControl,
    exit_expected,
    schedule,
)
from qjm.testing.chaos.observe import ObserverClient, namenode_status, walk
from qjm.testing.chaos.probe import PROBE, DeposedProbe
from qjm.testing.chaos.summary import Exit, Summary
from qjm.testing.chaos.workload import ROOT, ChaosClient, ClientSettings, Gate

MARKER = ".chaos-run"  # a directory holding it is a chaos run's, removed by the next run
RECOVER_S = 120.0  # after healing: one active NameNode acknowledging writes within this
PAUSE_S = 240.0  # the clients finish their calls in flight within this (their own bound)
WATCH_S = 0.2  # how often the watcher looks for daemons that exited
CHECK_TRIES = 3
CHECKPOINT_TXNS = 20_000  # the standby checkpoints after this many txns
FENCE_MS = 2000  # the ZKFCs' graceful fencing timeout (transitionToStandby of the old active)


@dataclass
class RunConfig:
    """What to run: seed, how many actions (or for how long), where, with how many clients,
    which fault kinds, and the ZooKeeper session timeout."""

    seed: int
    directory: Path
    actions: int = 20
    duration_s: float | None = None
    clients: int = 6
    kinds: tuple[str, ...] = ACTION_KINDS
    session_timeout_ms: int = 3000
    base_port: int | None = None
    keep: bool = False
    history_file: bool = True
    probe: bool = True  # the deposed-active probe during stop-active-nn


def free_base_port(count: int) -> int:
    """The first of count consecutive free loopback ports."""
    low, high = AUTO_PORT_RANGE
    for base in range(low + (time.monotonic_ns() // 1000) % 997 * 10, high - count, 37):
        if all(port_is_free(HOST, p) for p in range(base, base + count)):
            return base
    raise LaunchError(f"no {count} consecutive free ports between {low} and {high}")


def prepare_directory(directory: Path) -> None:
    """An empty run directory: a new one, or an earlier run's (removed first); anything else
    is refused."""
    if directory.exists() and any(directory.iterdir()):
        if not (directory / MARKER).exists():
            raise LaunchError(
                f"{directory} is not empty and holds no earlier chaos run; give an empty or a "
                "new --dir"
            )
        with contextlib.suppress(LaunchError, OSError):
            cluster_down(directory)
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("a chaos run's directory: the next run removes it\n")


class Runner:
    """One chaos run (see the module doc); run() returns its Summary."""

    def __init__(self, cfg: RunConfig, out: TextIO = sys.stdout) -> None:
        self.cfg = cfg
        self.out = out
        self.summary = Summary(cfg.seed)
        self.session_s = cfg.session_timeout_ms / 1000
        self.gate = Gate()
        self.clients: list[ChaosClient] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.watcher: asyncio.Task[None] | None = None
        self.control: ClusterControl | None = None
        self.history = History(cfg.directory / "history.jsonl" if cfg.history_file else None)
        self.segments = SegmentReader()
        self.journals = JournalIndex()
        self.action: Action | None = None
        self.stopped_target = ""
        self.expected_alive: set[str] = set()
        self.no_quorum: list[tuple[float, float, int]] = []
        self.checked = 0  # history records checked so far
        self.t0 = time.monotonic()
        self.probe_model = SubtreeModel(f"{ROOT}/probe")  # what the deposed-active probe made
        self.probe = DeposedProbe(self.history, self.probe_model, self.summary.probes)
        self.when = "the start"  # where the run is, for violations found outside an action

    # -- output

    def say(self, text: str) -> None:
        """One line of progress."""
        print(text, file=self.out, flush=True)

    def violation(self, v: Violation) -> None:
        """Record a violation (and show it at once)."""
        if v.action < 0 and self.action is not None:
            v.action = self.action.index
        if v.action < 0 and not v.when:
            v.when = self.when
        self.summary.violations.append(v)
        self.say(v.text(self.cfg.seed))

    # -- the run

    async def run(self) -> Summary:
        """Start the cluster and the clients, run the schedule, check, stop; the summary."""
        cfg = self.cfg
        count = cfg.actions if cfg.duration_s is None else 1_000_000
        plan = schedule(cfg.seed, count, self.session_s, cfg.kinds, FENCE_MS / 1000)
        self.say(
            f"chaos: seed {cfg.seed}, "
            + (f"{cfg.actions} actions" if cfg.duration_s is None else f"{cfg.duration_s:.0f}s")
            + f", {cfg.clients} clients, directory {cfg.directory}"
        )
        try:
            await self.start()
            await self.check("start")
            for action in plan:
                if cfg.duration_s is not None and time.monotonic() - self.t0 > cfg.duration_s:
                    break
                await self.step(action)
            self.action = None
            await self.recover(time.monotonic(), "the end")
            await self.check("the end")
        finally:
            await self.stop()
        return self.summary

    async def start(self) -> None:
        """The cluster (with short ZooKeeper timeouts) and the clients' subtrees."""
        cfg = self.cfg
        base = cfg.base_port or free_base_port(_port_count())
        self.say(f"starting the cluster on ports from {base} ...")
        await asyncio.to_thread(
            cluster_up,
            cfg.directory,
            journalnodes=3,
            namenodes=2,
            zookeeper=True,
            base_port=base,
            # checkpoints as the run goes (images uploaded, old segments purged), so that a
            # NameNode started again replays a bounded tail
            namenode_settings=NameNodeSettings(
                checkpoint_txns=CHECKPOINT_TXNS, checkpoint_check_period_s=10
            ),
            zookeeper_settings=ZooKeeperSettings(session_timeout_ms=cfg.session_timeout_ms),
            zkfc_settings=FailoverControllerSettings(
                fencing_methods="shell(true)",
                health_rpc_timeout_ms=min(2000, cfg.session_timeout_ms),
                health_check_interval_ms=500,
                graceful_fence_timeout_ms=FENCE_MS,
                new_active_timeout_ms=30_000,
            ),
        )
        self.control = control = ClusterControl(cfg.directory)
        self.expected_alive = set(control.daemons)
        namenodes = control.namenodes()
        settings = ClientSettings()
        self.clients = [
            ChaosClient(i, cfg.seed, namenodes, self.history, self.gate, settings)
            for i in range(cfg.clients)
        ]
        for c in self.clients:
            c.peers = [p for p in self.clients if p is not c]
        async with NameNodeClient(list(namenodes.values()), max_rounds=30) as admin:
            await admin.mkdirs(ROOT)
            seq, prediction = self.probe_model.begin(Op("mkdirs", self.probe_model.root), 0.0)
            await admin.mkdirs(self.probe_model.root)
            self.probe_model.finish(seq, prediction, time.monotonic(), "ack", result=True)
        for c in self.clients:
            await c.setup(RECOVER_S)
        self.tasks = [asyncio.create_task(c.run()) for c in self.clients]
        self.watcher = asyncio.create_task(self.watch())
        self.gate.resume()
        states = await control.states()
        self.say(f"cluster up: {_states(states)}; {cfg.clients} clients running")

    async def stop(self) -> None:
        """Stop the clients and the watcher, close everything, stop the cluster."""
        if self.watcher is not None:
            self.watcher.cancel()
            await asyncio.gather(self.watcher, return_exceptions=True)
        for c in self.clients:
            c.stopping = True
        self.gate.resume()
        if self.tasks:
            _, pending = await asyncio.wait(self.tasks, timeout=PAUSE_S)
            for t in pending:
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        self.history.close()
        s = self.summary
        s.seconds = time.monotonic() - self.t0
        s.ops_by_outcome = self.history.outcomes()
        s.ops_by_kind = {k: dict(v) for k, v in sorted(self.history.by_kind().items())}
        s.retry_answers = sum(c.model.retry_answers for c in self.clients)
        if self.control is not None and not self.cfg.keep:
            for name in list(self.control.stopped):
                self.control.cont(name)
            with contextlib.suppress(LaunchError, OSError):
                await asyncio.to_thread(cluster_down, self.cfg.directory)

    async def watch(self) -> None:
        """Note every daemon that exits without the nemesis killing it."""
        while True:
            self.watch_once()
            await asyncio.sleep(WATCH_S)  # a polling period, not a synchronization

    def watch_once(self) -> None:
        """One look at the daemons that should be running."""
        control = self.control
        if control is None:
            return
        for name in sorted(self.expected_alive):
            if control.alive(name):
                continue
            self.expected_alive.discard(name)
            kind = self.action.kind if self.action is not None else ""
            why = exit_expected(kind, control.kind(name), name, self.stopped_target)
            e = Exit(
                name,
                self.action.index if self.action is not None else -1,
                round(time.monotonic() - self.t0, 3),
                why,
                control.log_tail(name, 8),
            )
            self.summary.exits.append(e)
            if why:
                self.say(f"    {name} exited ({why})")
            else:
                self.violation(
                    Violation(
                        "unexpected exit",
                        f"{name} exited during {kind or 'the workload'} although no fault "
                        "explains it",
                        [f"the end of its log:\n{e.log}"],
                    )
                )

    async def step(self, action: Action) -> None:
        """One nemesis action: wait its gap, make the fault, hold, heal, recover, check."""
        control = self.control
        assert control is not None
        await asyncio.sleep(action.gap_s)  # the workload runs undisturbed for the gap
        states = await control.states()
        active = next((n for n, s in states.items() if s == "active"), "")
        standby = next((n for n in states if n != active), "")
        self.action = action
        self.stopped_target = ""
        before = self.history.outcomes()
        ipc = None
        if action.kind == "stop-active-nn" and active and self.cfg.probe:
            ipc = await DeposedProbe.connect(control.namenodes()[active])
        t_fault = time.monotonic()
        killed, stopped = await self.fault(action, active, standby)
        t_down = time.monotonic()
        probe = None
        if ipc is not None:
            probe = asyncio.create_task(
                self.probe.run(
                    ipc,
                    control.namenodes(),
                    active,
                    t_down + action.hold_s,
                    f"after-{action.index + 1}",
                )
            )
        await asyncio.sleep(action.hold_s)  # the fault lasts this long (the schedule's choice)
        t_heal = time.monotonic()
        if action.kind == "kill-two-jns":
            self.no_quorum.append((t_down, t_heal, action.index))
        for name in stopped:
            await asyncio.to_thread(control.cont, name)
        if killed:
            await self.restart(killed)
        await self.recover(t_heal, action.kind)
        if probe is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(probe, PAUSE_S)
        took = ""
        if action.kind in ON_ACTIVE and active:
            took = self.measure_failover(action, active, t_fault, time.monotonic())
        self.summary.actions_by_kind[action.kind] += 1
        self.summary.actions_done += 1
        found = len(self.summary.violations)
        outcomes = self.history.outcomes() - before
        await self.check(f"action {action.index + 1}")
        targets = ", ".join(killed + stopped) or "-"
        self.say(
            f"[{action.index + 1:>4}] {time.monotonic() - self.t0:7.1f}s {action.kind:<18} "
            f"{targets:<10} held {action.hold_s:4.1f}s{took}; calls: "
            f"{outcomes['ack']} acked, {outcomes['refused']} refused, "
            f"{outcomes['indeterminate']} indeterminate; "
            + (
                "checks ok"
                if len(self.summary.violations) == found
                else f"{len(self.summary.violations) - found} VIOLATION(S)"
            )
        )

    async def fault(self, action: Action, active: str, standby: str) -> tuple[list[str], list[str]]:
        """Make the action's fault; the daemons killed and the daemons stopped."""
        control = self.control
        assert control is not None
        kind = action.kind
        kill: list[str] = []
        stop: list[str] = []
        if kind == "kill-active-nn":
            kill = [active]
        elif kind == "kill-standby-nn":
            kill = [standby]
        elif kind == "stop-active-nn":  # its host pauses: the NameNode and its ZKFC
            stop = [active, control.zkfc_of(active)] if active else []
        elif kind == "stop-standby-nn":
            stop = [standby, control.zkfc_of(standby)] if standby else []
        elif kind in ("kill-jn", "kill-two-jns"):
            kill = list(action.journalnodes)
        elif kind == "stop-jn":
            stop = list(action.journalnodes)
        elif kind == "kill-active-zkfc":
            kill = [control.zkfc_of(active)]
        elif kind == "kill-standby-zkfc":
            kill = [control.zkfc_of(standby)]
        elif kind == "restart-zookeeper":
            kill = [n for n in control.daemons if control.kind(n) == "zookeeper"]
        kill = [n for n in kill if n]
        stop = [n for n in stop if n]
        for name in kill + stop:
            self.expected_alive.discard(name)
        for name in kill:
            await asyncio.to_thread(control.kill, name)
        for name in stop:
            await asyncio.to_thread(control.stop, name)
            self.expected_alive.add(name)  # stopped, not gone: an exit now is noted
            if control.kind(name) == "namenode":
                self.stopped_target = name
        return kill, stop

    async def restart(self, names: list[str]) -> None:
        """Start daemons again; one that does not come up is noted."""
        control = self.control
        assert control is not None
        try:
            await asyncio.to_thread(control.start, names)
        except (LaunchError, QjmError, OSError) as e:
            self.say(f"    starting {', '.join(names)} again failed: {str(e).splitlines()[0]}")
        for name in names:
            if control.alive(name):
                self.expected_alive.add(name)

    async def recover(self, t_heal: float, what: str) -> None:
        """Wait until every daemon runs (starting the ones that exited), one NameNode is
        active and the other standby, and a write was acknowledged after the healing."""
        control = self.control
        assert control is not None
        deadline = t_heal + RECOVER_S
        states: dict[str, str] = {}
        while True:
            self.watch_once()
            dead = [n for n in control.daemons if not control.alive(n)]
            if dead:
                await self.restart(dead)
            states = await control.states()
            values = sorted(states.values())
            acked = self.history.first_ack(t_heal)
            if values == ["active", "standby"] and acked is not None and not dead:
                return
            if time.monotonic() > deadline:
                logs = [
                    f"the end of {n}'s log:\n{control.log_tail(n)}"
                    for n in control.daemons
                    if control.kind(n) in ("namenode", "zkfc")
                ]
                self.violation(
                    Violation(
                        "unavailable",
                        f"{RECOVER_S:.0f}s after healing {what}: NameNodes {_states(states)}, "
                        f"{'a write was' if acked else 'no write'} acknowledged since, "
                        f"daemons down: {', '.join(dead) or 'none'}",
                        logs,
                    )
                )
                return
            await asyncio.sleep(0.25)  # a polling period, not a synchronization

    def measure_failover(self, action: Action, old: str, t_fault: float, until: float) -> str:
        """Note the failover an action on the active made (the first write the other
        NameNode acknowledged after the fault, up to until); its text for the progress line."""
        first = self.history.first_ack(t_fault, not_by=old)
        seconds = None
        to = ""
        if first is not None and first.completed <= until:
            seconds = round(first.completed - t_fault, 3)
            to = first.namenode
        self.summary.failovers.append(
            {"action": action.index, "kind": action.kind, "from": old, "to": to, "seconds": seconds}
        )
        if seconds is None:
            return f"; no failover ({old} stayed active)"
        return f"; failover {seconds:.1f}s {old}->{to}"

    # -- the checks

    async def check(self, when: str) -> None:
        """Hold the clients and run every check; found violations are recorded."""
        self.when = when
        if not await self.gate.pause(PAUSE_S):
            busy = sorted(self.gate.busy)
            self.violation(
                Violation(
                    "stuck call",
                    f"at {when}, client(s) {busy} had a call open for over {PAUSE_S:.0f}s",
                )
            )
            self.gate.resume()
            return
        try:
            await self._checks(when)
        finally:
            self.summary.checks += 1
            self.gate.resume()

    async def _checks(self, when: str) -> None:
        control = self.control
        assert control is not None
        models = {c.index: c.model for c in self.clients}
        models[PROBE] = self.probe_model
        for c in self.clients:
            for verdict, rec in c.verdicts:
                self.violation(Violation(verdict.kind, verdict.message, [rec.line(), rec.detail]))
            c.verdicts.clear()
        new = self.history.records[self.checked :]
        self.history.forget(self.checked)  # checked at the previous check
        self.checked = len(new)
        reads = [r for r in new if r.seen is not None]
        self.summary.reads_checked += len(reads)
        for v in check_reads(reads, models):
            self.violation(v)
        for r, _ in without_quorum(new, self.no_quorum):
            self.summary.no_quorum_writes[r.outcome] += 1
        for v in no_quorum_acks(new, self.no_quorum):
            self.violation(v)
        tree = await self._active_tree(when)
        if tree is not None:
            active, held = tree
            for v in check_namespace(list(models.values()), held, ROOT):
                self.violation(v)
            await self._check_standby(active, held, when)
        journals = await asyncio.to_thread(
            lambda: {n: self.segments.read(d) for n, d in control.edits_dirs().items()}
        )
        for node, segments in sorted(journals.items()):
            for segment in segments:
                for v in self.journals.add(node, segment):
                    self.violation(v)

    async def _active_tree(self, when: str) -> tuple[str, dict[str, FileStatus]] | None:
        control = self.control
        assert control is not None
        last = ""
        for _ in range(CHECK_TRIES):
            states = await control.states()
            active = [n for n, s in states.items() if s == "active"]
            if len(active) == 1:
                address = control.namenodes()[active[0]]
                try:
                    async with NameNodeClient([address], timeout=30, max_rounds=3) as c:
                        return active[0], await walk(c, ROOT)
                except (QjmError, OSError) as e:
                    last = str(e)
            else:
                last = f"NameNodes {_states(states)}"
            await self.recover(time.monotonic(), f"the check at {when}")
        self.say(f"    the namespace check at {when} was skipped: {last}")
        return None

    async def _check_standby(self, active: str, held: dict[str, FileStatus], when: str) -> None:
        """The standby's full listing (observer reads at the active's synced txid) must equal
        the active's."""
        control = self.control
        assert control is not None
        standby = next(n for n in control.namenodes() if n != active)
        try:
            status = await asyncio.to_thread(namenode_status, control.daemons[active]["http"])
            txid = int(status.get("last_synced_txid") or status["last_applied_txid"])
            async with ObserverClient(
                control.namenodes()[standby], txid, timeout=30, max_rounds=40, max_backoff_s=1.0
            ) as c:
                theirs = await walk(c, ROOT)
        except (QjmError, OSError, KeyError, ValueError) as e:
            self.violation(
                Violation(
                    "standby behind",
                    f"at {when}, {standby} did not answer the listing at the active's txid: "
                    f"{str(e)[:300]}",
                    [f"the end of {standby}'s log:\n{control.log_tail(standby)}"],
                )
            )
            return
        diffs = compare_trees(held, theirs)
        if diffs:
            self.violation(
                Violation(
                    "standby differs",
                    f"at {when}, {standby}'s listing at txid {txid} differs from {active}'s",
                    diffs,
                )
            )


def _port_count() -> int:
    plan = plan_cluster_ports(3, 1, 2, 1)
    ports = [p for pair in plan.journalnodes + plan.namenodes for p in pair]
    return len(ports) + len(plan.zkfcs) + len(plan.zookeeper_ports())


def _states(states: dict[str, str]) -> str:
    return ", ".join(f"{n} {s}" for n, s in sorted(states.items()))
