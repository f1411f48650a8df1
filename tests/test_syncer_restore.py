"""A wiped JournalNode must not come back with a lower promise (design §J.6), real processes.

Writer 2 fenced writer 1 on two nodes; the third node still promises epoch 1. When one of
the fencing nodes loses its disk, its syncer may restore the promise only as the maximum
over a majority of the journal's nodes, and never from fewer answers: otherwise writer 1
gets a quorum from the stale node and the restored one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import JNFactory, JNProcess
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.journalnode.journal import Journal
from qjm.journalnode.storage import JNStorage
from qjm.journalnode.syncer import _restore_journal
from qjm.protocol.namespace import NamespaceInfo
from qjm.testing.faults import NodeFaults
from qjm.testing.wait import wait_until
from qjm_cluster import FAST_SETTINGS, FaultyClient, write_txns
from raw_writer import JID, NS, RawWriter
from test_syncer import DEADLINE, start_synced_trio

pytestmark = pytest.mark.timeout(90)


def uri(jns: list[JNProcess]) -> str:
    """The qjournal URI of these nodes."""
    return f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}"


def writer(jns: list[JNProcess], down: set[int] = frozenset()) -> QuorumJournalManager:  # type: ignore[assignment]
    """A writer that cannot reach the nodes in down."""
    faults = {jn.rpc: NodeFaults(down=i in down) for i, jn in enumerate(jns)}
    return QuorumJournalManager(
        uri(jns),
        NS,
        FAST_SETTINGS,
        client_factory=lambda a: FaultyClient(JournalNodeClient(a), faults[a]),
    )


def current(jn: JNProcess) -> Path:
    """The journal's current/ dir on a node."""
    return jn.edits_dir / JID / "current"


def wipe_and_restart(jn_factory: JNFactory, jn: JNProcess) -> JNProcess:
    """Lose the node's journal storage and start it again with the same flags."""
    jn_factory.stop(jn)
    shutil.rmtree(jn.edits_dir / JID)
    return jn_factory.start(jn.name, jn.rpc, jn.http, *jn.extra)


async def fence_writer_1(jns: list[JNProcess]) -> None:
    """Writer 1 writes 1-3 everywhere; writer 2 fences it on jns[1:] and acks 4-5 there."""
    w1 = writer(jns)
    await w1.format(NS)
    assert await w1.recover_unfinalized_segments() == 0
    s1 = await w1.start_log_segment(1)
    assert await write_txns(s1, 1, 3) == 3
    await w1.loggers.wait_idle()
    await w1.close()
    w2 = writer(jns, down={0})
    assert await w2.recover_unfinalized_segments() == 3
    assert w2.epoch == 2
    s2 = await w2.start_log_segment(4)
    assert await write_txns(s2, 4, 2, tag="writer2") == 5
    await w2.loggers.wait_idle()
    await w2.close()


async def writer_1_acks(jns: list[JNProcess]) -> list[str]:
    """Writer 1 (epoch 1) tries to write 4-5 on every node; the names of those that took it."""
    acked = []
    for jn in jns:
        w = RawWriter(jn, epoch=1)
        w.serial = 1000  # writer 1 goes on with its own call numbering
        try:
            await w.start(4)
            await w.write(4, 4, 2, committed=3)
            acked.append(jn.name)
        except Exception:  # refused: exactly what a fenced writer should see
            pass
        finally:
            await w.close()
    return acked


@pytest.mark.slow
async def test_wiped_node_restores_the_majority_promise_and_fenced_writer_gets_no_quorum(
    jn_factory: JNFactory,
) -> None:
    jns = start_synced_trio(jn_factory)
    await fence_writer_1(jns)
    jns[2] = wipe_and_restart(jn_factory, jns[2])
    promise = current(jns[2]) / "last-promised-epoch"
    wait_until("jn3 restored its VERSION from its peers", promise.exists, timeout_s=DEADLINE)
    assert promise.read_text().strip() == "2"  # the maximum of jn1 (1) and jn2 (2)
    acked = await writer_1_acks(jns)
    assert len(acked) < 2, f"fenced writer 1 got a quorum: {acked} took txids 4-5"


@pytest.mark.slow
async def test_wiped_node_does_not_restore_without_a_majority(jn_factory: JNFactory) -> None:
    jns = start_synced_trio(jn_factory)
    await fence_writer_1(jns)
    jn_factory.stop(jns[1])  # only jn1, still at epoch 1, can answer jn3's syncer
    jns[2] = wipe_and_restart(jn_factory, jns[2])
    log = jns[2].log
    wait_until(
        "jn3's syncer refused to restore from one answer",
        lambda: log.exists() and "not restoring" in log.read_text(),
        timeout_s=DEADLINE,
    )
    assert not (current(jns[2]) / "VERSION").exists()
    assert "not restoring" in log.read_text() and "1 of the 2" in log.read_text()


def test_restore_writes_version_promise_and_the_agreed_members(tmp_path: Path) -> None:
    j = Journal("j", JNStorage(tmp_path / "j"))
    try:
        ns = NamespaceInfo(namespace_id=9, cluster_id="CID-restore")
        assert _restore_journal(j, ns, 3, ["127.0.0.1:2", "127.0.0.1:1"])
        assert j.ns_info == ns and j.last_promised_epoch == 3
        members = (tmp_path / "j" / "current" / "members").read_text()
        assert members == "127.0.0.1:1\n127.0.0.1:2\n"
        assert not _restore_journal(j, ns, 5, [])  # already formatted: nothing changes
        assert j.last_promised_epoch == 3
    finally:
        j.close()
