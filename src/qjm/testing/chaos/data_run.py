"""A seeded chaos run for file bytes: DataNodes killed (one or two at once), bytes flipped in
replicas on disk, and the active NameNode killed, while writers put files through hdfs-native
(the genuine Rust client) and read them back. At the end every fault is healed, fsck must
show every acknowledged file whole (no block of one corrupt, missing or under-replicated),
and every file whose close was acknowledged must read back byte for byte.

`make chaos-data ARGS="--seed S --actions N --dir D"`; the same seed gives the same schedule
of faults and the same files (the timing is the machine's). Exit 0 when nothing
acknowledged was lost or changed and fsck shows it whole; 1 otherwise; 2 when the run itself
failed. The rules (the schedule, the verdicts) are pure functions with table tests; the
processes are the launcher's (design §B.21).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import re
import shutil
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qjm.cluster.hadoop_conf import read_site
from qjm.cluster.launcher import cluster_down, cluster_up
from qjm.cluster.process import LaunchError
from qjm.config import (
    DataNodeSettings,
    FailoverControllerSettings,
    NameNodeSettings,
    ZooKeeperSettings,
)
from qjm.errors import QjmError
from qjm.testing.chaos.nemesis import ClusterControl
from qjm.testing.chaos.runner import free_base_port

DATA_WEIGHTS: dict[str, int] = {
    "kill-datanode": 4,
    "kill-two-datanodes": 1,
    "corrupt-replica": 4,
    "kill-active-nn": 3,
}
DATA_KINDS = tuple(DATA_WEIGHTS)
MARKER = ".qjm-data-chaos-run"
ROOT = "/data"
BLOCK = 1 << 20
MAX_FILE = 3 * BLOCK + 12345
HEAL_S = 120.0  # every daemon back and an active NameNode, after each healing
SAFE_MODE_WAIT_S = 20.0  # the end's wait on a NameNode held in safe mode, then it is left
HEALTHY_S = 300.0  # every acknowledged file whole to fsck, at the end
EXIT_BAD, EXIT_FAILED = 1, 2


@dataclass(frozen=True)
class DataAction:
    """One fault: its number, kind, how long it is held, the workload's time before it,
    and a number that picks its victims among the candidates of the moment."""

    index: int
    kind: str
    hold_s: float
    gap_s: float
    pick: int


def data_schedule(seed: int, n: int, kinds: tuple[str, ...] = DATA_KINDS) -> list[DataAction]:
    """The run's faults, from its seed alone."""
    rng = random.Random(seed)
    weights = [DATA_WEIGHTS[k] for k in kinds]
    return [
        DataAction(
            i,
            rng.choices(kinds, weights)[0],
            round(rng.uniform(1.0, 6.0), 2),
            round(rng.uniform(1.0, 4.0), 2),
            rng.randrange(1 << 30),
        )
        for i in range(n)
    ]


def file_data(seed: int, path: str) -> bytes:
    """A file's bytes, from the seed and its path (0 to just over 3 blocks)."""
    rng = random.Random(f"{seed}:{path}")
    return rng.randbytes(rng.randint(0, MAX_FILE))


@dataclass
class Verdict:
    """What the end found of the acknowledged files."""

    checked: int = 0
    lost: list[str] = field(default_factory=list)  # unreadable or gone
    changed: list[str] = field(default_factory=list)  # other bytes than acknowledged

    @property
    def ok(self) -> bool:
        """Nothing acknowledged lost or changed."""
        return not self.lost and not self.changed


PROBLEM = re.compile(r"^(/\S*): (?:CORRUPT|MISSING| Under replicated)", re.M)


def files_with_problems(fsck_text: str) -> set[str]:
    """The files an fsck report (without -files) names with a corrupt, missing or
    under-replicated block."""
    return set(PROBLEM.findall(fsck_text))


def settled(fsck_text: str, acked: set[str]) -> bool:
    """Whether fsck shows every acknowledged file whole: none of them named with a problem,
    and the report complete. Files never acknowledged (a writer cut off mid-file, whose
    client closed it with what it had) may be left damaged; they are counted apart."""
    done = "FSCK ended at" in fsck_text and "The filesystem under path" in fsck_text
    return done and not files_with_problems(fsck_text) & acked


def judge(acked: dict[str, str], read: Callable[[str], bytes]) -> Verdict:
    """Read every acknowledged file and compare its sha256 with the acknowledged one."""
    v = Verdict()
    for path, digest in sorted(acked.items()):
        v.checked += 1
        try:
            data = read(path)
        except Exception:  # any failed read of an acknowledged file is a loss
            v.lost.append(path)
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            v.changed.append(path)
    return v


@dataclass
class DataSummary:
    """A run's outcome (data-chaos-summary.json)."""

    seed: int
    actions: list[str] = field(default_factory=list)
    files_acked: int = 0
    bytes_acked: int = 0
    writes_failed: int = 0
    write_errors: dict[str, int] = field(default_factory=dict)  # first words of each error
    reads_ok: int = 0
    reads_failed: int = 0  # a read that raised during the faults (retried later)
    reads_wrong: list[str] = field(default_factory=list)  # bytes other than acknowledged
    replicas_flipped: int = 0
    scanner_found: int = 0
    healthy: bool = False  # every acknowledged file whole to fsck (settled)
    fsck_tail: str = ""
    unacked_damaged: list[str] = field(default_factory=list)  # never acknowledged
    safe_mode_left: int = 0  # times the run, as an operator, took the active out of safe mode
    lost: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """The run's verdict."""
        return self.healthy and not (self.lost or self.changed or self.reads_wrong)


class Writers:
    """Writer threads: each puts files under ROOT/wN with hdfs-native and reads back some of
    those it was acknowledged; every acknowledged close is recorded with its sha256."""

    def __init__(self, conf_dir: Path, seed: int, n: int, summary: DataSummary) -> None:
        site = read_site(conf_dir / "core-site.xml") | read_site(conf_dir / "hdfs-site.xml")
        self.config = site
        self.seed = seed
        self.summary = summary
        self.acked: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(i,), name=f"writer-{i}", daemon=True)
            for i in range(n)
        ]

    def client(self) -> Any:
        """A fresh hdfs-native client of the nameservice (HA, through the cluster's conf)."""
        import hdfs_native

        return hdfs_native.Client(self.config["fs.defaultFS"], config=self.config)

    def start(self) -> None:
        """Start writing."""
        for t in self.threads:
            t.start()

    def stop(self, timeout_s: float = 60.0) -> list[str]:
        """Stop and join; the names of writers still stuck in a call."""
        self.stopping.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self.threads if t.is_alive()]

    def _run(self, i: int) -> None:
        import hdfs_native

        client = self.client()
        mine: list[str] = []
        rng = random.Random(f"{self.seed}:reads:{i}")
        k = 0
        while not self.stopping.is_set():
            path = f"{ROOT}/w{i}/f{k:05d}"
            k += 1
            data = file_data(self.seed, path)
            try:
                options = hdfs_native.WriteOptions(replication=3, create_parent=True)
                w = client.create(path, options)
                w.write(data)
                w.close()
            except Exception as e:  # not acknowledged: the file may be there or not
                kind = f"{type(e).__name__}: {str(e)[:60]}"
                with self.lock:
                    self.summary.writes_failed += 1
                    errors = self.summary.write_errors
                    errors[kind] = errors.get(kind, 0) + 1
                client = self.client()
                continue
            with self.lock:
                self.acked[path] = hashlib.sha256(data).hexdigest()
                self.summary.files_acked += 1
                self.summary.bytes_acked += len(data)
            mine.append(path)
            if k % 3 == 0 and mine:
                self._read_back(client, rng.choice(mine))

    def _read_back(self, client: Any, path: str) -> None:
        try:
            with client.read(path) as f:
                got = bytes(f.read())
        except Exception:  # during a fault: counted, the end reads it again
            with self.lock:
                self.summary.reads_failed += 1
            return
        with self.lock:
            if hashlib.sha256(got).hexdigest() == self.acked[path]:
                self.summary.reads_ok += 1
            else:
                self.summary.reads_wrong.append(path)


class DataRun:
    """One run: the cluster, the writers, the schedule, the end's checks."""

    def __init__(
        self,
        seed: int,
        directory: Path,
        actions: int,
        writers: int = 3,
        kinds: tuple[str, ...] = DATA_KINDS,
        out: Any = sys.stdout,
    ) -> None:
        self.seed = seed
        self.directory = directory
        self.schedule = data_schedule(seed, actions, kinds)
        self.n_writers = writers
        self.out = out
        self.summary = DataSummary(seed)
        self.flipped: set[int] = set()
        self.control: ClusterControl | None = None
        self.t0 = time.monotonic()

    def say(self, text: str) -> None:
        """One line of progress."""
        print(f"[{time.monotonic() - self.t0:7.1f}s] {text}", file=self.out, flush=True)

    def run(self) -> DataSummary:
        """Start, make every action, heal, check; the cluster is stopped at the end."""
        self.say(f"seed {self.seed}: {len(self.schedule)} actions")
        self.start()
        assert self.control is not None
        writers = Writers(
            Path(self.control.cluster["hadoop_conf"]), self.seed, self.n_writers, self.summary
        )
        try:
            writers.start()
            for action in self.schedule:
                time.sleep(action.gap_s)
                line = self.act(action)
                self.summary.actions.append(line)
                self.say(line)
            stuck = writers.stop()
            if stuck:
                self.say(f"writers still in a call at the end: {', '.join(stuck)}")
            self.say(
                f"{self.summary.files_acked} files acknowledged "
                f"({self.summary.bytes_acked} bytes); checking"
            )
            self.summary.healthy = self.wait_healthy(set(writers.acked))
            verdict = judge(dict(writers.acked), self.read_with(writers.client()))
            self.summary.lost, self.summary.changed = verdict.lost, verdict.changed
            self.summary.scanner_found = self.scanner_found()
        finally:
            self.summary.seconds = round(time.monotonic() - self.t0, 1)
            with contextlib.suppress(LaunchError, OSError):
                cluster_down(self.directory)
        return self.summary

    def start(self) -> None:
        """The cluster: ZooKeeper, 3 JournalNodes, 2 NameNodes with ZKFCs, 5 DataNodes that
        heartbeat every 0.3 s (dead after 5 s) and scan their replicas every 5 s."""
        base = free_base_port(40)
        self.say(f"starting the cluster on ports from {base} ...")
        cluster_up(
            self.directory,
            journalnodes=3,
            namenodes=2,
            zookeeper=True,
            base_port=base,
            namenode_settings=NameNodeSettings(block_size=BLOCK, redundancy_interval_ms=1000),
            zookeeper_settings=ZooKeeperSettings(session_timeout_ms=3000),
            zkfc_settings=FailoverControllerSettings(
                fencing_methods="shell(true)",
                health_rpc_timeout_ms=2000,
                health_check_interval_ms=500,
                graceful_fence_timeout_ms=2000,
                new_active_timeout_ms=30_000,
            ),
            datanodes=5,
            datanode_settings=DataNodeSettings(
                heartbeat_interval_ms=300,
                heartbeat_recheck_ms=1000,
                safemode_extension_ms=1000,
                scan_bytes_per_second=8 << 20,
                scan_period_ms=5000,
            ),
        )
        self.control = ClusterControl(self.directory)

    # -- the faults

    def act(self, action: DataAction) -> str:
        """Make one fault, hold it, heal it; its line of the report."""
        c = self.control
        assert c is not None
        head = f"#{action.index} {action.kind}"
        if action.kind == "corrupt-replica":
            return f"{head}: {self.flip(action)}"
        if action.kind == "kill-active-nn":
            states = asyncio.run(c.states())
            active = [n for n, s in states.items() if s == "active"]
            if not active:
                return f"{head}: no active NameNode to kill ({states})"
            victims = active
        else:
            running = sorted(n for n, d in c.daemons.items() if d.get("kind") == "datanode")
            count = 2 if action.kind == "kill-two-datanodes" else 1
            rng = random.Random(action.pick)
            victims = rng.sample(running, count)
        for v in victims:
            c.kill(v)
        time.sleep(action.hold_s)
        c.start(victims)
        took = self.wait_healed()
        return f"{head}: {', '.join(victims)} killed, held {action.hold_s}s, healed in {took:.1f}s"

    def flip(self, action: DataAction) -> str:
        """Flip one bit of a finalized replica of a block not flipped before."""
        files = sorted(
            p
            for p in (self.directory / "data").glob("dn*/**/finalized/**/blk_*")
            if not p.name.endswith(".meta") and p.stat().st_size > 0
        )
        choices = [p for p in files if int(p.name.split("_")[1]) not in self.flipped]
        if not choices:
            return "no replica to flip"
        target = choices[action.pick % len(choices)]
        raw = bytearray(target.read_bytes())
        at = (action.pick >> 3) % len(raw)
        raw[at] ^= 1 << (action.pick % 8)
        target.write_bytes(bytes(raw))
        self.flipped.add(int(target.name.split("_")[1]))
        self.summary.replicas_flipped += 1
        dn = target.relative_to(self.directory / "data").parts[0]
        return f"bit {action.pick % 8} of byte {at} of {dn}'s {target.name}"

    def wait_healed(self) -> float:
        """Seconds until every daemon runs and one NameNode is active (bounded)."""
        c = self.control
        assert c is not None
        began = time.monotonic()
        while time.monotonic() - began < HEAL_S:
            c.reload()
            down = [n for n in c.daemons if not c.alive(n)]
            if down:
                c.start(down)
                continue
            if "active" in asyncio.run(c.states()).values():
                return time.monotonic() - began
            time.sleep(0.2)
        raise LaunchError(f"the cluster did not heal within {HEAL_S:.0f}s")

    # -- the end

    def active_http(self) -> str:
        """The active NameNode's HTTP address."""
        c = self.control
        assert c is not None
        states = asyncio.run(c.states())
        [active] = [n for n, s in states.items() if s == "active"]
        return str(c.daemons[active]["http"])

    def fsck(self) -> str:
        """fsck of ROOT from the active NameNode."""
        import getpass

        url = f"http://{self.active_http()}/fsck?ugi={getpass.getuser()}&path={ROOT}"
        with urllib.request.urlopen(url, timeout=60) as r:
            return str(r.read().decode())

    def wait_healthy(self, acked: set[str]) -> bool:
        """Heal everything, then wait (bounded) until fsck shows every acknowledged file
        whole (settled); the files never acknowledged that it names are noted."""
        self.wait_healed()
        deadline = time.monotonic() + HEALTHY_S
        text = ""
        ok = False
        stuck_since: float | None = None
        while time.monotonic() < deadline and not ok:
            with contextlib.suppress(OSError, ValueError):
                text = self.fsck()
                ok = settled(text, acked)
            if ok:
                break
            # Blocks of files never acknowledged, closed short by their clients, have no
            # good replica and can hold a restarted NameNode in safe mode for good (HDFS's
            # too): after SAFE_MODE_WAIT_S the run leaves it as an operator would.
            if self.in_safe_mode():
                stuck_since = stuck_since or time.monotonic()
                if time.monotonic() - stuck_since > SAFE_MODE_WAIT_S:
                    self.leave_safe_mode()
                    stuck_since = None
            time.sleep(1.0)
        self.summary.fsck_tail = _fsck_tail(text)
        self.summary.unacked_damaged = sorted(files_with_problems(text) - acked)
        return ok

    def _admin(self) -> Any:
        from qjm.namenode.client import NameNodeClient

        c = self.control
        assert c is not None
        return NameNodeClient(list(c.namenodes().values()), timeout=30.0)

    def in_safe_mode(self) -> bool:
        """Whether the active NameNode is in safe mode (setSafeMode GET)."""
        from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

        async def ask() -> bool:
            async with self._admin() as nn:
                r = await nn.call("setSafeMode", cn.SetSafeModeRequestProto(action=cn.SAFEMODE_GET))
                return bool(r.result)

        with contextlib.suppress(OSError, QjmError):
            return asyncio.run(ask())
        return False

    def leave_safe_mode(self) -> None:
        """dfsadmin -safemode leave on the active, noted in the summary."""
        from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn

        async def leave() -> None:
            async with self._admin() as nn:
                await nn.call("setSafeMode", cn.SetSafeModeRequestProto(action=cn.SAFEMODE_LEAVE))

        with contextlib.suppress(OSError, QjmError):
            asyncio.run(leave())
            self.summary.safe_mode_left += 1
            self.say("the active stayed in safe mode: left it, as an operator would")

    def read_with(self, client: Any) -> Callable[[str], bytes]:
        """A reader of whole files through client."""

        def read(path: str) -> bytes:
            with client.read(path) as f:
                return bytes(f.read())

        return read

    def scanner_found(self) -> int:
        """Corrupt replicas the DataNodes' scanners found (their /status)."""
        c = self.control
        assert c is not None
        total = 0
        for d in c.daemons.values():
            if d.get("kind") == "datanode":
                url = f"{d.get('scheme') or 'http'}://{d['http']}/status"
                with (
                    contextlib.suppress(OSError, ValueError, KeyError),
                    urllib.request.urlopen(url, timeout=10) as r,
                ):
                    total += int(json.load(r)["scanner"]["corrupt_found"])
        return total


def _fsck_tail(text: str) -> str:
    """The counts of an fsck report worth keeping."""
    keep = ("Total files", "Total blocks", "Under-replicated", "Missing blocks", "Corrupt blocks")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(keep)]
    return "; ".join(lines[:5] + text.rstrip().splitlines()[-1:])


def prepare(directory: Path) -> None:
    """An empty run directory (an earlier run's is removed; anything else refused)."""
    if directory.exists() and any(directory.iterdir()):
        if not (directory / MARKER).exists():
            raise LaunchError(f"{directory} is not empty and holds no earlier data chaos run")
        with contextlib.suppress(LaunchError, OSError):
            cluster_down(directory)
        shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("a data chaos run's directory: the next run removes it\n")


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="make chaos-data ARGS=...",
        description="File bytes under DataNode kills, flipped replicas and NameNode kills; "
        "every acknowledged file must read back at the end. Exit 0: none lost or changed.",
    )
    p.add_argument("--seed", type=int, help="the schedule's seed (default: a random one)")
    p.add_argument("--actions", type=int, default=12, help="faults to make (default 12)")
    p.add_argument("--writers", type=int, default=3, help="writer threads (default 3)")
    p.add_argument("--dir", default="data-chaos-run", help="the run's directory")
    p.add_argument(
        "--kinds", default=",".join(DATA_KINDS), help="comma-separated fault kinds (all)"
    )
    args = p.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = [k for k in kinds if k not in DATA_WEIGHTS]
    if unknown or not kinds:
        p.error(f"unknown fault kinds {unknown}; the kinds are {', '.join(DATA_KINDS)}")
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    directory = Path(args.dir).resolve()
    try:
        prepare(directory)
        run = DataRun(seed, directory, args.actions, args.writers, kinds)
        s = run.run()
    except (LaunchError, OSError) as e:
        print(f"data chaos run failed (seed {seed}): {e}", file=sys.stderr)
        return EXIT_FAILED
    (directory / "data-chaos-summary.json").write_text(json.dumps(asdict(s), indent=2))
    print(
        f"seed {seed}: {s.files_acked} files ({s.bytes_acked} bytes) acknowledged, "
        f"{s.writes_failed} writes failed ({len(s.unacked_damaged)} of their files left "
        f"damaged by their clients; safe mode left {s.safe_mode_left} time(s)), "
        f"{s.replicas_flipped} replicas flipped "
        f"({s.scanner_found} found by the scanners), reads {s.reads_ok} ok / "
        f"{s.reads_failed} failed / {len(s.reads_wrong)} wrong; healthy: {s.healthy}; "
        f"lost {len(s.lost)}, changed {len(s.changed)}; {s.seconds}s"
    )
    return 0 if s.ok else EXIT_BAD


if __name__ == "__main__":
    sys.exit(main())
