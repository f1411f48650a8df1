"""What Kerberos costs: the same cluster open and with each hadoop.rpc.protection level.

One run starts, one after another, a cluster of 3 JournalNodes, 1 NameNode (active) and 1
DataNode open (simple auth) and with Kerberos at `authentication`, `integrity` (every RPC
frame signed) and `privacy` (every RPC frame encrypted), and measures on each:

- the journal: `qjm journal write` with 1 and with 64 concurrent writers, 200-byte records,
  on a journal of its own on the cluster's JournalNodes (as the NameNodes' principal);
- creates/s: create + complete of empty files from 16 connections in this process;
- block write and read: the median of 3 files of 32 MiB (1 MiB blocks, replication 1)
  written and read back with hdfs-native;
- the same with Apache Hadoop's own client (FsShell `-put` and `-cat` of a 256 MiB file, the
  JVM's start, timed on its own, taken off).

The rows are side by side; each protected level is also given as a share of the open one.
Block bytes go under the same level (`dfs.data.transfer.protection`, design §S.12): at
privacy a client that offers AES-CTR (`dfs.encrypt.data.transfer.cipher.suites`, in the
cluster's hadoop-conf) gets it, another the SASL layer's 3des; the DataNodes count the AES
streams, and the text says which each client got. The Java client also runs at privacy
without offering AES, for the difference.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import qjm_write
from benchmarks.common import load_average
from qjm import runtime
from qjm.cluster.hadoop_conf import hadoop_jars, read_site
from qjm.cluster.launcher import cluster_down, cluster_up, datanode_status
from qjm.config import NameNodeSettings, load_config
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient
from qjm.ipc.login import logged_in
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.protocols import CLIENT_PROTOCOL

MODES = ("open", "authentication", "integrity", "privacy")
JOURNAL_WRITERS = (1, 64)
JOURNAL_SECONDS = 3.0
CREATE_CLIENTS = 16
CREATE_SECONDS = 3.0
FILE_MIB = 32
BLOCK_ROUNDS = 3  # each block rate is the median of this many files
JAVA_FILE_MIB = 256  # large enough that the transfer, not the JVM's start, is timed
NO_AES = ("-D", "dfs.encrypt.data.transfer.cipher.suites=")  # a client offering no cipher
CALL_TIMEOUT_S = 30.0


def journal_rates(cluster: dict[str, Any]) -> dict[int, float]:
    """records/s of `qjm journal write` per writer count, on a journal of its own."""
    jns = [d["rpc"] for n, d in sorted(cluster.items()) if n.startswith("jn")]
    uri = f"qjournal://{';'.join(jns)}/bench"
    qjm_write.format_journal(uri, cluster["config"])
    rates = {}
    for writers in JOURNAL_WRITERS:
        sample = qjm_write.measure(uri, writers, JOURNAL_SECONDS, cluster["config"])
        rates[writers] = sample.records / sample.seconds
    return rates


async def _creates(address: str) -> float:
    """create + complete per second from CREATE_CLIENTS connections."""
    clients = [IpcClient(address, CLIENT_PROTOCOL) for _ in range(CREATE_CLIENTS)]
    count = 0
    try:
        for c in clients:  # connect (and authenticate) before the clock starts
            await c.call(
                "getFileInfo", cn.GetFileInfoRequestProto(src="/"), cn.GetFileInfoResponseProto
            )
        stop_at = time.perf_counter() + CREATE_SECONDS

        async def loop(k: int) -> None:
            nonlocal count
            c, i = clients[k], 0
            while time.perf_counter() < stop_at:
                path = f"/bench/c{k}/f{i}"
                req = cn.CreateRequestProto(
                    src=path,
                    masked=hdfs.FsPermissionProto(perm=0o644),
                    clientName=f"bench-{k}",
                    createFlag=cn.CREATE,
                    createParent=True,
                    replication=1,
                    blockSize=1 << 20,
                )
                r = await c.call("create", req, cn.CreateResponseProto, CALL_TIMEOUT_S)
                done = cn.CompleteRequestProto(
                    src=path, clientName=f"bench-{k}", fileId=r.fs.fileId
                )
                await c.call("complete", done, cn.CompleteResponseProto, CALL_TIMEOUT_S)
                i += 1
                count += 1

        started = time.perf_counter()
        await asyncio.gather(*(loop(k) for k in range(CREATE_CLIENTS)))
        return count / (time.perf_counter() - started)
    finally:
        await asyncio.gather(*(c.close() for c in clients))


def block_rates(conf_dir: Path) -> tuple[float, float]:
    """(write, read) MiB/s of FILE_MIB files through hdfs-native, each the median of
    BLOCK_ROUNDS files."""
    import hdfs_native

    config = read_site(conf_dir / "core-site.xml") | read_site(conf_dir / "hdfs-site.xml")
    client = hdfs_native.Client(config["fs.defaultFS"], config=config)
    options = hdfs_native.WriteOptions(block_size=1 << 20, replication=1, create_parent=True)
    with client.create("/bench/warm-up.bin", options) as f:  # connections and pipelines
        f.write(os.urandom(4 << 20))  # made before the clock runs, in every mode alike
    with client.read("/bench/warm-up.bin") as f:
        f.read()
    writes, reads = [], []
    for i in range(BLOCK_ROUNDS):
        data = os.urandom(FILE_MIB << 20)
        t0 = time.perf_counter()
        with client.create(f"/bench/blocks{i}.bin", options) as f:
            f.write(data)
        writes.append(FILE_MIB / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        with client.read(f"/bench/blocks{i}.bin") as f:
            back = f.read()
        reads.append(FILE_MIB / (time.perf_counter() - t0))
        if bytes(back) != data:
            raise RuntimeError("the file read back differs from what was written")
    return statistics.median(writes), statistics.median(reads)


def _fsshell(conf_dir: Path, kdc: dict[str, Any] | None, *args: str) -> float:
    """Seconds Apache Hadoop's FsShell took for args (full JIT), as the NameNodes' principal
    under Kerberos; RuntimeError with its stderr when it failed."""
    options = [f"-Djava.security.krb5.conf={kdc['krb5_conf']}"] if kdc else []
    argv = ["java", *options, "-cp", f"{conf_dir}:{hadoop_jars()}/*"]
    argv += ["org.apache.hadoop.fs.FsShell", *args]
    t = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, check=False, timeout=600)
    took = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"hadoop fs {' '.join(args)}: {r.stderr[-2000:]!r}")
    return took


def java_rates(conf_dir: Path, kdc: dict[str, Any] | None, *options: str) -> tuple[float, float]:
    """(write, read) MiB/s of a JAVA_FILE_MIB file through FsShell with options, the JVM's
    start (the median of three `-test -e /`) taken off each."""
    start_s = statistics.median(
        _fsshell(conf_dir, kdc, *options, "-test", "-e", "/") for _ in range(3)
    )
    with tempfile.NamedTemporaryFile(prefix="qjm-bench-java-") as local:
        local.write(os.urandom(JAVA_FILE_MIB << 20))
        local.flush()
        target = f"/bench/java{len(options)}.bin"
        put_s = _fsshell(conf_dir, kdc, *options, "-put", "-f", local.name, target)
        cat_s = _fsshell(conf_dir, kdc, *options, "-cat", target)
    return (
        JAVA_FILE_MIB / max(put_s - start_s, 1e-3),
        JAVA_FILE_MIB / max(cat_s - start_s, 1e-3),
    )


def aes_streams(cluster: dict[str, Any]) -> int:
    """Data transfer connections the cluster's DataNodes switched to AES-CTR so far (their
    /status), asked by host name so that SPNEGO finds the HTTP principal."""
    total = 0
    for d in cluster.values():
        if isinstance(d, dict) and d.get("kind") == "datanode":
            port = str(d["http"]).rpartition(":")[2]
            scheme = d.get("scheme") or "http"
            status = datanode_status(f"{scheme}://localhost:{port}", timeout=10)
            total += int(status.get("xceiver", {}).get("aes_connections", 0))
    return total


def measure_mode(root: Path, mode: str) -> dict[str, float]:
    """Start the cluster of mode, measure it, stop it."""
    directory = root / mode
    cluster = cluster_up(
        directory,
        journalnodes=3,
        namenodes=1,
        datanodes=1,
        namenode_settings=NameNodeSettings(block_size=1 << 20, default_replication=1),
        kerberos=mode != "open",
        rpc_protection="privacy" if mode == "open" else mode,
    )
    saved = {k: os.environ.get(k) for k in ("KRB5CCNAME", "KRB5_CONFIG")}
    try:
        kdc = cluster.get("kdc")
        if kdc:  # the NameNodes' principal: the journal's only caller, and the superuser;
            # the qjm commands and hdfs-native of this process read it from the environment
            os.environ.update(
                KRB5CCNAME=f"FILE:{kdc['admin_ccache']}", KRB5_CONFIG=kdc["krb5_conf"]
            )
        journal = journal_rates(cluster)
        settings = load_config(cluster["config"]).security
        with logged_in(settings, kdc["admin_ccache"] if kdc else ""):
            creates = runtime.run(_creates(cluster["nn1"]["rpc"]))
        conf_dir = Path(cluster["hadoop_conf"])
        with logged_in(settings, kdc["admin_ccache"] if kdc else ""):
            counted = [aes_streams(cluster)]
            write, read = block_rates(conf_dir)
            counted.append(aes_streams(cluster))
            java_write, java_read = java_rates(conf_dir, kdc)
            counted.append(aes_streams(cluster))
            if mode == "privacy":
                plain = java_rates(conf_dir, kdc, *NO_AES)
                counted.append(aes_streams(cluster))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cluster_down(directory)
    rates = {
        "journal_1": journal[1],
        "journal_64": journal[64],
        "creates": creates,
        "block_write": write,
        "block_read": read,
        "java_write": java_write,
        "java_read": java_read,
    }
    # how many of each client's data transfer streams ran AES-CTR (the DataNodes' count)
    rates |= {"native_aes": counted[1] - counted[0], "java_aes": counted[2] - counted[1]}
    if mode == "privacy":
        rates |= {"java_write_3des": plain[0], "java_read_3des": plain[1]}
        rates["java_3des_aes"] = counted[3] - counted[2]
    return rates


COLUMNS = (
    ("journal_1", "journal, 1 writer (records/s)"),
    ("journal_64", "journal, 64 writers (records/s)"),
    ("creates", f"creates/s ({CREATE_CLIENTS} clients)"),
    ("block_write", f"block write (MiB/s, median of {BLOCK_ROUNDS} x {FILE_MIB} MiB)"),
    ("block_read", "block read (MiB/s)"),
    ("java_write", f"Hadoop client write (MiB/s, {JAVA_FILE_MIB} MiB)"),
    ("java_read", "Hadoop client read (MiB/s)"),
)


def section(results: dict[str, dict[str, float]], took_s: float, loads: tuple[str, str]) -> str:
    """The markdown section of one run."""
    open_ = results["open"]
    lines = [
        "## What Kerberos costs (benchmarks.security)",
        "",
        f"The same cluster (3 JournalNodes, 1 NameNode, 1 DataNode) open and under Kerberos "
        f"at each `hadoop.rpc.protection`, one after another in one run ({took_s:.0f} s; "
        f"load average {loads[0]} before, {loads[1]} after). In brackets: the share of the "
        "open cluster's rate.",
        "",
        "| protection | " + " | ".join(title for _, title in COLUMNS) + " |",
        "|---" * (len(COLUMNS) + 1) + "|",
    ]
    for mode in MODES:
        row = results[mode]
        cells = []
        for key, _ in COLUMNS:
            share = f" ({row[key] / open_[key]:.0%})" if mode != "open" and open_[key] else ""
            cells.append(f"{row[key]:,.0f}{share}" if row[key] >= 10 else f"{row[key]:.1f}{share}")
        lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    privacy = results["privacy"]
    aes_gain = (
        privacy["java_write"] / privacy["java_write_3des"],
        privacy["java_read"] / privacy["java_read_3des"],
    )
    worst = min(
        (results[m][k] / open_[k], m, title) for m in MODES[1:] for k, title in COLUMNS if open_[k]
    )

    def cipher(key: str) -> str:
        n = int(privacy[key])
        return f"AES-CTR ({n} streams)" if n else "the SASL layer's 3des (no AES stream)"

    lines += [
        "",
        f"The largest cost measured: {worst[2]} under {worst[1]}, at {worst[0]:.0%} of the "
        "open rate. Block bytes are under the same protection level as the RPCs (design "
        "§S.12): integrity adds an HMAC-MD5 per wrapped message, privacy also encrypts. "
        "Which cipher each client's blocks went through at privacy, as the DataNode counted "
        f"its streams: hdfs-native {cipher('native_aes')}, the Java client "
        f"{cipher('java_aes')}, the Java client offering no cipher {cipher('java_3des_aes')}.",
        "",
        f"At privacy the Java client's blocks went through {cipher('java_aes')} at "
        f"{privacy['java_write']:,.0f} MiB/s written and {privacy['java_read']:,.0f} MiB/s read; "
        f"offering no cipher it got {privacy['java_write_3des']:,.1f} and "
        f"{privacy['java_read_3des']:,.1f} MiB/s: {aes_gain[0]:.1f}x and {aes_gain[1]:.1f}x "
        "as fast with the cipher negotiated.",
        "",
    ]
    return "\n".join(lines)


def measure() -> dict[str, dict[str, float]]:
    """Every mode, in one run."""
    root = Path(tempfile.mkdtemp(prefix="qjm-bench-security-"))
    try:
        return {mode: measure_mode(root, mode) for mode in MODES}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run() -> str:
    """The section for docs/benchmarks.md."""
    before = load_average()
    started = time.monotonic()
    results = measure()
    return section(results, time.monotonic() - started, (before, load_average()))


if __name__ == "__main__":
    print(run())
