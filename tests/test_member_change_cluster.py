"""Replacing a dead JournalNode host under a writing NameNode, with real processes.

3 JournalNodes and 2 NameNodes (manual HA, `qjm cluster up --no-zookeeper`), HA clients
writing all along. jn3 is killed with kill -9 and its storage deleted (a dead host); jn4
starts on new ports from a copy of jn1's directory (an empty one joins the same way); `qjm journal
change-members` replaces jn3 with jn4; the NameNodes restart on the new URI one at a time,
the standby first, with a failover between. Nothing acknowledged is lost, jn4 holds the
newest segments, and a writer of the old URI is refused naming the change.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conftest import run_qjm
from hadoop_clients import HACluster, tree
from ports import free_address
from qjm.cluster.launcher import read_cluster, start_daemons
from qjm.cluster.process import pid_alive, stop_pid
from qjm.config import JournalNodeConfig, dump_config, load_config
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import UnsafeMemberChangeError
from qjm.protocol.qjournal import journal_id
from qjm.testing.wait import wait_until
from qjm_cluster import check_dirs_agree
from raw_writer import JNClient
from test_member_change import change_on
from test_nn_failover import Workload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
JID = "ns1"  # the launcher's journal id (the nameservice)


def node_status(address: str) -> pb.JournalStatusProto:
    """The journal's status on one JournalNode."""

    async def ask() -> pb.JournalStatusProto:
        client = JNClient(address)
        try:
            st: pb.JournalStatusProto = await client.call(
                "getJournalStatus", pb.GetJournalStatusRequestProto(jid=journal_id(JID))
            )
            return st
        finally:
            await client.close()

    return asyncio.run(ask())


def namenode_status(c: HACluster, nn: str) -> dict[str, Any]:
    """A NameNode's /status JSON."""
    with urllib.request.urlopen(f"http://{c.info[nn]['http']}/status", timeout=10) as resp:
        status: dict[str, Any] = json.loads(resp.read())
    return status


def kill_host(c: HACluster, name: str) -> None:
    """kill -9 a JournalNode and delete its storage: the host is gone."""
    pid = c.info[name]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(f"{name} (pid {pid}) gone", lambda: not pid_alive(pid), timeout_s=30.0)
    shutil.rmtree(c.dir / "data" / name)


def copy_live_dir(src: Path, dst: Path) -> None:
    """Copy a running JournalNode's edits dir, as an operator would (again if a file moved)."""
    for _ in range(5):
        try:
            shutil.copytree(src, dst)
            return
        except shutil.Error:  # a segment was finalized (renamed) during the copy
            shutil.rmtree(dst, ignore_errors=True)
    raise AssertionError(f"could not copy {src}: its files kept changing")


def add_journalnode(c: HACluster, name: str, replaces: str) -> tuple[str, str]:
    """Put a new JournalNode in place of another in cluster.toml and cluster.json; (rpc, http).

    The NameNodes read the shared edits URI from cluster.toml when they start; the new node
    takes the others as its syncer's peers from it.
    """
    toml = Path(c.toml)
    cfg = load_config(toml)
    rpc, http = free_address(), free_address()
    nodes = {n: jn for n, jn in cfg.journalnodes.items() if n != replaces}
    nodes[name] = JournalNodeConfig(name, rpc, http, str(c.dir / "data" / name))
    toml.write_text(dump_config(replace(cfg, journalnodes=nodes)))
    cluster = read_cluster(c.dir)
    cluster.pop(replaces)
    cluster[name] = {
        "rpc": rpc,
        "http": http,
        "pid": None,
        "log": str(c.dir / "logs" / f"{name}.log"),
        "kind": "journalnode",
    }
    (c.dir / "cluster.json").write_text(json.dumps(cluster, indent=2))
    return rpc, http


def restart_namenode(c: HACluster, nn: str) -> None:
    """Stop a standby NameNode and start it again (reading cluster.toml anew)."""
    assert c.state(nn) == "standby"
    stop_pid(c.info[nn]["pid"])
    c.info[nn]["pid"] = start_daemons(c.dir, [nn], timeout=60)[nn]
    wait_until(f"{nn} standby again", lambda: c.state(nn) == "standby", timeout_s=60)


# An empty new host joins the same way; tests/test_member_change.py replaces a dead node with
# an empty one under real JournalNode processes and the command (one real-NameNode case keeps
# the suite's time down).
@pytest.mark.parametrize("new_host", ["copy of jn1"])
def test_replacing_a_dead_journalnode_host_under_a_writing_namenode_loses_nothing(
    tmp_path: Path, new_host: str
) -> None:
    c = HACluster(tmp_path / "cluster").up()
    load: Workload | None = None
    try:
        old_uri = c.info["shared_edits"]
        jn1, jn2 = c.info["jn1"]["rpc"], c.info["jn2"]["rpc"]
        assert c.state("nn1") == "active"
        load = Workload(c, "/replace").start()
        load.wait_for(5)

        kill_host(c, "jn3")
        load.wait_for(5)  # two of three JournalNodes are a quorum

        if new_host != "empty":
            copy_live_dir(c.dir / "data" / "jn1", c.dir / "data" / "jn4")
        jn4, _ = add_journalnode(c, "jn4", replaces="jn3")
        start_daemons(c.dir, ["jn4"])
        new = [jn1, jn2, jn4]
        new_uri = f"qjournal://{';'.join(new)}/{JID}"

        # unsafe changes are refused, by the command and by a node itself
        two = run_qjm("journal", "change-members", "--journal", old_uri, "--to", f"{jn1};{jn4}")
        assert two.returncode == 1 and "one change at a time" in two.stderr, two.stderr
        ns = node_status(jn1).ns_info
        with pytest.raises(UnsafeMemberChangeError, match="one change at a time"):
            two_at_once = [jn1, jn4, free_address()]
            asyncio.run(change_on(jn1, [jn1, jn2, c.info["jn3"]["rpc"]], two_at_once, ns))

        done = run_qjm("journal", "change-members", "--journal", old_uri, "--to", ";".join(new))
        assert done.returncode == 0, done.stderr
        assert f"new shared edits URI: {new_uri}" in done.stdout, done.stdout
        load.wait_for(5)  # the writer of the old URI goes on until the NameNodes restart

        # the NameNodes take the new URI one at a time: the standby, a failover, the other
        restart_namenode(c, "nn2")
        assert namenode_status(c, "nn2")["shared_edits"] == new_uri
        c.failover("nn1", "nn2")
        load.wait_for(5)
        restart_namenode(c, "nn1")
        assert namenode_status(c, "nn1")["shared_edits"] == new_uri
        c.failover("nn2", "nn1")
        load.wait_for(5)

        # jn4 was written by the new writer: it holds the newest segment and votes again
        epoch = namenode_status(c, "nn1")["epoch"]

        def jn4_current() -> bool:
            st1, st4 = node_status(jn1), node_status(jn4)
            return (
                st4.last_writer_epoch == epoch
                and st4.current_segment_txid == st1.current_segment_txid
                and max(s.start_txid for s in st4.segments) == st1.current_segment_txid
                and not any("refuses to vote" in p for p in st4.problems)
            )

        wait_until("jn4 holds the new writer's newest segment", jn4_current, timeout_s=30.0)
        assert not (c.dir / "data" / "jn4" / JID / "current" / "amnesiac").exists()

        # a writer of the old URI is refused, naming the change
        old_writer = run_qjm("journal", "write", "--uri", old_uri, "--count", "1")
        assert old_writer.returncode != 0
        assert "member change recorded in epoch" in old_writer.stderr, old_writer.stderr
        load.finish()
        load.check_against(tree(c.direct("nn1"), "/"))
        assert load.count() > 30 and c.state("nn1") == "active"
    finally:
        if load is not None:
            load.finish()
        c.down()
    # every txid has one value on the three members, in every finalized segment
    check_dirs_agree([c.dir / "data" / n / JID / "current" for n in ("jn1", "jn2", "jn4")])
