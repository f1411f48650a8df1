"""Fencing by epoch with real JournalNodes (design 2.3-2.5; Hadoop's TestEpochsAreUnique)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from qjm.client.admin import new_namespace_info
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.quorum_call import QuorumError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import NamespaceMismatchError, StaleEpochError
from qjm.protocol.qjournal import journal_id
from qjm_cluster import (
    InjectedFault,
    JNCluster,
    NodeFaults,
    check_one_value_per_txid,
    payload,
    settle,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)


async def test_successive_writers_get_epochs_1_to_5(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        for expected in range(1, 6):
            q = cluster.qjm(jid)
            try:
                await q.recover_unfinalized_segments()
                assert q.epoch == expected
            finally:
                await settle(q)


class FlakyEpochs(NodeFaults):
    """Fails get_journal_state with p=0.1 and new_epoch with p=0.4."""

    def __init__(self, r: random.Random) -> None:
        super().__init__()
        self.r = r
        self.before = self._before

    def _before(self, method: str, request: Any) -> None:
        p = {"getJournalState": 0.1, "newEpoch": 0.4}.get(method, 0.0)
        if self.r.random() < p:
            raise InjectedFault(f"Injected failure of {method}")


async def test_epochs_strictly_increase_under_random_failures(tmp_path: Path) -> None:
    r = random.Random(42)
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        previous = 0
        won = 0
        for _ in range(40):
            q = cluster.qjm(jid, [FlakyEpochs(r) for _ in range(3)])
            try:
                await q.create_new_unique_epoch()
            except QuorumError as e:
                assert "Injected" in str(e)
                continue
            finally:
                await settle(q)
            assert q.epoch is not None and q.epoch > previous
            previous = q.epoch
            won += 1
        assert won >= 10


async def test_concurrent_writers_never_share_an_epoch(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        qs = [cluster.qjm(jid) for _ in range(6)]
        try:
            results = await asyncio.gather(
                *(q.create_new_unique_epoch() for q in qs), return_exceptions=True
            )
            epochs = [
                q.epoch
                for q, res in zip(qs, results, strict=True)
                if not isinstance(res, BaseException)
            ]
            for res in results:
                if isinstance(res, BaseException):
                    assert isinstance(res, QuorumError), res
            assert epochs, "no writer won an epoch"
            assert len(set(epochs)) == len(epochs), epochs
        finally:
            for q in qs:
                await settle(q)


async def test_deposed_writer_fails_naming_both_epochs(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        old = cluster.qjm(jid)
        new = cluster.qjm(jid)
        try:
            await old.recover_unfinalized_segments()
            stream = await old.start_log_segment(1)
            await write_txns(stream, 1, 3, tag="old")
            assert await new.recover_unfinalized_segments() == 3  # fences epoch 1
            assert new.epoch == 2
            stream.write_op(0x80, payload(4, "old"))
            with pytest.raises(QuorumError) as info:
                await stream.flush()
            msg = str(info.value)
            assert "IPC's epoch 1 is less than the last promised epoch 2" in msg
            assert isinstance(info.value.epoch_error, StaleEpochError)
            # The stream stays broken: every later call gives the same error.
            with pytest.raises(QuorumError, match="epoch 1") as again:
                await stream.flush()
            assert isinstance(again.value.epoch_error, StaleEpochError)
        finally:
            await settle(old)
            await settle(new)
        assert all(4 not in cluster.read_segments(i, jid, False).get((1, 3), {}) for i in range(3))
        check_one_value_per_txid(cluster, jid)


async def test_no_op_of_the_old_writer_lands_after_a_majority_promised(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        old = cluster.qjm(jid)
        try:
            await old.recover_unfinalized_segments()
            stream = await old.start_log_segment(1)
            await write_txns(stream, 1, 2, tag="old")
            # A new writer wins epoch 2 on JN0 and JN1 only (JN2 looks down to it).
            faults = [NodeFaults(), NodeFaults(), NodeFaults(down=True)]
            new = cluster.qjm(jid, faults)
            try:
                await new.create_new_unique_epoch()
            finally:
                await settle(new)
            # The old writer's next batch reaches JN2 at most: never a quorum.
            assert stream.write_op(0x80, payload(3, "old")) == 3
            with pytest.raises(
                QuorumError, match="epoch 1 is less than the last promised epoch 2"
            ) as info:
                await stream.flush()
            assert isinstance(info.value.epoch_error, StaleEpochError)
        finally:
            await settle(old)
        for i in (0, 1):  # the nodes that promised epoch 2 hold nothing after txid 2
            for ops in cluster.read_segments(i, jid, finalized_only=False).values():
                assert max(ops) <= 2, f"jn{i} took an op of the deposed writer: {sorted(ops)}"


async def test_journalnode_of_another_namespace_rejects_the_writer(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        ns = await cluster.format(jid)
        other = new_namespace_info(cluster_id="CID-other", namespace_id=777)
        client = JournalNodeClient(cluster.address(2))
        try:
            await client.call(
                "format", pb.FormatRequestProto(jid=journal_id(jid), ns_info=other, force=True), 10
            )
        finally:
            await client.close()
        faults = [NodeFaults() for _ in range(3)]
        q = cluster.qjm(jid, faults, ns_info=ns)
        try:
            await q.recover_unfinalized_segments()  # 2 of 3 suffice
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            assert q.epoch == 1
        finally:
            await settle(q)
        # With two nodes of another namespace, the writer cannot start.
        client = JournalNodeClient(cluster.address(1))
        try:
            await client.call(
                "format", pb.FormatRequestProto(jid=journal_id(jid), ns_info=other, force=True), 10
            )
        finally:
            await client.close()
        q = cluster.qjm(jid, ns_info=ns)
        try:
            with pytest.raises(QuorumError) as info:
                await q.recover_unfinalized_segments()
        finally:
            await settle(q)
        assert any(isinstance(e, NamespaceMismatchError) for e in info.value.errors.values())
        assert "incompatible namespace" in str(info.value)
        assert "777" in str(info.value)
