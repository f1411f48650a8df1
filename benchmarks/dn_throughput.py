"""DataNode throughput: a 1 GiB file with replication 3 through 3 DataNode processes.

    PYTHONPATH=src python -m benchmarks.dn_throughput [--mib 1024] [--rounds 3] [--py-spy PATH]
        [--markdown]

On one temp dir of this machine's disk, in one run, alternating the two (--rounds times):

- the disk's ideal for 3 copies: 3 threads each write the file's bytes to a file of their
  own sequentially (8 MiB writes) with an fdatasync per 128 MiB (where a DataNode syncs: at
  each block's close, design §B.1); the rate is the file's bytes over the slowest copy's time;
- the disk's sequential read of one of those files, after the page cache was dropped;
- a `qjm cluster` (3 JournalNodes, 2 NameNodes, 3 DataNodes) on the same disk: hdfs-native
  (HDFS's client protocol, in Rust) writes the file with replication 3 in 128 MiB blocks,
  each through a pipeline of the 3 DataNodes, from create to close; then, after dropping the
  page cache, reads it back, its CRC32C compared with what was written.

The goals: the write at least 50 % of the disk's 3-copy rate, the read at least 70 % of the
disk's sequential read, each compared within its round; the median round is the result.
With --py-spy, each DataNode is sampled while the last round writes and reads, and the top
of each profile is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crc32c
import hdfs_native

from benchmarks.common import cpu_seconds, timed_section
from qjm.cluster.hadoop_conf import hadoop_jars
from qjm.cluster.launcher import cluster_down, cluster_up, datanode_liveness
from qjm.datanode import transfer_client as tc
from qjm.datanode import transfer_io as tio
from qjm.datanode.replica_store import ExtendedBlock
from qjm.hdfs import datatransfer as codec
from qjm.hdfs.proto import datatransfer_pb2 as dt
from qjm.ipc import IpcClient
from qjm.namenode import protocols

COPIES = 3
BUF = 8 * 1024 * 1024
BLOCK = 128 * 1024 * 1024
GOAL_WRITE = 0.50
GOAL_READ = 0.70
ROUNDS = 3  # disk, then cluster, alternated; the median round is reported


def drop_page_cache(paths: list[Path]) -> str:
    """Empty the page cache of the files under paths: the kernel's drop_caches when this
    process may write it (root), else posix_fadvise(DONTNEED) per file; which one worked."""
    os.sync()
    with contextlib.suppress(OSError), open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("1\n")
        f.flush()
        return "drop_caches"
    for root in paths:
        for p in [root] if root.is_file() else root.rglob("*"):
            if p.is_file():
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
    return "posix_fadvise(DONTNEED)"


def _write_copy(path: Path, data: memoryview, size: int, took: list[float]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        t = time.perf_counter()
        written = 0
        while written < size:
            n = min(len(data), size - written)
            os.write(fd, data[:n])
            written += n
            if written % BLOCK == 0 or written == size:
                os.fdatasync(fd)
        took.append(time.perf_counter() - t)
    finally:
        os.close(fd)


def disk_ideal(root: Path, size: int, data: memoryview) -> dict[str, Any]:
    """The disk's 3-copy sequential write and its sequential read of one copy, in MiB/s."""
    took: list[float] = []
    paths = [root / f"copy{i}" for i in range(COPIES)]
    threads = [threading.Thread(target=_write_copy, args=(p, data, size, took)) for p in paths]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    write_s = time.perf_counter() - start
    if len(took) != COPIES:
        raise RuntimeError("a disk writer thread failed")
    dropped = drop_page_cache(paths)
    buf = bytearray(BUF)
    fd = os.open(paths[0], os.O_RDONLY)
    try:
        t = time.perf_counter()
        got = 0
        while n := os.readv(fd, [buf]):
            got += n
        read_s = time.perf_counter() - t
    finally:
        os.close(fd)
    assert got == size
    for p in paths[1:]:
        p.unlink()  # copy0 stays: FsShell puts it
    return {
        "write_mib_s": size / 2**20 / write_s,
        "read_mib_s": size / 2**20 / read_s,
        "dropped_by": dropped,
    }


@contextlib.contextmanager
def _sampling(py_spy: str | None, pids: dict[str, int], out: Path, what: str) -> Iterator[None]:
    """py-spy record of each pid while the block runs (nothing without py_spy)."""
    procs = []
    if py_spy:
        for name, pid in pids.items():
            dest = out / f"{what}-{name}.txt"
            procs.append(
                subprocess.Popen(
                    [
                        py_spy,
                        "record",
                        "-p",
                        str(pid),
                        "-f",
                        "raw",
                        "-r",
                        "200",
                        "--gil",
                        "-o",
                        str(dest),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
    try:
        yield
    finally:
        for p in procs:
            p.send_signal(2)  # SIGINT: py-spy writes its profile and exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(30)


def top_frames(raw: Path, n: int = 25, *, leaf: bool = False) -> list[tuple[str, float]]:
    """The functions with the most samples anywhere on the stack (inclusive %), or at its
    top (leaf, self %), from a py-spy raw (collapsed stacks) profile."""
    total = 0
    counts: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, num = line.rpartition(" ")
        if not num.isdigit():
            continue
        k = int(num)
        total += k
        frames = stack.split(";")
        for frame in frames[-1:] if leaf else set(frames):
            counts[frame] = counts.get(frame, 0) + k
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:n]
    return [(f, 100.0 * c / total) for f, c in ranked] if total else []


def _wait_live(nn_rpc: str, want: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        live = asyncio.run(datanode_liveness(nn_rpc))
        if sum(1 for v in live.values() if v == "live") >= want:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{want} DataNodes not live after {timeout_s:.0f} s: {live}")
        time.sleep(0.2)


def fsshell(conf: Path, *args: str, stdout: Any = subprocess.DEVNULL) -> float:
    """Seconds `hadoop fs <args>` (Apache Hadoop's FsShell, pyspark's jars, the JVM's
    default JIT) took; RuntimeError with its stderr when it failed."""
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("no java on PATH: FsShell needs a JRE (make install brings one)")
    argv = [java, "-cp", f"{conf}:{hadoop_jars()}/*", "org.apache.hadoop.fs.FsShell", *args]
    env = {**os.environ, "HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": getpass.getuser()}
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, env=env, check=False)
    took = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(
            f"hadoop fs {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]!r}"
        )
    return took


def _fsshell_rates(conf: Path, local: Path, size: int, data_dirs: list[Path]) -> dict[str, Any]:
    """FsShell's -put of the local file with replication 3 and -cat of it, in MiB/s, with and
    without the JVM's start (a `-test -e /` run each time)."""
    start_s = min(fsshell(conf, "-test", "-e", "/") for _ in range(2))
    drop_page_cache([local])
    put_s = fsshell(conf, "-D", f"dfs.replication={COPIES}", "-put", str(local), "/fsshell")
    drop_page_cache(data_dirs)
    cat_s = fsshell(conf, "-cat", "/fsshell")
    return {
        "jvm_start_s": start_s,
        "write_mib_s": size / 2**20 / put_s,
        "read_mib_s": size / 2**20 / cat_s,
        "write_mib_s_after_start": size / 2**20 / max(put_s - start_s, 1e-9),
        "read_mib_s_after_start": size / 2**20 / max(cat_s - start_s, 1e-9),
    }


def _native_round(
    client: Any, path: str, size: int, whole: bytes, dn_pids: list[int], data_dir: Path
) -> dict[str, float]:
    """hdfs-native's write (replication 3) and read of one file of size bytes, with the CPU
    the DataNodes and this client spent on each."""
    want = 0
    cpu0, own0 = cpu_seconds(dn_pids), time.process_time()
    t = time.perf_counter()
    w = client.create(path, hdfs_native.WriteOptions(replication=COPIES))
    written = 0
    while written < size:
        n = min(len(whole), size - written)
        chunk = whole if n == len(whole) else whole[:n]
        w.write(chunk)
        want = crc32c.crc32c(chunk, want)
        written += len(chunk)
    w.close()
    write_s = time.perf_counter() - t
    write_cpu = (cpu_seconds(dn_pids) - cpu0) / write_s
    write_client = (time.process_time() - own0) / write_s
    status = client.get_file_info(path)
    if status.length != size:
        raise RuntimeError(f"{path} has {status.length} bytes, expected {size}")
    drop_page_cache([data_dir])
    cpu0, own0 = cpu_seconds(dn_pids), time.process_time()
    t = time.perf_counter()
    got, crc = 0, 0
    with client.read(path) as r:
        while chunk := r.read(BUF):
            crc = crc32c.crc32c(chunk, crc)
            got += len(chunk)
    read_s = time.perf_counter() - t
    read_cpu = (cpu_seconds(dn_pids) - cpu0) / read_s
    read_client = (time.process_time() - own0) / read_s
    if got != size or crc != want:
        raise RuntimeError(f"read {got} bytes (crc {crc:#x}), wrote {size} (crc {want:#x})")
    return {
        "write_mib_s": size / 2**20 / write_s,
        "read_mib_s": size / 2**20 / read_s,
        "write_dn_cores": write_cpu,
        "read_dn_cores": read_cpu,
        "write_client_cores": write_client,
        "read_client_cores": read_client,
    }


async def _receive_block(node: Any, block: ExtendedBlock) -> int:
    """Read a whole replica from node with its sums, as a reader that only receives (no
    check, no copy out); the data bytes it got."""
    reader, writer = await tc.connect(node, 60.0)
    try:
        op = dt.OpReadBlockProto(
            header=tc.client_header(block, "bench"),
            offset=0,
            len=block.num_bytes,
            sendChecksums=True,
        )
        writer.write(codec.encode_op(codec.Op.READ_BLOCK, op))
        resp = await tio.read_response(reader, "READ_BLOCK answer")
        if resp.status != dt.SUCCESS:
            raise RuntimeError(f"READ_BLOCK of {block} refused: {resp.message}")
        got = 0
        while True:
            header, _, _ = await tio.read_packet_frame(reader)
            got += header.data_len
            if header.last_packet_in_block:
                break
        writer.write(codec.delimited(dt.ClientReadStatusProto(status=dt.SUCCESS)))
        await writer.drain()
    finally:
        await tc.close_writer(writer)
    return got


def receive_only_rate(nn_rpc: str, path: str, size: int, dn_pids: list[int]) -> dict[str, float]:
    """The DataNodes' read of path's blocks, one after another from each block's first
    location, to a reader that only receives: what they serve when the client costs nothing."""

    async def run() -> float:
        spec = protocols.CLIENT_METHODS["getBlockLocations"]
        ipc = IpcClient(nn_rpc, protocols.CLIENT_PROTOCOL, reconnect_attempts=1)
        try:
            req = spec.request(src=path, offset=0, length=size)
            located = (
                await ipc.call("getBlockLocations", req, spec.response, timeout=10)
            ).locations  # type: ignore[attr-defined]
        finally:
            await ipc.close()
        t = time.perf_counter()
        got = 0
        for lb in located.blocks:
            got += await _receive_block(lb.locs[0], tc.block_from_proto(lb.b))
        took = time.perf_counter() - t
        if got != size:
            raise RuntimeError(f"the DataNodes sent {got} bytes of {path}, expected {size}")
        return took

    cpu0 = cpu_seconds(dn_pids)
    took = asyncio.run(run())
    return {"mib_s": size / 2**20 / took, "dn_cores": (cpu_seconds(dn_pids) - cpu0) / took}


def _median_round(rounds: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The round whose ratio `key` is the median."""
    return sorted(rounds, key=lambda r: r[key])[len(rounds) // 2]


def measure(mib: int = 1024, py_spy: str | None = None, rounds: int = ROUNDS) -> dict[str, Any]:
    """The disk's ideal and the cluster's rates on one temp dir, in rounds that alternate
    the two, so both see the same state of a disk whose speed drifts."""
    size = mib * 2**20
    data = memoryview(os.urandom(BUF))
    whole = bytes(data)  # hdfs-native takes bytes fast, a memoryview byte by byte
    root = Path(tempfile.mkdtemp(prefix="qjm-bench-dn-"))
    cdir = root / "cluster"
    try:
        info = cluster_up(cdir, journalnodes=3, namenodes=2, datanodes=COPIES)
        try:
            nn = info["nn1"]["rpc"]
            _wait_live(nn, COPIES)
            dn_pids = {n: int(d["pid"]) for n, d in info.items() if n.startswith("dn")}
            client = hdfs_native.Client(f"hdfs://{nn}")
            results = []
            for i in range(rounds):
                disk = disk_ideal(root, size, data)
                sampled = py_spy if i == rounds - 1 else None
                with _sampling(sampled, dn_pids, root, "round"):
                    native = _native_round(
                        client, f"/bench{i}", size, whole, list(dn_pids.values()), cdir / "data"
                    )
                drop_page_cache([cdir / "data"])
                native["receive_only"] = receive_only_rate(
                    nn, f"/bench{i}", size, list(dn_pids.values())
                )
                client.delete(f"/bench{i}")
                results.append(
                    {
                        "disk": disk,
                        "cluster": native,
                        "write_ratio": native["write_mib_s"] / disk["write_mib_s"],
                        "read_ratio": native["read_mib_s"] / disk["read_mib_s"],
                    }
                )
            conf = Path(info["hadoop_conf"])
            java = _fsshell_rates(conf, root / "copy0", size, [cdir / "data"])
            if client.get_file_info("/fsshell").length != size:
                raise RuntimeError("FsShell's /fsshell does not hold the file's bytes")
        finally:
            cluster_down(cdir)
        disk_dev = subprocess.run(
            ["df", "--output=source", str(root)], capture_output=True, text=True, check=False
        ).stdout.split()[-1:]
        profiles = {
            f"{f.stem} {kind}": top_frames(f, leaf=kind == "self")
            for f in sorted(root.glob("*-dn*.txt"))
            if f.stat().st_size
            for kind in ("inclusive", "self")
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "mib": mib,
        "rounds": results,
        "write": _median_round(results, "write_ratio"),
        "read": _median_round(results, "read_ratio"),
        "fsshell": java,
        "device": disk_dev[0] if disk_dev else "?",
        "cores": os.cpu_count() or 1,
        "profiles": profiles,
    }


def cpu_ceiling(rate_mib_s: float, cores_used: float, cores: int) -> float:
    """The rate at which the CPU measured per MiB would take all of the machine's cores."""
    return rate_mib_s * cores / cores_used if cores_used > 0 else float("inf")


BEFORE = (
    "Before the write-behind and the read-ahead (measured 2026-11-27 with the code before "
    "them, same benchmark, run just before, load average 6.3 to 7.2): hdfs-native wrote "
    "27 MiB/s (16 % of a 164 MiB/s disk) with the DataNodes at 1.10 cores (14 ms of CPU per "
    "MiB each), and read 131 MiB/s (9 % of 1405 MiB/s) at 3.5 ms of DataNode CPU per MiB; "
    "FsShell wrote 16 MiB/s and read 57 MiB/s (18 and 93 after its JVM's start). A first "
    "in-process measurement had given 11 and 50 MiB/s. Before the chunk sums checked at "
    "once, the writeback behind the writes and the batched acks (measured 2026-11-27 on "
    "the same machine, quiet, one round of the same benchmark): hdfs-native wrote 127 MiB/s "
    "(46 % of a 276 MiB/s disk) at 3.3 ms of CPU per MiB per DataNode, each pipeline "
    "standing still ~0.25 s at every block boundary, and read 621 MiB/s (37 % of 1683)."
)

PROFILE = [
    "What changed to get here, from py-spy profiles of the DataNodes while writing (design "
    "§B.1, §B.3, §B.4):",
    "",
    "- Packets that continue a block on a chunk boundary go to a bounded write-behind "
    "(4 MiB) that hands whatever has queued to the disk in one `pwritev` while the next "
    "packets are read and forwarded; the checked sums are stored as they came (they were "
    "computed twice); deadlines are `asyncio.timeout` scopes instead of a task per read, "
    "drain and ack; a write to a peer waits only on a full 1 MiB buffer; a packet's parts "
    "go to the next node in one send.",
    "- A node with a mirror checks a packet's 128 chunk sums at once (one table gather and "
    "one CRC32C call over the packet) instead of 128 library calls; the last node still "
    "checks chunk by chunk.",
    "- The kernel's writeback of a replica starts behind every 8 MiB written, so the fsync "
    "at a block's close no longer stops the pipeline at each block boundary.",
    "- The acks a responder makes before it next waits go upstream in one write.",
    "- Reads: uvloop has no `sendfile`, so 1 MiB of data and sums is read at once, the next "
    "1 MiB read while it is sent, and the packets framed from views of it.",
]


def _round_row(i: int, r: dict[str, Any]) -> str:
    d, c = r["disk"], r["cluster"]
    raw = c["receive_only"]["mib_s"]
    return (
        f"| {i + 1} | {d['write_mib_s']:.0f} | {c['write_mib_s']:.0f} | {r['write_ratio']:.0%} "
        f"| {d['read_mib_s']:.0f} | {c['read_mib_s']:.0f} | {r['read_ratio']:.0%} "
        f"| {raw:.0f} ({raw / d['read_mib_s']:.0%}) |"
    )


def _cpu_sentence(what: str, r: dict[str, Any], goal: float, cores: int) -> str:
    """What the CPU measured in round r allows, against what the goal asks."""
    d, c = r["disk"], r["cluster"]
    rate = c[f"{what}_mib_s"]
    dn, client = c[f"{what}_dn_cores"], c[f"{what}_client_cores"]
    used = dn + client
    ceiling = cpu_ceiling(rate, used, cores)
    wanted = goal * d[f"{what}_mib_s"]
    per = "per DataNode" if what == "write" else "in the DataNode"
    dn_ms = 1000 * dn / rate / (COPIES if what == "write" else 1)
    verdict = (
        "more than the CPU it costs here allows, whatever the disk does"
        if ceiling < wanted
        else "within what the CPU allows, so CPU alone does not explain a shortfall"
    )
    return (
        f"{what.capitalize()} ({rate:.0f} MiB/s): the DataNodes used {dn:.2f} cores "
        f"({dn_ms:.1f} ms of CPU per MiB {per}), the client {client:.2f} "
        f"({1000 * client / rate:.1f} ms per MiB), {used:.2f} of the {cores} cores together. "
        f"At that CPU per MiB the {cores} cores carry at most {ceiling:.0f} MiB/s; the goal "
        f"asks for {wanted:.0f} MiB/s ({goal:.0%} of {d[f'{what}_mib_s']:.0f}), {verdict}."
    )


def _receive_only_sentence(r: dict[str, Any]) -> str:
    """What the DataNodes served when the reader cost nothing, against hdfs-native."""
    raw, d = r["cluster"]["receive_only"], r["disk"]
    native = r["cluster"]["read_mib_s"]
    return (
        f"The same file's blocks read from the DataNodes by a reader that only receives "
        f"(packets framed, nothing checked or copied out; after the page cache was dropped): "
        f"{raw['mib_s']:.0f} MiB/s, {raw['mib_s'] / d['read_mib_s']:.0%} of the disk's read, "
        f"the DataNodes at {raw['dn_cores']:.2f} cores "
        f"({1000 * raw['dn_cores'] / raw['mib_s']:.1f} ms per MiB); hdfs-native read "
        f"{native:.0f} MiB/s in the same round, so the DataNodes "
        + (
            "serve faster than the client takes."
            if raw["mib_s"] > 1.1 * native
            else "are no faster than the client takes."
        )
    )


def section(m: dict[str, Any], took_s: float, loads: tuple[str, str]) -> str:
    """The markdown section for the measured results."""
    from benchmarks.run import machine

    w, r, j = m["write"], m["read"], m["fsshell"]
    met_w = "met" if w["write_ratio"] >= GOAL_WRITE else "**not met**"
    met_r = "met" if r["read_ratio"] >= GOAL_READ else "**not met**"
    lines = [
        "## DataNode throughput",
        "",
        f"Goals: writing a 1 GiB file with replication 3 at least {GOAL_WRITE:.0%} of what the "
        f"disk allows for 3 copies; reading it at least {GOAL_READ:.0%} of the disk's "
        "sequential read.",
        "",
        f"`benchmarks/dn_throughput.py`, one run on {machine()}, on one temp dir of its disk "
        f"({m['device']}): a {m['mib']} MiB file, a `qjm cluster` of 3 JournalNodes, "
        "2 NameNodes and 3 DataNode processes; 128 MiB blocks, each written through a "
        "pipeline of the 3 DataNodes by hdfs-native (HDFS's client protocol, in Rust). The "
        "disk's ideal: 3 threads each writing the file's bytes to a file of their own, "
        "fdatasync per 128 MiB (where a DataNode syncs: at each block's close), and a "
        "sequential read of one copy. The page cache is dropped before each read "
        f"({w['disk']['dropped_by']}). This disk's speed drifts from minute to minute, so "
        f"the run alternates the two {len(m['rounds'])} times (the disk, then the cluster) "
        "and each round's ratio compares neighbours; the median round is the result.",
        "",
        "| round | disk write (MiB/s) | hdfs-native write | ratio | disk read | hdfs-native "
        "read | ratio | DataNodes to a receive-only reader |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(_round_row(i, x) for i, x in enumerate(m["rounds"])),
        "",
        "| | ratio (median round) | goal | FsShell (after its JVM's start) |",
        "|---|---:|---|---:|",
        f"| write, 3 copies | {w['write_ratio']:.0%} | {met_w} | {j['write_mib_s']:.0f} MiB/s "
        f"({j['write_mib_s_after_start']:.0f}) |",
        f"| read, one copy | {r['read_ratio']:.0%} | {met_r} | {j['read_mib_s']:.0f} MiB/s "
        f"({j['read_mib_s_after_start']:.0f}) |",
        "",
        f"- {_cpu_sentence('write', w, GOAL_WRITE, m['cores'])}",
        f"- {_cpu_sentence('read', r, GOAL_READ, m['cores'])}",
        f"- {_receive_only_sentence(r)}",
        f"- FsShell is Apache Hadoop's (`-put`, `-cat`, once, after the rounds); its JVM "
        f"takes {j['jvm_start_s']:.1f} s to start here (a `-test -e /`), and the rates after "
        "its start subtract that (rough: the start varies from run to run).",
        "",
        BEFORE,
        "",
        *PROFILE,
        "",
        f"This section took {took_s:.0f} s; load average (1 min) {loads[0]} before, "
        f"{loads[1]} after.",
        "",
    ]
    return "\n".join(lines)


def run() -> str:
    """Measure and return the markdown section."""
    return timed_section(measure, section)


def main() -> None:
    """Run the benchmark and print one JSON line (or the markdown section)."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--py-spy", help="path of py-spy: sample each DataNode while measuring")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="disk and cluster rounds")
    ap.add_argument("--markdown", action="store_true", help="print the docs section instead")
    args = ap.parse_args()
    if args.markdown:
        print(timed_section(lambda: measure(args.mib, args.py_spy, args.rounds), section))
        return
    m = measure(args.mib, args.py_spy, args.rounds)
    for name, frames in m.pop("profiles", {}).items():
        print(f"--- {name}")
        for frame, pct in frames:
            print(f"{pct:5.1f}% {frame}")
    print(json.dumps(m))


if __name__ == "__main__":
    main()
