"""The design's recovery cases 2.10.1-2.10.7, each written once, over either transport.

Each case runs over the in-memory transport (real JournalNodes and journals in this
process, no sockets: qjm.testing.in_memory) in every variant, and over real sockets
(JournalNode servers on loopback, tests/qjm_cluster.py) in one variant as a smoke test
(marked slow: the fast lane runs the in-memory variants). Both read the same fault rules
(qjm.testing.faults): a node's faults apply to every writer the scenario starts, and
record what each call answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from inmem_cluster import JID, formatted_cluster
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.editlog.segments import list_segments
from qjm.protocol.errors import JournalNodeUnavailable, JournalOutOfSyncError
from qjm.testing.faults import NodeFaults
from qjm.testing.in_memory import InMemoryCluster
from qjm_cluster import (
    FAST_SETTINGS,
    JNCluster,
    check_dirs_agree,
    payload,
    read_dir_segments,
    settle,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)

Segments = dict[tuple[int, int | None], dict[int, bytes]]


class Journals:
    """One formatted journal on three JournalNodes, over one transport."""

    faults: list[NodeFaults]
    n = 3

    def writer(self) -> QuorumJournalManager:
        """A new writer; every call passes through the nodes' faults."""
        raise NotImplementedError

    async def crash(self, i: int) -> None:
        """Take node i away (its storage stays)."""
        raise NotImplementedError

    async def start_node(self, i: int) -> None:
        """Bring node i back from its storage."""
        raise NotImplementedError

    def current_dir(self, i: int) -> Path:
        """Node i's current/ of the journal."""
        raise NotImplementedError

    def segments(self, i: int, finalized_only: bool = True) -> Segments:
        """Node i's segments, read from its disk: (start, end or None) -> {txid: body}."""
        return read_dir_segments(self.current_dir(i), finalized_only)

    def segment_names(self, i: int) -> list[str]:
        """The names of node i's segment files, in txid order."""
        return [s.path.name for s in list_segments(self.current_dir(i))]

    def clear_faults(self) -> None:
        """Remove every node's fault rules (the call logs stay)."""
        for f in self.faults:
            f.clear()


class MemoryJournals(Journals):
    """The journal over the in-memory transport."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self.faults = cluster.faults

    def writer(self) -> QuorumJournalManager:
        """A new writer on the in-memory cluster."""
        return QuorumJournalManager(
            self.cluster.uri(JID), None, FAST_SETTINGS, client_factory=self.cluster.client
        )

    async def crash(self, i: int) -> None:
        """Crash node i: calls to it fail as unreachable."""
        await self.cluster.crash(i)

    async def start_node(self, i: int) -> None:
        """Restart node i from its disk."""
        await self.cluster.start_node(i)

    def current_dir(self, i: int) -> Path:
        """Node i's current/ of the journal."""
        return self.cluster.slots[i].edits_dir / JID / "current"


class SocketJournals(Journals):
    """The journal on JournalNode servers reached over loopback sockets."""

    def __init__(self, cluster: JNCluster, jid: str) -> None:
        self.cluster = cluster
        self.jid = jid
        self.faults = [NodeFaults(cluster.address(i)) for i in range(cluster.n)]

    def writer(self) -> QuorumJournalManager:
        """A new writer whose calls pass through the nodes' faults."""
        return self.cluster.qjm(self.jid, self.faults)

    async def crash(self, i: int) -> None:
        """Stop node i's server."""
        await self.cluster.stop_node(i)

    async def start_node(self, i: int) -> None:
        """Start node i's server again on its ports."""
        await self.cluster.start_node(i)

    def current_dir(self, i: int) -> Path:
        """Node i's current/ of the journal."""
        return self.cluster.current_dir(i, self.jid)


@pytest.fixture
async def journals(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Journals]:
    """The journal over the transport the test's `transport` parameter names."""
    if request.node.callspec.params["transport"] == "memory":
        async with formatted_cluster(tmp_path) as c:
            yield MemoryJournals(c)
    else:
        async with JNCluster(tmp_path) as cluster:
            jid = cluster.new_jid()
            await cluster.format(jid)
            yield SocketJournals(cluster, jid)


def variants(*cases: object, smoke: object) -> list[object]:
    """Every case over the in-memory transport, and the smoke case over sockets too (slow)."""
    out: list[object] = []
    for case in cases:
        args = case if isinstance(case, tuple) else (case,)
        out.append(pytest.param("memory", *args, id=f"memory-{'-'.join(map(str, args))}"))
    args = smoke if isinstance(smoke, tuple) else (smoke,)
    socket_id = f"socket-{'-'.join(map(str, args))}"
    out.append(pytest.param("socket", *args, id=socket_id, marks=pytest.mark.slow))
    return out


TRANSPORTS = ["memory", pytest.param("socket", marks=pytest.mark.slow)]


# -- what the cases share ---------------------------------------------------------------------
async def recover(j: Journals) -> int:
    """A new writer fences and recovers, and settles; returns the recovered last txid."""
    q = j.writer()
    try:
        return await q.recover_unfinalized_segments()
    finally:
        await settle(q)


async def first_segment(j: Journals, end: int = 100) -> QuorumJournalManager:
    """Writer 1 (epoch 1) with segment 1-end finalized on every node."""
    q = j.writer()
    assert await q.recover_unfinalized_segments() == 0
    assert q.epoch == 1
    await write_segment(q, 1, end)
    return q


async def state_150_153_125(j: Journals) -> None:
    """Design 2.10.2's state: segment 101 in progress ending 150 / 153 / 125, epoch 1."""
    q = await first_segment(j)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 25)  # 101-125 everywhere
    j.faults[2].fail_from_txn(126)
    await write_txns(stream, 126, 25)  # 126-150 on jn0, jn1: acknowledged
    j.faults[0].fail_from_txn(151)
    with pytest.raises(QuorumError, match="too many exceptions") as e:
        await write_txns(stream, 151, 3)  # 151-153 on jn1 only
    assert all(
        isinstance(x, (JournalNodeUnavailable, JournalOutOfSyncError))
        for x in e.value.errors.values()
    )
    await settle(q)
    j.clear_faults()
    assert [max(j.segments(i, False)[(101, None)]) for i in range(3)] == [150, 153, 125]


def finalized(j: Journals, i: int, start: int, end: int, tag: str = "") -> None:
    """Node i holds a finalized segment start-end whose ops are the written ones."""
    segs = j.segments(i)
    assert (start, end) in segs, f"jn{i}: {j.segment_names(i)}"
    assert segs[(start, end)] == {t: payload(t, tag) for t in range(start, end + 1)}, f"jn{i}"


def finalized_on_quorum(j: Journals, start: int, end: int) -> None:
    """A majority of nodes hold edits_<start>-<end>."""
    holders = [i for i in range(j.n) if (start, end) in j.segments(i)]
    assert len(holders) > j.n // 2, f"segment {start}-{end} finalized only on {holders}"


def one_value_per_txid(j: Journals) -> dict[int, bytes]:
    """Every finalized segment is whole, and each txid has one value across the nodes."""
    return check_dirs_agree([j.current_dir(i) for i in range(j.n)])


# -- design §J.13 case 1 ---------------------------------------------------------------------
@pytest.mark.parametrize(("transport", "away"), variants(None, 0, 1, 2, smoke=0))
async def test_2_10_1_in_progress_inconsistent_majority_succeeded(
    journals: Journals, transport: str, away: int | None
) -> None:
    q = await first_segment(journals)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 50)
    journals.faults[0].fail_from_txn(151)
    assert await write_txns(stream, 151, 3) == 153  # jn1, jn2: acknowledged
    await settle(q)
    journals.clear_faults()
    if away is not None:
        await journals.crash(away)
    # Every majority holds a node at 153, the acknowledged txid (design §J.4 rule 4).
    assert await recover(journals) == 153
    for i in range(3):
        if i != away:
            finalized(journals, i, 101, 153)
    finalized_on_quorum(journals, 101, 153)
    one_value_per_txid(journals)


# -- design §J.13 case 2 ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("transport", "away", "expected"),
    variants((None, {150, 153}), (2, {153}), (1, {150}), (0, {153}), smoke=(1, {150})),
)
async def test_2_10_2_in_progress_inconsistent_no_majority(
    journals: Journals, transport: str, away: int | None, expected: set[int]
) -> None:
    await state_150_153_125(journals)
    if away is not None:
        await journals.crash(away)  # recovery sees only the other two
    # {jn0,jn1} -> 153, {jn0,jn2} -> 150, {jn1,jn2} -> 153; never 125 (150 was acked).
    # With all three, 150 and 153 are both right (153 was never acknowledged): the first
    # majority to answer decides.
    got = await recover(journals)
    assert got in expected
    for i in range(3):
        if i != away:
            finalized(journals, i, 101, got)
    if away is not None:
        await journals.start_node(away)
    one_value_per_txid(journals)


# -- design §J.13 case 3 ---------------------------------------------------------------------
@pytest.mark.parametrize(("transport", "away"), variants(None, 0, 1, 2, smoke=None))
async def test_2_10_3_finalized_inconsistent_majority_succeeded(
    journals: Journals, transport: str, away: int | None
) -> None:
    q = await first_segment(journals)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 45)
    journals.faults[2].fail_from_txn(146)
    assert await write_txns(stream, 146, 5) == 150
    await stream.close()
    await q.finalize_log_segment(101, 150)  # jn2 holds only up to 145: not finalized there
    await settle(q)
    journals.clear_faults()
    assert (101, 150) not in journals.segments(2)
    assert journals.segment_names(2)[-1] == "edits_inprogress_0000000000000000101"
    if away is not None:
        await journals.crash(away)
    # Every majority sees a finalized copy and picks it (design §J.4 rule 3); jn2 syncs from it.
    assert await recover(journals) == 150
    for i in range(3):
        if i != away:
            finalized(journals, i, 101, 150)
    one_value_per_txid(journals)


# -- design §J.13 case 4 ---------------------------------------------------------------------
@pytest.mark.parametrize(("transport", "away"), variants(None, 0, 1, 2, smoke=0))
async def test_2_10_4_finalized_inconsistent_no_majority(
    journals: Journals, transport: str, away: int | None
) -> None:
    q = await first_segment(journals)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 25)
    journals.faults[2].fail_from_txn(126)
    assert await write_txns(stream, 126, 25) == 150
    await stream.close()
    journals.faults[1].fail("finalizeLogSegment")
    with pytest.raises(QuorumError):
        await q.finalize_log_segment(101, 150)  # jn0 only
    await settle(q)
    journals.clear_faults()
    assert "edits_0000000000000000101-0000000000000000150" in journals.segment_names(0)
    assert (101, 150) in journals.segments(0)
    if away is not None:
        await journals.crash(away)
    # jn0's finalized copy wins (design §J.4 rule 3); without it, jn1's 150 beats jn2's 125 (design §J.4 rule 4).
    assert await recover(journals) == 150
    for i in range(3):
        if i != away:
            finalized(journals, i, 101, 150)
    one_value_per_txid(journals)


# -- design §J.13 case 5 ---------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_2_10_5_start_inconsistent_majority_not_started(
    journals: Journals, transport: str
) -> None:
    q = await first_segment(journals, 150)
    journals.faults[1].fail("startLogSegment")
    journals.faults[2].fail("startLogSegment")
    with pytest.raises(QuorumError):
        await q.start_log_segment(151)  # only jn0 opens edits_inprogress_151
    await settle(q)
    journals.clear_faults()
    assert journals.segment_names(0)[-1] == "edits_inprogress_0000000000000000151"
    # The empty segment counts as absent: nothing to recover, the journal ends at 150.
    assert await recover(journals) == 150
    prepared = [r.request.segment_txid for f in journals.faults for r in f.calls("prepareRecovery")]
    assert 151 not in prepared
    assert (journals.current_dir(0) / "edits_inprogress_0000000000000000151.empty").exists()
    q = journals.writer()  # and the next writer starts at 151
    assert await q.recover_unfinalized_segments() == 150
    await write_segment(q, 151, 3)
    await settle(q)
    for i in range(3):
        finalized(journals, i, 151, 153)
    one_value_per_txid(journals)


# -- design §J.13 case 6 ---------------------------------------------------------------------
@pytest.mark.parametrize(("transport", "last_recovery_away"), variants(None, 2, smoke=None))
async def test_2_10_6_first_batch_on_a_minority_newer_writer_wins(
    journals: Journals, transport: str, last_recovery_away: int | None
) -> None:
    q = await first_segment(journals, 150)
    stream = await q.start_log_segment(151)
    journals.faults[1].fail_from_txn(151)
    journals.faults[2].fail_from_txn(151)
    with pytest.raises(QuorumError):
        await write_txns(stream, 151, 3, "w1")  # 151-153 on jn0 only
    await settle(q)
    journals.clear_faults()
    # A new writer hears jn1 and jn2 only: their empty 151 counts as absent.
    await journals.crash(0)
    q2 = journals.writer()
    assert await q2.recover_unfinalized_segments() == 150
    assert q2.epoch == 2
    stream = await q2.start_log_segment(151)
    assert await write_txns(stream, 151, 1, "w2") == 151  # on jn1, jn2 at writer epoch 2
    await settle(q2)
    await journals.start_node(0)
    if last_recovery_away is not None:
        await journals.crash(last_recovery_away)
    # jn0's longer log has writer epoch 1; jn1's has 2 and wins (design §J.4 rule 2).
    assert await recover(journals) == 151
    for i in range(3):
        if i != last_recovery_away:
            finalized(journals, i, 151, 151, "w2")
    one_value_per_txid(journals)


# -- design §J.13 case 7 ---------------------------------------------------------------------
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_2_10_7_multiple_recoveries_first_failed(journals: Journals, transport: str) -> None:
    await state_150_153_125(journals)
    # The first recovery hears jn0 and jn2, accepts 150 on both, finalizes only on jn2.
    await journals.crash(1)
    journals.faults[0].fail("finalizeLogSegment")
    with pytest.raises(QuorumError):
        await recover(journals)
    journals.clear_faults()
    assert journals.faults[0].calls("acceptRecovery")[-1].error is None
    assert (101, 150) in journals.segments(2)
    # The next hears jn0 and jn1: jn0's accepted recovery (epoch 2) beats jn1's longer
    # log (writer epoch 1), so it finalizes 150 as jn2 did, not 153.
    await journals.start_node(1)
    await journals.crash(2)
    assert await recover(journals) == 150
    await journals.start_node(2)
    for i in range(3):
        finalized(journals, i, 101, 150)
    prepared = journals.faults[0].calls("prepareRecovery")[-1].response
    assert prepared.accepted_in_epoch == 2
    one_value_per_txid(journals)
