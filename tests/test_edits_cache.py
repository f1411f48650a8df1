"""The JournalNode's in-memory edits cache (like HDFS's TestJournaledEditsCache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qjm.editlog.framing import HEADER, OP_OPAQUE, encode_op, header, iter_ops, validate_batch
from qjm.journalnode.edits_cache import JournaledEditsCache
from qjm.journalnode.journal import Journal
from qjm.journalnode.storage import JNStorage
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import CacheMissError, InvalidRequestError
from qjm.protocol.namespace import NamespaceInfo

OP = len(encode_op(OP_OPAQUE, 1, b"x" * 33))  # every op here is this long


def batch(first: int, n: int) -> tuple[bytes, list[int]]:
    """n ops from first and their offsets."""
    data = b"".join(encode_op(OP_OPAQUE, t, b"x" * 33) for t in range(first, first + n))
    return data, validate_batch(data, first, n)


def fill(cache: JournaledEditsCache, *ranges: tuple[int, int], layout: int = -64) -> None:
    """Store batches (first, n)."""
    for first, n in ranges:
        data, offsets = batch(first, n)
        cache.store(data, first, offsets, layout)


def txids(data: bytes) -> list[int]:
    """The txids of a retrieved buffer (header checked)."""
    return [op.txid for op in iter_ops(data)]


def test_single_segment_on_and_off_boundaries() -> None:
    cache = JournaledEditsCache(100 * OP)
    fill(cache, (1, 5), (6, 5), (11, 5))
    count, data = cache.retrieve(1, 100)
    assert count == 15 and data[:8] == HEADER and txids(data) == list(range(1, 16))
    count, data = cache.retrieve(6, 5)  # exactly one batch
    assert count == 5 and txids(data) == list(range(6, 11))
    count, data = cache.retrieve(4, 4)  # straddles two batches
    assert count == 4 and txids(data) == [4, 5, 6, 7]
    assert cache.retrieve(16, 10) == (0, b"")


def test_capacity_drops_the_oldest_batches() -> None:
    cache = JournaledEditsCache(10 * OP)
    fill(cache, (1, 5), (6, 5), (11, 5))
    assert cache.range() == (6, 15)
    with pytest.raises(CacheMissError, match="txid 3 is not in the edits cache .it holds 6-15"):
        cache.retrieve(3, 10)


def test_a_batch_larger_than_the_capacity_empties_it() -> None:
    cache = JournaledEditsCache(4 * OP)
    fill(cache, (1, 2), (3, 5))
    assert cache.range() is None
    with pytest.raises(CacheMissError, match="holds nothing"):
        cache.retrieve(1, 1)


def test_gaps_and_layout_changes_start_afresh() -> None:
    cache = JournaledEditsCache(100 * OP)
    fill(cache, (1, 5), (8, 2))
    assert cache.range() == (8, 9)
    fill(cache, (10, 2), layout=-65)
    assert cache.range() == (10, 11)
    count, data = cache.retrieve(10, 5)
    assert count == 2 and data[:8] == header(-65)


def test_disabled_cache_stores_nothing() -> None:
    cache = JournaledEditsCache(0)
    fill(cache, (1, 3))
    assert not cache.enabled and cache.range() is None


def test_journal_serves_synced_batches_from_memory(tmp_path: Path) -> None:
    ns = NamespaceInfo(1, "CID-c")
    j = Journal("c", JNStorage(tmp_path / "c"))
    try:
        j.format(ns, force=False)
        j.new_epoch(ns, 1)
        serial = iter(range(1, 1000))

        def req(committed: int | None = None) -> pb.RequestInfoProto:
            r = pb.RequestInfoProto(
                journal_id=pb.JournalIdProto(identifier="c"), epoch=1, ipc_serial=next(serial)
            )
            if committed is not None:
                r.committed_txid = committed
            return r

        j.start_log_segment(req(), 1, -64)
        data, _ = batch(1, 3)
        j.journal(req(), 1, 1, 3, data)
        data, _ = batch(4, 3)
        j.journal(req(3), 1, 4, 3, data)
        resp = j.get_journaled_edits(2, 3)
        assert resp.txn_count == 3 and txids(resp.edit_log) == [2, 3, 4]
        assert resp.committed_txid == 3 and resp.highest_written_txid == 6
        assert j.get_journaled_edits(7, 10).txn_count == 0
        assert j.counters.rpc_empty_responses == 1
        assert j.counters.txns_served_via_rpc == 3
        with pytest.raises(InvalidRequestError, match="must be positive"):
            j.get_journaled_edits(0, 5)
        j.new_epoch(ns, 2)  # a new writer: the old tail must not be served
        old = j.get_journaled_edits(2, 3)
        assert old.txn_count == 0 and old.edit_log == b""
        assert (old.last_writer_epoch, old.last_promised_epoch) == (1, 2)
        assert j.counters.rpc_empty_responses == 2
    finally:
        j.close()


def test_long_poll_answers_early_only_with_committed_edits(tmp_path: Path) -> None:
    ns = NamespaceInfo(1, "CID-c")
    j = Journal("c", JNStorage(tmp_path / "c"))
    try:
        j.format(ns, force=False)
        j.new_epoch(ns, 1)
        serial = iter(range(1, 1000))

        def req(committed: int | None = None) -> pb.RequestInfoProto:
            r = pb.RequestInfoProto(
                journal_id=pb.JournalIdProto(identifier="c"), epoch=1, ipc_serial=next(serial)
            )
            if committed is not None:
                r.committed_txid = committed
            return r

        j.start_log_segment(req(), 1, -64)
        resp, ready = j.poll_journaled_edits(1, 10)
        assert (resp.txn_count, ready) == (0, False)  # nothing written: wait
        data, _ = batch(1, 3)
        j.journal(req(), 1, 1, 3, data)
        resp, ready = j.poll_journaled_edits(1, 10)
        assert (resp.txn_count, ready) == (3, False)  # written, none known committed: wait
        data, _ = batch(4, 3)
        j.journal(req(3), 1, 4, 3, data)
        resp, ready = j.poll_journaled_edits(1, 10)
        assert (resp.txn_count, resp.committed_txid, ready) == (6, 3, True)
        resp, ready = j.poll_journaled_edits(4, 10)
        assert (resp.txn_count, ready) == (3, False)  # 4-6 are not committed yet: wait
        j.heartbeat(req(6))
        assert j.poll_journaled_edits(4, 10)[1]
    finally:
        j.close()
