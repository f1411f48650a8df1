"""Side by side in one run: the disk's ideal, etcd, ZooKeeper and qjm, 1 and 64 writers.

Every system is started once (3 members or copies each, loopback, temp dirs on the same
disk) and measured in alternating rounds, so drift on the machine hits all of them alike.
Each writer commits one 200-byte record and waits for it before the next. Plus the round
trip of 200 bytes over plain asyncio TCP and over qjm.ipc (Hadoop IPC).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from benchmarks import disk, echo, etcd, qjm_write, zookeeper
from benchmarks.common import RECORD, Result, Sample, cpu_seconds, journalnodes

SECONDS = 3.0
ROUNDS = 3
WARMUP_S = 1.0
FSYNC_S = 1.0
WRITERS = (1, 64)
GOAL_P50_MS = 0.5
GOAL_OF_IDEAL = 0.5
GOAL_TIMES = 20.0

Measure = Callable[[int, float, str], Sample]


@dataclass
class Run:
    """What one comparison run measured, and what it had to skip."""

    results: dict[tuple[str, int], Result] = field(default_factory=dict)
    fsync: Result = field(default_factory=Result)
    skipped: dict[str, str] = field(default_factory=dict)
    qjm_per_batch: dict[int, float | None] = field(default_factory=dict)

    def get(self, name: str, writers: int) -> Result | None:
        """The result of name at writers, if it was measured."""
        r = self.results.get((name, writers))
        return r if r is not None and r.samples else None


def _systems(
    stack: contextlib.ExitStack, skipped: dict[str, str], pids: dict[str, list[int]]
) -> dict[str, Measure]:
    """Start every system; returns how to measure each, and fills in its server pids."""
    systems: dict[str, Measure] = {"disk ideal": lambda w, s, _t: disk.ideal(w, s)}
    print("  starting 3 JournalNodes ...", flush=True)
    addrs = stack.enter_context(journalnodes(3, pids.setdefault("qjm", [])))
    uri = f"qjournal://{';'.join(addrs)}/bench"
    qjm_write.format_journal(uri)
    systems["qjm"] = lambda w, s, _t: qjm_write.measure(uri, w, s)
    try:
        print("  starting etcd ...", flush=True)
        leader = stack.enter_context(etcd.cluster(3, pids.setdefault("etcd", [])))
        systems["etcd"] = lambda w, s, t: etcd.measure(leader, w, s, t)
    except (OSError, TimeoutError, RuntimeError) as e:
        skipped["etcd"] = str(e)
    try:
        print("  starting ZooKeeper ...", flush=True)
        zk = stack.enter_context(zookeeper.cluster(3, pids.setdefault("ZooKeeper", [])))
        systems["ZooKeeper"] = lambda w, s, t: zookeeper.measure(zk, w, s, t)
    except (OSError, TimeoutError, RuntimeError) as e:
        skipped["ZooKeeper"] = str(e)
    tcp = stack.enter_context(echo.server("tcp", pids.setdefault("asyncio TCP round trip", [])))
    systems["asyncio TCP round trip"] = lambda w, s, _t: echo.measure("tcp", tcp, w, s)
    why = echo.ipc_available()
    if why is None:
        ipc = stack.enter_context(echo.server("ipc", pids.setdefault("qjm.ipc round trip", [])))
        systems["qjm.ipc round trip"] = lambda w, s, _t: echo.measure("ipc", ipc, w, s)
    else:
        skipped["qjm.ipc round trip"] = f"qjm.ipc is not importable here ({why})"
    return systems


def _timed(fn: Measure, pids: list[int], writers: int, tag: str) -> Sample:
    """fn's sample, with the CPU its client (this process, unless fn set it) and servers used."""
    t0, s0 = os.times(), cpu_seconds(pids)
    sample = fn(writers, SECONDS, tag)
    t1, s1 = os.times(), cpu_seconds(pids)
    if sample.seconds > 0:
        if sample.client_cpu is None:
            sample.client_cpu = (t1.user - t0.user + t1.system - t0.system) / sample.seconds
        if pids:
            sample.server_cpu = (s1 - s0) / sample.seconds
    return sample


def measure_all() -> Run:
    """Start everything, warm it up, measure ROUNDS alternating rounds; stop everything."""
    run = Run()
    with contextlib.ExitStack() as stack:
        pids: dict[str, list[int]] = {}
        systems = _systems(stack, run.skipped, pids)
        for name, fn in systems.items():
            try:
                fn(max(WRITERS), WARMUP_S, "warmup")
            except Exception as e:
                run.skipped[name] = f"failed in warm-up: {e}"
        names = [n for n in systems if n not in run.skipped]
        for rnd in range(ROUNDS):
            run.fsync.samples.append(disk.fdatasync_4k(FSYNC_S))
            order = names[rnd % len(names) :] + names[: rnd % len(names)]
            for name in order:
                for w in WRITERS:
                    if name in run.skipped:
                        continue
                    print(f"  round {rnd + 1}/{ROUNDS}: {name}, {w} writers", flush=True)
                    try:
                        sample = _timed(systems[name], pids.get(name, []), w, f"r{rnd}w{w}")
                    except Exception as e:
                        run.skipped[name] = f"failed in round {rnd + 1}: {e}"
                        continue
                    run.results.setdefault((name, w), Result()).samples.append(sample)
        for w in WRITERS:
            r = run.get("qjm", w)
            run.qjm_per_batch[w] = r.per_batch if r else None
    return run


def _num(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if x is None or x != x else fmt.format(x)


def _ratio(a: Result | None, b: Result | None) -> float | None:
    if a is None or b is None or not b.records_per_s:
        return None
    return a.records_per_s / b.records_per_s


def render(run: Run) -> str:
    """The markdown section: the table, the ratios, the goals, the notes."""
    lines = [
        "## Side by side: disk ideal, qjm, etcd, ZooKeeper (one run, alternating rounds)",
        "",
        f"3 members or copies each on loopback, data in temp dirs under {tempfile.gettempdir()}"
        f" (one disk), {RECORD}-byte",
        "records; every writer commits one record and waits for it before its next.",
        f"{ROUNDS} rounds of {SECONDS:g} s per system and writer count, systems alternating",
        f"(after a {WARMUP_S:g} s warm-up each); records/s over all rounds, p50 and p99 the",
        "median of the rounds'. The clients are Python: qjm is `qjm journal write --concurrency N",
        f"--duration {SECONDS:g} --size {RECORD - 17} --finalize` (a fresh writer per run); etcd",
        "3.4 through its JSON gateway (`POST /v3/kv/put`, aiohttp, a new key per put) at the",
        "leader; ZooKeeper 3.8 with kazoo's async create of sequential znodes, one session to the",
        "leader. The disk ideal is 3 threads appending batches of min(writers, 64) records and",
        "fdatasyncing each (records/s of the second-fastest copy, latency per batch). CPU is",
        "the share of one core used while measuring: the client's, and the 3 servers' together.",
        "",
        "| system | writers | records/s | p50 ms | p99 ms | client CPU | servers' CPU |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    f = run.fsync
    if f.samples:
        lines.append(
            f"| fdatasync of a 4 KiB append (1 thread) | 1 | {_num(f.records_per_s)} | "
            f"{f.p50_ms:.3f} | {f.p99_ms:.3f} | | |"
        )
    for name in (
        "disk ideal",
        "qjm",
        "etcd",
        "ZooKeeper",
        "asyncio TCP round trip",
        "qjm.ipc round trip",
    ):
        if all(run.get(name, w) is None for w in WRITERS):
            why = run.skipped.get(name, "not measured").splitlines()[0]
            lines.append(f"| {name} | - | skipped: {why} | - | - | - | - |")
            continue
        for w in WRITERS:
            r = run.get(name, w)
            if r is None:
                lines.append(f"| {name} | {w} | - | - | - | - | - |")
                continue
            lines.append(
                f"| {name} | {w} | {_num(r.records_per_s)} | {r.p50_ms:.3f} | {r.p99_ms:.3f} | "
                f"{_num(r.client_cpu, '{:.0%}')} | {_num(r.server_cpu, '{:.0%}')} |"
            )
    lines += ["", "| ratio of records/s | 1 writer | 64 writers |", "|---|---:|---:|"]
    for label, other in (
        ("qjm / etcd", "etcd"),
        ("qjm / ZooKeeper", "ZooKeeper"),
        ("qjm / disk ideal", "disk ideal"),
    ):
        cells = [_num(_ratio(run.get("qjm", w), run.get(other, w)), "{:.2f}x") for w in WRITERS]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    lines += ["", "Goals:", "", "| goal | measured | met? |", "|---|---|---|"]
    lines += _goals(run)
    lines += ["", *_notes(run), ""]
    return "\n".join(lines)


def _goals(run: Run) -> list[str]:
    out = []
    q1, q64 = run.get("qjm", 1), run.get("qjm", 64)
    if q1 is not None and run.fsync.samples:
        over = q1.p50_ms - run.fsync.p50_ms
        met = over <= GOAL_P50_MS
        verdict = "met" if met else f"not met, by {over - GOAL_P50_MS:.2f} ms"
        lines = (
            f"qjm p50 {q1.p50_ms:.2f} ms vs fdatasync p50 {run.fsync.p50_ms:.2f} ms: +{over:.2f} ms"
        )
        out.append(
            f"| 1 writer: commit p50 within {GOAL_P50_MS} ms of the fdatasync p50 | {lines} | {verdict} |"
        )
    ideal = _ratio(q64, run.get("disk ideal", 64))
    if ideal is not None:
        verdict = (
            "met" if ideal >= GOAL_OF_IDEAL else f"not met: {GOAL_OF_IDEAL / ideal:.1f}x short"
        )
        out.append(
            f"| 64 writers: ≥ {GOAL_OF_IDEAL:.0%} of the disk ideal | {ideal:.1%} | {verdict} |"
        )
    for other in ("etcd", "ZooKeeper"):
        times = _ratio(q64, run.get(other, 64))
        if times is None:
            out.append(f"| 64 writers: ≥ {GOAL_TIMES:.0f}x {other} | not measured | - |")
            continue
        verdict = "met" if times >= GOAL_TIMES else f"not met: {GOAL_TIMES / times:.1f}x short"
        out.append(f"| 64 writers: ≥ {GOAL_TIMES:.0f}x {other} | {times:.1f}x | {verdict} |")
    return out


def _notes(run: Run) -> list[str]:
    notes = []
    q1, tcp1, ipc1 = (
        run.get("qjm", 1),
        run.get("asyncio TCP round trip", 1),
        run.get("qjm.ipc round trip", 1),
    )
    if q1 is not None and run.fsync.samples:
        parts = [f"fdatasync {run.fsync.p50_ms:.2f} ms"]
        if tcp1 is not None:
            parts.append(f"a plain TCP round trip {tcp1.p50_ms:.3f} ms")
        if ipc1 is not None:
            parts.append(f"a qjm.ipc round trip {ipc1.p50_ms:.3f} ms")
        notes.append(
            f"- One writer: a commit is a round trip to the JournalNodes and a fdatasync there, "
            f"plus the Python work on both sides; on this run {', '.join(parts)}, and the "
            f"commit {q1.p50_ms:.2f} ms. What is above the sum is client and JournalNode code."
        )
    pb = run.qjm_per_batch.get(64)
    q64, ideal64 = run.get("qjm", 64), run.get("disk ideal", 64)
    if pb is not None and q64 is not None and ideal64 is not None:
        notes.append(
            f"- 64 writers: qjm carried {pb:.1f} records per batch (group commit) against the "
            f"disk ideal's 64, and its batch p50 is {q64.p50_ms:.2f} ms against the ideal's "
            f"{ideal64.p50_ms:.2f} ms per fdatasync: the gap is the time per batch spent outside "
            "the disk (the RPC to each JournalNode, framing and checks in Python on the client "
            "and on 3 nodes)."
        )
    for name in ("qjm", "etcd", "ZooKeeper"):
        r = run.get(name, 64)
        if r is None or r.client_cpu is None:
            continue
        cpu, servers = r.client_cpu, r.server_cpu or 0.0
        cores = os.cpu_count() or 1
        if cpu >= 0.8:
            verdict = "about one core busy: the client's own Python work limits this rate"
        elif cpu + servers >= 0.75 * cores:
            verdict = (
                f"together {cpu + servers:.0%} of the machine's {cores} cores: CPU, not the "
                "disk, limits this rate"
            )
        else:
            verdict = (
                "neither the client nor the machine's CPU is saturated by this system: its "
                "time goes to waiting (disk, network, and CPU held by any other work)"
            )
        notes.append(
            f"- {name}, 64 writers: the client used {cpu:.0%} of a core, the 3 servers "
            f"{servers:.0%}; {verdict}."
        )
    notes.append(
        f"- The machine has {os.cpu_count()} cores: the 3 servers of a system and its client "
        "share them, so a system's own CPU use per record matters as much as its disk."
    )
    for name, why in run.skipped.items():
        notes.append(f"- {name}: skipped — {why.splitlines()[0] if why else 'no reason given'}")
    return notes


def run() -> str:
    """Measure side by side; return a markdown section."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    result = measure_all()
    took = time.perf_counter() - start
    after = os.getloadavg()[0]
    text = render(result)
    busy = ""
    # The load after includes this benchmark's own processes; only the load before
    # says whether other work shared the machine.
    if load > (os.cpu_count() or 1):
        busy = (
            " The machine was busy with other work (load above its core count): absolute "
            "latencies are inflated; the ratios, from alternating rounds, are the fairer reading."
        )
    return text + (
        f"\nThis section took {took:.0f} s; load average (1 min) {load:.2f} before, "
        f"{after:.2f} after.{busy}\n"
    )


if __name__ == "__main__":
    print(run())
