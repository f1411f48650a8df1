"""hdfs-native (the Rust HDFS client, from PyPI) against a `qjm cluster` with two NameNodes.

The client gets DIR/hadoop-conf's properties (the HA nameservice); it is never told which
NameNode is active.
"""

from __future__ import annotations

from collections.abc import Iterator

import hdfs_native
import pytest

from hadoop_clients import STANDBY_EXCEPTION, HACluster, refusal_of_get_file_info, tree, user

# Real processes (and JVM starts) on a possibly busy machine: more than the default 120 s.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster for the module (nn1 active, nn2 standby at the start)."""
    c = HACluster(tmp_path_factory.mktemp("hdfs-native") / "cluster").up()
    try:
        yield c
    finally:
        c.down()


def touch(client: hdfs_native.Client, path: str, **options: object) -> None:
    """Create an empty file (create + complete: no block, so no DataNode needed)."""
    writer = client.create(path, hdfs_native.WriteOptions(**options))  # type: ignore[arg-type]
    writer.close()


def test_mkdirs_and_create_on_nn1_are_listed_through_nn2_after_failover(
    cluster: HACluster,
) -> None:
    assert cluster.state("nn1") == "active"
    client = cluster.ha_client()
    client.mkdirs("/a/b/c", create_parent=True)
    touch(client, "/a/b/f")
    nn1 = cluster.direct("nn1")
    assert nn1.get_file_info("/a/b/c").isdir
    assert nn1.get_file_info("/a/b/f").length == 0
    assert refusal_of_get_file_info(cluster.info["nn2"]["rpc"]) == STANDBY_EXCEPTION

    cluster.failover("nn1", "nn2")
    # the same client object, never told: it finds nn2 by itself
    listed = tree(client, "/")
    assert {"/a", "/a/b", "/a/b/c", "/a/b/f"} <= set(listed)
    assert listed["/a/b/f"] == (False, 0o644, user(), "supergroup", 3)
    assert listed["/a/b/c"][:2] == (True, 0o755)
    client.mkdirs("/after-failover")
    assert cluster.direct("nn2").get_file_info("/after-failover").isdir
    # the conf dir as such (what HADOOP_CONF_DIR names) gives hdfs-native the same cluster
    by_dir = hdfs_native.Client("hdfs://ns1", config_dir=str(cluster.conf))
    assert tree(by_dir, "/") == tree(client, "/")


def test_the_fsshell_scenarios(cluster: HACluster) -> None:
    client = cluster.ha_client()
    for d in ("/v/d1/sub", "/v/d2", "/v/d3/deep"):
        client.mkdirs(d, create_parent=True)
    for f in ("/v/d1/f1", "/v/d1/sub/f2", "/v/f3", "/v/f4"):
        touch(client, f)
    # mkdirs of an existing directory is fine; create over an existing file is refused
    client.mkdirs("/v/d2", create_parent=True)
    with pytest.raises(Exception, match="FileAlreadyExists|exists"):
        touch(client, "/v/f3", overwrite=False)
    with pytest.raises(FileNotFoundError):
        client.mkdirs("/nope/x", create_parent=False)

    client.rename("/v/f3", "/v/d2/f3")
    client.rename("/v/f4", "/v/d2/f4")
    assert client.delete("/v/d3", recursive=True)
    assert client.delete("/v/d1/sub", recursive=True)
    assert not client.delete("/v/d3", recursive=True)  # gone: false, as HDFS answers
    with pytest.raises(Exception, match="PathIsNotEmptyDirectory|not empty"):
        client.delete("/v/d2", recursive=False)

    for p in ("/v/d2", "/v/d2/f3", "/v/d2/f4"):
        client.set_permission(p, 0o750)
    client.set_owner("/v/d2/f3", "alice", "staff")
    client.set_owner("/v/d1", "alice", "staff")
    assert client.set_replication("/v/d1/f1", 2)
    assert client.set_replication("/v/d2/f3", 2)

    f3 = client.get_file_info("/v/d2/f3")
    assert (f3.isdir, f3.owner, f3.group, f3.permission, f3.replication, f3.length) == (
        False,
        "alice",
        "staff",
        0o750,
        2,
        0,
    )
    d2 = client.get_file_info("/v/d2")
    assert (d2.isdir, d2.owner, d2.group, d2.permission) == (True, user(), "supergroup", 0o750)
    with pytest.raises(FileNotFoundError):
        client.get_file_info("/v/d3")

    cs = client.get_content_summary("/v")
    assert (cs.directory_count, cs.file_count, cs.length, cs.space_consumed) == (3, 3, 0, 0)
    cs = client.get_content_summary("/v/d2")
    assert (cs.directory_count, cs.file_count) == (1, 2)

    listed = tree(client, "/v")
    assert set(listed) == {"/v/d1", "/v/d1/f1", "/v/d2", "/v/d2/f3", "/v/d2/f4"}
    assert listed["/v/d2/f3"] == (False, 0o750, "alice", "staff", 2)
    assert listed["/v/d1/f1"] == (False, 0o644, user(), "supergroup", 2)

    # times: set and read back
    client.set_times("/v/d1/f1", 1_700_000_000_000, 1_700_000_001_000)
    f1 = client.get_file_info("/v/d1/f1")
    assert (f1.modification_time, f1.access_time) == (1_700_000_000_000, 1_700_000_001_000)


def test_a_call_that_needs_a_datanode_is_refused_clearly(cluster: HACluster) -> None:
    client = cluster.ha_client()
    writer = client.create("/data-file", hdfs_native.WriteOptions())
    # without DataNodes addBlock answers HDFS's own IOException (design §B.14)
    with pytest.raises(Exception, match="could only be written to 0 of the 1 minReplication"):
        writer.write(b"x" * 10)
        writer.close()


def test_the_cluster_started_again_keeps_its_namespace_and_its_ports(cluster: HACluster) -> None:
    before = tree(cluster.direct(active_of(cluster)), "/")
    assert "/v/d2/f3" in before
    cluster.down()
    assert cluster.base is not None
    other = cluster.up_command(cluster.base + 100)
    assert other.returncode == 1
    assert f"--base-port {cluster.base}" in other.stderr and "Traceback" not in other.stderr
    cluster.up()
    assert cluster.state("nn1") == "active" and cluster.state("nn2") == "standby"
    assert tree(cluster.ha_client(), "/") == before
    # the standby replayed the same edits: it holds the same namespace once active
    cluster.failover("nn1", "nn2")
    assert tree(cluster.direct("nn2"), "/") == before


def active_of(cluster: HACluster) -> str:
    """The name of the active NameNode."""
    return next(nn for nn in ("nn1", "nn2") if cluster.state(nn) == "active")
