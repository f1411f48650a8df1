"""Apache Hadoop's own FsShell (`hadoop fs`) against a `qjm cluster` with two NameNodes.

The shell reads only DIR/hadoop-conf (HA nameservice, ConfiguredFailoverProxyProvider): it is
never told which NameNode is active. The commands run in one JVM (each with a fresh client),
since a JVM start is seconds on a busy machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_qjm
from hadoop_clients import (
    STANDBY_EXCEPTION,
    FsShellSession,
    HACluster,
    check,
    java_calls,
    refusal_of_get_file_info,
    user,
)
from qjm.cluster.hadoop_conf import PROXY_PROVIDER, read_site

# Real processes (and JVM starts) on a possibly busy machine: more than the default 120 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster for the module (nn1 active, nn2 standby at the start)."""
    c = HACluster(tmp_path_factory.mktemp("hadoop-fs") / "cluster").up()
    try:
        yield c
    finally:
        c.down()


def ls_r(out: str) -> dict[str, list[str]]:
    """`hadoop fs -ls -R` output as path → its columns (mode, repl, owner, group, size, ...)."""
    rows = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 8 and not line.startswith("Found "):
            rows[cols[-1]] = cols[:-1]
    return rows


def test_cluster_json_and_hadoop_conf(cluster: HACluster) -> None:
    info = cluster.info
    for nn in ("nn1", "nn2"):
        assert info[nn]["kind"] == "namenode"
        assert set(info[nn]) >= {"rpc", "http", "pid", "log"}
    assert Path(info["hadoop_conf"]) == cluster.dir.resolve() / "hadoop-conf"
    core = read_site(cluster.conf / "core-site.xml")
    hdfs = read_site(cluster.conf / "hdfs-site.xml")
    assert core["fs.defaultFS"] == "hdfs://ns1"
    assert hdfs["dfs.nameservices"] == "ns1"
    assert hdfs["dfs.ha.namenodes.ns1"] == "nn1,nn2"
    assert hdfs["dfs.namenode.rpc-address.ns1.nn1"] == info["nn1"]["rpc"]
    assert hdfs["dfs.namenode.rpc-address.ns1.nn2"] == info["nn2"]["rpc"]
    assert hdfs["dfs.namenode.http-address.ns1.nn2"] == info["nn2"]["http"]
    assert hdfs["dfs.client.failover.proxy.provider.ns1"] == PROXY_PROVIDER
    assert (cluster.conf / "log4j.properties").is_file()

    st = run_qjm("cluster", "status", "--dir", str(cluster.dir), "--json")
    assert st.returncode == 0, st.stderr
    daemons = json.loads(st.stdout)["daemons"]
    assert (daemons["nn1"]["ha_state"], daemons["nn2"]["ha_state"]) == ("active", "standby")
    assert all(d["running"] for d in daemons.values())


def test_done_when_mkdir_and_touchz_on_nn1_show_in_ls_on_nn2_after_failover(
    cluster: HACluster, fs: FsShellSession
) -> None:
    assert cluster.state("nn1") == "active"
    assert cluster.state("nn2") == "standby"
    check(fs("-mkdir", "-p", "/a/b/c"))
    check(fs("-touchz", "/a/b/f"))

    # They landed on nn1: it answers them directly; the standby refuses to.
    nn1 = cluster.direct("nn1")
    assert nn1.get_file_info("/a/b/c").isdir
    f = nn1.get_file_info("/a/b/f")
    assert not f.isdir and f.length == 0 and f.owner == user()
    assert refusal_of_get_file_info(cluster.info["nn2"]["rpc"]) == STANDBY_EXCEPTION

    cluster.failover("nn1", "nn2")
    assert cluster.state("nn1") == "standby"

    rows = ls_r(check(fs("-ls", "-R", "/")))
    assert {"/a", "/a/b", "/a/b/c", "/a/b/f"} <= set(rows)
    assert rows["/a/b/c"][0] == "drwxr-xr-x"
    assert rows["/a/b/f"][0] == "-rw-r--r--"
    assert rows["/a/b/f"][1] == "3"  # replication
    assert rows["/a/b/f"][2] == user()
    assert rows["/a/b/f"][4] == "0"  # length
    # and nn2 itself (no failover client) holds them
    assert cluster.direct("nn2").get_file_info("/a/b/f").length == 0


def test_fsshell_verbs(fs: FsShellSession) -> None:
    check(fs("-mkdir", "-p", "/v/d1/sub", "/v/d2", "/v/d3/deep"))
    check(fs("-touchz", "/v/d1/f1", "/v/d1/sub/f2", "/v/f3", "/v/f4"))

    # -mv: several sources into a directory
    check(fs("-mv", "/v/f3", "/v/f4", "/v/d2"))
    # -rm -r: a tree and a directory with a file
    out = check(fs("-rm", "-r", "/v/d3", "/v/d1/sub"))
    assert "Deleted /v/d3" in out and "Deleted /v/d1/sub" in out
    check(fs("-chmod", "-R", "750", "/v/d2"))
    check(fs("-chown", "alice:staff", "/v/d2/f3", "/v/d1"))
    out = check(fs("-setrep", "2", "/v/d1/f1", "/v/d2/f3"))
    assert "Replication 2 set: /v/d1/f1" in out and "Replication 2 set: /v/d2/f3" in out

    out = check(fs("-stat", "%F|%u|%g|%a|%r|%b|%n", "/v/d2/f3", "/v/d2", "/v/d1"))
    lines = out.splitlines()
    assert len(lines) == 3, out
    f3, d2, d1 = (line.split("|") for line in lines)
    assert f3[0].startswith("regular") and f3[1:] == ["alice", "staff", "750", "2", "0", "f3"]
    assert d2 == ["directory", user(), "supergroup", "750", "0", "0", "d2"]
    assert d1[0] == "directory" and d1[1:3] == ["alice", "staff"] and d1[3] == "755"

    # -count: DIR_COUNT FILE_COUNT CONTENT_SIZE PATHNAME (the directory itself counts)
    out = check(fs("-count", "/v", "/v/d2"))
    counts = {cols[-1]: cols[:-1] for cols in (line.split() for line in out.splitlines())}
    assert counts["/v"] == ["3", "3", "0"], out  # /v, d1, d2; f1, f3, f4
    assert counts["/v/d2"] == ["1", "2", "0"], out
    # -du -s: size, space consumed with replicas, path (empty files: 0 0)
    out = check(fs("-du", "-s", "/v"))
    assert out.split() == ["0", "0", "/v"]

    # -test: exit code 0 when true, 1 when false
    assert fs("-test", "-d", "/v/d2").returncode == 0
    assert fs("-test", "-e", "/v/d3").returncode == 1

    # a refusal is one line naming the path, exit 1
    r = fs("-mkdir", "/nope/x")
    assert r.returncode == 1
    assert "/nope" in r.stderr and "No such file or directory" in r.stderr

    rows = ls_r(check(fs("-ls", "-R", "/v")))
    assert set(rows) == {"/v/d1", "/v/d1/f1", "/v/d2", "/v/d2/f3", "/v/d2/f4"}
    assert rows["/v/d2"][0] == "drwxr-x---"
    assert rows["/v/d2/f4"][0] == "-rwxr-x---"
    assert rows["/v/d2/f3"][:4] == ["-rwxr-x---", "2", "alice", "staff"]
    assert rows["/v/d1/f1"][:3] == ["-rw-r--r--", "2", user()]


@pytest.fixture(scope="module", autouse=True)
def java_calls_before() -> int:
    """How many FsShell calls other modules made before this one (the list is global)."""
    return len(java_calls)


def test_java_call_budget(java_calls_before: int) -> None:
    # Every FsShell call is a JVM start: the whole module keeps them few.
    mine = java_calls[java_calls_before:]
    assert len(mine) <= 20, mine
