"""A node that lost its storage must not decide where the log ends (design §J.5).

The nodes run in this process over the in-memory transport, with their real syncer: a
wiped node's VERSION and promise are restored from a majority of its peers and it is
marked restored. Its newEpoch answer then counts for its promise only: a writer waits for
a majority of nodes that kept their data, or fails saying what to run. When a majority of
the nodes lost their data, `qjm journal recover --survivors-only` recovers from the nodes
that kept it and lets the restored ones vote again.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from google.protobuf.message import Message

from inmem_cluster import (
    JID,
    SETTINGS,
    one_value_per_txid,
    payload,
    qjm,
    recover,
    settle,
    write_txns,
)
from qjm.cli.journal_write import recover_journal
from qjm.client.decisions import RestoredNodesError
from qjm.client.quorum_call import QuorumError
from qjm.client.uri import parse_qjournal_uri
from qjm.errors import QjmError
from qjm.testing.in_memory import InMemoryCluster

pytestmark = pytest.mark.timeout(60)


async def acked_6_10_without_jn0(c: InMemoryCluster) -> None:
    """Segment 1-5 everywhere; jn0 misses the start of segment 6, whose 6-10 are acked on
    jn1 and jn2; the writer dies before it reports them committed."""
    q = qjm(c)
    assert await q.recover_unfinalized_segments() == 0
    stream = await q.start_log_segment(1)
    await write_txns(stream, 1, 5, "w1")
    await stream.close()
    await q.finalize_log_segment(1, 5)
    c.faults[0].fail("startLogSegment", times=1)
    stream = await q.start_log_segment(6)
    for i in (1, 2):
        c.faults[i].fail("heartbeat")  # the report of 10 as committed never arrives
    assert await write_txns(stream, 6, 5, "w1") == 10
    await settle(q)
    for i in (1, 2):
        c.faults[i].clear()


async def restore(c: InMemoryCluster, i: int) -> None:
    """Node i loses its disk; its syncer restores VERSION, the promise and segment 1-5."""
    await c.wipe(i, JID)
    await c.sync(i)
    status = await c.node(i).journal_status(JID)
    assert status.is_formatted and status.restored, status


def count_answers(c: InMemoryCluster, nodes: list[int], method: str, then: Callable[[], None]):  # type: ignore[no-untyped-def]
    """Call then() once every node in nodes has answered method."""
    answered: set[int] = set()

    def tamper_for(i: int) -> Callable[[str, Message], Message]:
        def tamper(m: str, resp: Message) -> Message:
            if m == method:
                answered.add(i)
                if answered == set(nodes):
                    then()
            return resp

        return tamper

    for i in nodes:
        c.faults[i].tamper = tamper_for(i)


def assert_writer_1_values(c: InMemoryCluster) -> None:
    values = one_value_per_txid(c)
    for txid in range(1, 11):
        assert values[txid] == payload(txid, "w1"), (txid, values.get(txid))


async def test_a_late_answer_of_a_node_that_kept_its_data_is_waited_for(
    mem_cluster: InMemoryCluster,
) -> None:
    c = mem_cluster
    await acked_6_10_without_jn0(c)
    await restore(c, 2)
    # jn0 (which never saw segment 6) and the restored jn2 answer newEpoch first; jn1, the
    # only node that kept 6-10, answers only after both. Deciding on the first two answers
    # would recover segment 1 and let the writer write new values over 6-10.
    gate = c.faults[1].hold("newEpoch", times=1)
    count_answers(c, [0, 2], "newEpoch", gate.open)
    assert await recover(c) == 10
    for i in range(3):
        c.faults[i].clear()
    assert_writer_1_values(c)
    # jn2 took the recovered segment 6-10 although it may not vote yet.
    assert (6, 10) in c.segments(2, JID)


async def test_a_lost_answer_fails_the_writer_clearly(mem_cluster: InMemoryCluster) -> None:
    c = mem_cluster
    await acked_6_10_without_jn0(c)
    await restore(c, 2)
    c.faults[1].drop_answer("newEpoch", times=1)
    q = qjm(c)
    with pytest.raises(RestoredNodesError) as info:
        await q.recover_unfinalized_segments()
    await q.close()
    message = str(info.value)
    assert "only 1 of the answering JournalNodes kept their data" in message
    assert "recover --survivors-only" in message
    assert c.addresses[2] in message  # the restored node is named
    # Nothing was decided: no node started a segment over 6-10, and the next writer that
    # hears jn1 recovers them.
    assert await recover(c) == 10
    assert_writer_1_values(c)


async def test_readers_do_not_count_a_restored_nodes_answers(mem_cluster: InMemoryCluster) -> None:
    c = mem_cluster
    await acked_6_10_without_jn0(c)
    await restore(c, 2)
    q = qjm(c)
    try:
        answers = await q.loggers.get_edit_log_manifest(1, True).wait_for_every_answer(5)
    finally:
        await q.close()
    by_node = {ch.address: a for ch, a in answers.items()}
    assert by_node[c.addresses[2]].restored
    assert not by_node[c.addresses[1]].restored


async def test_two_restored_nodes_have_a_documented_way_out(mem_cluster: InMemoryCluster) -> None:
    c = mem_cluster
    await acked_6_10_without_jn0(c)
    # jn0 also takes 6-10 (a later writer's recovery), so it holds everything acknowledged.
    assert await recover(c) == 10
    await restore(c, 2)
    await restore(c, 1)  # now only jn0 kept its data
    with pytest.raises(RestoredNodesError, match="recover --survivors-only") as info:
        await recover(c)
    assert {str(n) for n in info.value.restored} == {c.addresses[1], c.addresses[2]}
    uri = parse_qjournal_uri(c.uri(JID))
    # The way out refuses while a node that may hold data does not answer ...
    c.faults[0].fail("newEpoch", times=1)
    with pytest.raises(QuorumError, match="needs all 3 nodes"):
        await recover_journal(uri, SETTINGS, survivors_only=True, client_factory=c.client)
    # ... and otherwise recovers from jn0 and starts the next segment on every node.
    _, last = await recover_journal(uri, SETTINGS, survivors_only=True, client_factory=c.client)
    assert last == 10
    for i in (1, 2):
        status = await c.node(i).journal_status(JID)
        assert not status.restored, status
    # An ordinary writer recovers again, and every acknowledged txid is there.
    assert await recover(c) == 10
    assert_writer_1_values(c)
    # With a majority that kept its data, the way out is refused: it is not needed.
    with pytest.raises(QjmError, match="kept their data, a majority"):
        await recover_journal(uri, SETTINGS, survivors_only=True, client_factory=c.client)
