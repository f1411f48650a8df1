"""Files with bytes, judged by clients we did not write: the genuine Hadoop FsShell (from
pyspark's jars), hdfs-native and Spark (Parquet to hdfs://ns1 and back, and `qjm analyze`
with an hdfs:// out), against one `qjm cluster` of 2 NameNodes and 3 DataNodes.

The file checksum is computed here from the bytes alone (HDFS's MD5 of per-block MD5s of
the CRC32C of each 512-byte chunk, as Hadoop's client combines them), so a DataNode that
answered a wrong block checksum would fail whatever the client made of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crc32c
import hdfs_native
import pytest

from conftest import FIXTURES
from hadoop_clients import FsShellSession, HACluster, block_locations, check, client_config
from qjm.cli.main import main
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # JVMs on a loaded machine

BLOCK = 4 * 1024 * 1024  # small blocks: a 50 MiB file spans 13 of them
BIG = 50 * 1024 * 1024
BYTES_PER_CRC = 512
ROWS = 1_000_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster (nn1 active) with three DataNodes for the module."""
    c = HACluster(tmp_path_factory.mktemp("dn-judges") / "cluster", datanodes=3).up()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def spark(cluster: HACluster) -> Iterator[Any]:
    """A local[2] session whose Hadoop configuration is the cluster's hadoop-conf."""
    from qjm.spark.session import build_session

    session = build_session("local[2]", "qjm-hdfs", conf={"spark.sql.shuffle.partitions": "2"})
    hadoop = session.sparkContext._jsc.hadoopConfiguration()
    for key, value in client_config(cluster.conf).items():  # a session another module began
        hadoop.set(key, value)
    try:
        yield session
    finally:
        session.stop()


def file_checksum(data: bytes, block_size: int) -> str:
    """What `hadoop fs -checksum` prints for data in blocks of block_size: the algorithm name
    and HDFS's MD5MD5CRC32C bytes (bytesPerCRC, crcPerBlock, MD5 of the block MD5s) in hex."""
    blocks = [data[i : i + block_size] for i in range(0, len(data), block_size)]
    block_md5s = b"".join(
        hashlib.md5(
            b"".join(
                struct.pack(">I", crc32c.crc32c(b[j : j + BYTES_PER_CRC]))
                for j in range(0, len(b), BYTES_PER_CRC)
            )
        ).digest()
        for b in blocks
    )
    # HDFS takes crcPerBlock from the first block when a file has more than one, else 0
    crc_per_block = (len(blocks[0]) + BYTES_PER_CRC - 1) // BYTES_PER_CRC if len(blocks) > 1 else 0
    name = f"MD5-of-{crc_per_block}MD5-of-{BYTES_PER_CRC}CRC32C"
    # Hadoop's client digests its whole output buffer (32 bytes, doubled as it fills), so
    # the block MD5s are followed by zeros up to that capacity
    capacity = 32
    while capacity < len(block_md5s):
        capacity *= 2
    padded = block_md5s + bytes(capacity - len(block_md5s))
    raw = struct.pack(">IQ", BYTES_PER_CRC, crc_per_block) + hashlib.md5(padded).digest()
    return f"{name}\t{raw.hex()}"


def fs_checksum(fs: FsShellSession, path: str) -> str:
    """`hadoop fs -checksum path` as algorithm<TAB>hex."""
    line = check(fs("-checksum", path)).strip()
    shown, algorithm, value = line.split("\t")
    assert shown == path
    return f"{algorithm}\t{value}"


def cat(fs: FsShellSession, path: str) -> bytes:
    """The bytes `hadoop fs -cat path` prints."""
    r = fs.run_bytes("-cat", path, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    return r.stdout


def locations(cluster: HACluster, path: str) -> list[int]:
    """How many DataNodes the active NameNode names for each block of path."""
    return [len(b.locs) for b in block_locations(cluster.info["nn1"]["rpc"], path).blocks]


def test_fsshell_puts_and_reads_a_multi_block_file_byte_for_byte(
    cluster: HACluster, fs: FsShellSession, tmp_path: Path
) -> None:
    data = os.urandom(BIG)
    local = tmp_path / "big"
    local.write_bytes(data)
    check(fs("-D", f"dfs.blocksize={BLOCK}", "-put", str(local), "/big"))
    assert hashlib.sha256(cat(fs, "/big")).digest() == hashlib.sha256(data).digest()
    got = tmp_path / "got"
    check(fs("-get", "/big", str(got)))
    assert got.read_bytes() == data
    assert fs_checksum(fs, "/big") == file_checksum(data, BLOCK)
    # every block ends on all three DataNodes (a pipeline that placement shortened, as
    # HDFS's considerLoad may, is made up by re-replication)
    wait_until(
        lambda: f"/big on 3 DataNodes per block, not {locations(cluster, '/big')}",
        lambda: locations(cluster, "/big") == [3] * 13,
        timeout_s=60,
        poll_s=1.0,
    )
    with cluster.ha_client().read("/big") as f:  # hdfs-native reads what FsShell wrote
        assert f.read() == data


def test_hdfs_native_writes_appends_and_the_checksums_agree(
    cluster: HACluster, fs: FsShellSession, tmp_path: Path
) -> None:
    client = cluster.ha_client()
    data = os.urandom(5 * 1024 * 1024 + 1234)
    with client.create("/native", hdfs_native.WriteOptions(block_size=1024 * 1024)) as w:
        w.write(data)
    with client.read("/native") as f:
        assert f.read() == data
    more = os.urandom(70_000)
    with client.append("/native") as w:
        w.write(more)
    with client.read("/native") as f:
        assert f.read() == data + more
    assert cat(fs, "/native") == data + more
    local = tmp_path / "same"
    local.write_bytes(data + more)
    check(fs("-D", "dfs.blocksize=1048576", "-put", str(local), "/same"))
    assert fs_checksum(fs, "/native") == fs_checksum(fs, "/same")
    assert fs_checksum(fs, "/same") == file_checksum(data + more, 1024 * 1024)


def test_fsshell_append_truncate_concat_and_setrep(
    cluster: HACluster, fs: FsShellSession, tmp_path: Path
) -> None:
    # FsShell does what is judged; hdfs-native writes the inputs and reads the results
    client = cluster.ha_client()
    mib = hdfs_native.WriteOptions(block_size=1024 * 1024)

    def put(path: str, data: bytes, options: hdfs_native.WriteOptions = mib) -> None:
        with client.create(path, options) as w:
            w.write(data)

    def read(path: str) -> bytes:
        with client.read(path) as f:
            return bytes(f.read())

    head, tail = os.urandom(1024 * 1024 + 100), b"appended line\n"
    (tmp_path / "tail").write_bytes(tail)
    put("/app", head)
    check(fs("-appendToFile", str(tmp_path / "tail"), "/app"))
    assert read("/app") == head + tail

    put("/cut", head)
    out = check(fs("-truncate", "-w", "1048576", "/cut"))
    assert "Truncated /cut to length: 1048576" in out
    assert read("/cut") == head[:1048576]
    # inside a block: the block is recovered to the length on the DataNodes (design §B.16),
    # and -w returns once the file is closed
    out = check(fs("-truncate", "-w", "1000", "/cut"))
    assert "Truncated /cut to length: 1000" in out
    assert cat(fs, "/cut") == head[:1000]

    parts = [os.urandom(1000 + i) for i in range(3)]
    for i, part in enumerate(parts):
        put(f"/c{i}", part)
    check(fs("-concat", "/c0", "/c1", "/c2"))
    assert read("/c0") == b"".join(parts)
    for gone in ("/c1", "/c2"):
        with pytest.raises(FileNotFoundError):
            client.get_file_info(gone)

    put("/r", tail, hdfs_native.WriteOptions(replication=1))
    assert locations(cluster, "/r") == [1]
    out = check(fs("-setrep", "-w", "3", "/r"))
    assert "Replication 3 set: /r" in out
    assert locations(cluster, "/r") == [3]  # the NameNode had a DataNode copy it twice
    assert read("/r") == tail


def test_recover_lease_of_a_writer_that_went_silent(cluster: HACluster) -> None:
    # a writer syncs 300 KB and never closes; another client's recoverLease (HDFS's
    # FileSystem.recoverLease polling) has the last block recovered and the file closed
    # at the acknowledged length (design §B.16)
    writer, other = cluster.ha_client(), cluster.ha_client()
    data = os.urandom(300_000)
    w = writer.create("/silent", hdfs_native.WriteOptions(block_size=1024 * 1024))
    w.write(data)
    w.hsync()
    wait_until("/silent recovered", lambda: other.recover_lease("/silent"), timeout_s=60.0)
    assert other.get_file_info("/silent").length == len(data)
    with other.read("/silent") as f:
        assert bytes(f.read()) == data
    # the last block was recovered under a new generation stamp: the silent writer's
    # pipeline is refused (hdfs-native: "All nodes failed"), or its complete (its lease went)
    with pytest.raises((RuntimeError, OSError)):
        w.close()
    assert other.get_file_info("/silent").length == len(data)


def test_cluster_status_shows_the_datanodes_as_the_active_sees_them(cluster: HACluster) -> None:
    from conftest import run_qjm

    st = run_qjm("cluster", "status", "--dir", str(cluster.dir), "--json")
    assert st.returncode == 0, st.stderr
    dns = {n: d for n, d in json.loads(st.stdout)["daemons"].items() if d["kind"] == "datanode"}
    assert sorted(dns) == ["dn1", "dn2", "dn3"]
    for d in dns.values():
        assert d["namenode_view"] == "live"
        assert d["capacity"] > d["remaining"] > 0 and d["used"] > BIG  # /big is on every node
        assert d["blocks"] >= 13
    table = run_qjm("cluster", "status", "--dir", str(cluster.dir))
    assert re.search(
        r"^dn2\s+live\s+[\d.]+ [KMGT]?B\s+[\d.]+ MB\s+[\d.]+ [KMGT]?B\s+\d+$", table.stdout, re.M
    ), table.stdout


def test_a_million_rows_of_parquet_to_hdfs_and_back(cluster: HACluster, spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.range(ROWS).selectExpr("id", "id * 3 AS x", "CAST(id % 7 AS STRING) AS s")
    df.write.mode("overwrite").parquet("hdfs://ns1/spark/rows")
    names = [s.path.rsplit("/", 1)[-1] for s in cluster.ha_client().list_status("/spark/rows")]
    assert "_SUCCESS" in names and any(n.endswith(".parquet") for n in names), names
    back = spark.read.parquet("hdfs://ns1/spark/rows")
    got = back.agg(F.count("*"), F.sum("id"), F.sum("x"), F.countDistinct("s")).first()
    n = ROWS
    assert tuple(got) == (n, n * (n - 1) // 2, 3 * n * (n - 1) // 2, 7)


def test_analyze_writes_its_parquet_and_report_to_hdfs(cluster: HACluster, spark: Any) -> None:
    out = "hdfs://ns1/reports/ops"
    assert main(["analyze", "ops", "--edits", str(FIXTURES / "editsStored"), "--out", out]) == 0
    client = cluster.ha_client()
    listed = {s.path.rsplit("/", 1)[-1] for s in client.list_status("/reports/ops")}
    assert {"ops", "op_counts", "report.html", "summary.json"} <= listed, listed
    summary = json.loads(client.read("/reports/ops/summary.json").read())
    assert spark.read.parquet(f"{out}/ops").count() == summary["ops"] > 0
    counts = {r.opcode: r["count"] for r in spark.read.parquet(f"{out}/op_counts").collect()}
    assert counts == summary["op_counts"]
    assert b"<html" in client.read("/reports/ops/report.html").read()[:200].lower()


def test_namenode_status_page_json_and_jmx_show_the_live_datanodes(cluster: HACluster) -> None:
    import html
    import urllib.request

    def get(nn: str, path: str) -> str:
        with urllib.request.urlopen(f"http://{cluster.info[nn]['http']}{path}", timeout=10) as r:
            return str(r.read().decode())

    data = os.urandom(3 * 1024 * 1024)  # 3 blocks of 1 MiB on every DataNode
    with cluster.ha_client().create(
        "/on-every-node", hdfs_native.WriteOptions(block_size=1024 * 1024, replication=3)
    ) as w:
        w.write(data)
    transfers = sorted(cluster.info[f"dn{i}"]["transfer"] for i in (1, 2, 3))
    for nn in ("nn1", "nn2"):  # the standby keeps the DataNodes too (design §B.14)

        def reported(nn: str = nn) -> list[dict[str, Any]] | None:
            rows: list[dict[str, Any]] = json.loads(get(nn, "/status"))["datanodes"]
            done = len(rows) == 3 and all(r["used"] >= len(data) for r in rows)
            return rows if done else None  # used as of each node's next heartbeat (3 s)

        rows = wait_until(f"{nn} to see the bytes on every DataNode", reported, timeout_s=30)
        assert sorted(r["transfer_address"] for r in rows) == transfers, rows
        for r in rows:
            assert r["state"] == "live" and 0 <= r["last_heartbeat_s_ago"] < 30, r
            assert r["capacity"] > r["remaining"] > 0 and r["used"] >= len(data), r
            assert r["blocks"] >= 3, r
        page = get(nn, "/")
        table = re.search(r'<table id="datanodes">(.*?)</table>', page, re.S)
        assert table, page
        cells = [
            [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r'<tr class="dn dn-live">(.*?)</tr>', table.group(1))
        ]
        assert sorted(c[1] for c in cells) == transfers, table.group(1)
        for c in cells:
            assert c[2] == "live" and re.fullmatch(r"[\d.]+ [KMGT]?B", c[3]), c
            assert int(c[6]) >= 3 and re.fullmatch(r"[\d.]+ s ago", c[7]), c
        assert "3 live, 0 dead" in page, page
    beans = json.loads(get("nn1", "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"))
    (bean,) = beans["beans"]
    assert bean["NumLiveDataNodes"] == 3 and bean["NumDeadDataNodes"] == 0, bean
    assert bean["CapacityTotal"] > bean["CapacityRemaining"] > 0, bean
    assert bean["CapacityUsed"] >= 3 * len(data) and bean["BlocksTotal"] >= 3, bean
    (status,) = json.loads(get("nn1", "/jmx?qry=*NameNodeStatus"))["beans"]
    assert status["State"] == "active", status
