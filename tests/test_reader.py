"""Reading the journal from real JournalNode processes: manifests, redundant streams, tailing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import aiohttp
import pytest

from conftest import JNFactory, JNProcess, run_qjm
from qjm.client.edit_streams import ReadError, SegmentSource, read_segment
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.config import QJournalSettings
from qjm.editlog.file_names import finalized_name
from qjm.editlog.framing import HEADER_LEN, OP_OPAQUE, encode_op, iter_ops
from qjm.editlog.ops import MkdirOp
from qjm.editlog.ops import encode_op as encode_hdfs_op
from qjm.editlog.ops.types import PermissionStatus
from qjm.protocol import qjournal_pb2 as pb
from raw_writer import NS, ns_info
from test_journalnode_server import JID, RawWriter, txns


def seg_file(jn: JNProcess, start: int, end: int) -> Path:
    """A finalized segment file."""
    return jn.edits_dir / JID / "current" / finalized_name(start, end)


async def setup_writers(jns: list[JNProcess]) -> list[RawWriter]:
    """Format all nodes and win epoch 1 on each."""
    writers = [RawWriter(jn, epoch=1) for jn in jns]
    for w in writers:
        await w.format()
        await w.new_epoch()
    return writers


async def finalized_trio(jn_factory: JNFactory, segments: list[tuple[int, int]]) -> list[JNProcess]:
    """Three started JournalNodes holding these finalized segments (the writers closed)."""
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    writers = await setup_writers(jns)
    try:
        await finalized_segments(writers, segments)
    finally:
        for w in writers:
            await w.close()
    return jns


async def finalized_segments(writers: list[RawWriter], segments: list[tuple[int, int]]) -> None:
    """Write and finalize segments on every node."""
    for start, end in segments:
        for w in writers:
            await w.start(start)
            await w.write(start, start, end - start + 1, committed=start - 1)
            await w.finalize(start, end)


def reader_for(jns: list[JNProcess]) -> QuorumJournalReader:
    """A reader of the trio."""
    return QuorumJournalReader(
        parse_qjournal_uri(f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}")
    )


async def read_all(
    reader: QuorumJournalReader, from_txid: int = 1, in_progress: bool = False
) -> list[tuple[int, bytes]]:
    """(txid, body) of every op read."""
    return [(op.txid, op.body) async for op in reader.read(from_txid, in_progress)]


def expected(first: int, last: int) -> list[tuple[int, bytes]]:
    """What read_all returns for txids first..last."""
    return [
        (op.txid, op.body) for op in iter_ops(b"\0" * HEADER_LEN + txns(first, last - first + 1))
    ]


SEGMENTS = [(1, 3), (4, 6), (7, 9)]


@pytest.mark.slow
async def test_reads_across_nodes_each_missing_different_segments(jn_factory: JNFactory) -> None:
    jns = await finalized_trio(jn_factory, SEGMENTS)
    seg_file(jns[0], 4, 6).unlink()
    seg_file(jns[1], 7, 9).unlink()
    seg_file(jns[2], 1, 3).unlink()
    async with reader_for(jns) as reader:
        assert await read_all(reader) == expected(1, 9)
        assert await read_all(reader, 5) == expected(5, 9)  # from inside a segment
        manifest = await reader.manifest(1)
        assert [(s.start, s.end) for s in manifest.segments] == SEGMENTS
        assert all(s.urls for s in manifest.segments)  # from the majority that answered first


@pytest.mark.slow
async def test_a_reader_that_knows_its_namespace_names_it_to_the_nodes(
    jn_factory: JNFactory,
) -> None:
    jns = await finalized_trio(jn_factory, SEGMENTS[:1])
    uri = parse_qjournal_uri(f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}")
    async with QuorumJournalReader(uri, ns_info=NS) as reader:
        manifest = await reader.manifest(1)
        urls = [u for s in manifest.segments for u in s.urls]
        assert urls and all("&storageInfo=-64%3A4242%3A0%3ACID-server-test" in u for u in urls)
        assert await read_all(reader) == expected(1, 3)
    # nodes formatted for another namespace than the reader's refuse to serve it
    async with QuorumJournalReader(uri, ns_info=ns_info(99, "CID-other")) as reader:
        with pytest.raises(ReadError, match="This node has storage info '-64:4242:0:"):
            await read_all(reader)


@pytest.mark.slow
async def test_read_fails_clearly_when_a_majority_is_down(jn_factory: JNFactory) -> None:
    jns = await finalized_trio(jn_factory, SEGMENTS[:1])
    jn_factory.stop(jns[1])
    jn_factory.stop(jns[2])
    async with reader_for(jns) as reader:
        with pytest.raises(QuorumError, match="quorum size 2/3") as info:
            await read_all(reader)
        assert jns[1].rpc in str(info.value) and "unreachable" in str(info.value)


@pytest.mark.slow
async def test_in_progress_reads_return_only_what_a_quorum_holds(jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    writers = await setup_writers(jns)
    try:
        await finalized_segments(writers, SEGMENTS[:1])
        for w, n in zip(writers, (5, 3, 2), strict=True):  # 4-8, 4-6, 4-5
            await w.start(4)
            await w.write(4, 4, n, committed=3)
        async with reader_for(jns) as reader:
            # committed is still 3: nothing of the open segment is visible
            assert await read_all(reader, 1, in_progress=True) == expected(1, 3)
            for w in writers:
                await w.call("heartbeat", pb.HeartbeatRequestProto(req=w.req(committed=6)))
            # A majority holds 4-6 (jn1 and jn2); 7-8 only jn1. The reader hears every
            # node, not only the first majority to answer, so it reads through 6.
            assert await read_all(reader, 1, in_progress=True) == expected(1, 6)
            jn_factory.stop(jns[2])  # now the only majority is jn1 + jn2
            assert await read_all(reader, 1, in_progress=True) == expected(1, 6)
            assert await reader.read_journaled(4) == [
                op for op in iter_ops(b"\0" * HEADER_LEN + txns(4, 3))
            ]
            assert await reader.read_journaled(7) == []
            # Committed txids no majority holds: the read fails naming them, never a
            # silent short prefix (design §J.10).
            for w in writers[:2]:
                await w.call("heartbeat", pb.HeartbeatRequestProto(req=w.req(committed=8)))
        short = QuorumJournalReader(
            reader.uri, QJournalSettings(select_input_streams_timeout_ms=2000)
        )
        async with short:
            with pytest.raises(ReadError, match="txids 7-8 of journal .* are committed"):
                await read_all(short, 1, in_progress=True)
            # A read that stops before the missing txids is complete.
            got = [(op.txid, op.body) async for op in short.read(1, True, to_txid=6)]
            assert got == expected(1, 6)
    finally:
        for w in writers:
            await w.close()


@pytest.mark.slow
async def test_redundant_stream_switches_node_mid_segment(jn_factory: JNFactory) -> None:
    jns = await finalized_trio(jn_factory, [(1, 10)])
    op_size = len(txns(1, 1))
    for jn, bad_txid in ((jns[0], 4), (jns[1], 8)):  # jn3 keeps a good copy
        path = seg_file(jn, 1, 10)
        data = bytearray(path.read_bytes())
        data[HEADER_LEN + (bad_txid - 1) * op_size + 20] ^= 0x40
        path.write_bytes(bytes(data))
    urls = tuple(f"http://{jn.http}/getJournal?jid={JID}&segmentTxId=1" for jn in jns)
    async with aiohttp.ClientSession() as session:
        got = [
            (op.txid, op.body)
            async for op in read_segment(session, SegmentSource(1, 10, False, urls), 2)
        ]
        assert got == expected(2, 10)  # 2-3 from jn1, 4-7 from jn2, 8-10 from jn3
        with pytest.raises(
            ReadError, match="could not read txids 4-10 of segment 1-10 from any JournalNode"
        ) as info:
            _ = [op async for op in read_segment(session, SegmentSource(1, 10, False, urls[:1]), 1)]
        assert "txid 4" in str(info.value)


@pytest.mark.slow
async def test_tail_follows_committed_edits(jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    writers = await setup_writers(jns)
    try:
        for w in writers:
            await w.start(1)
        async with reader_for(jns) as reader:
            tail = reader.tail(1, wait_ms=200)
            seen: list[int] = []
            for first in range(1, 31, 5):
                for w in writers:
                    await w.write(1, first, 5, committed=first - 1)
                for w in writers:  # the writer reports the commit of this batch
                    await w.call(
                        "heartbeat", pb.HeartbeatRequestProto(req=w.req(committed=first + 4))
                    )
                while len(seen) < first + 4:
                    batch = await tail.__anext__()
                    seen.extend(op.txid for op in batch)
            assert seen == list(range(1, 31))
            await tail.aclose()
    finally:
        for w in writers:
            await w.close()


@pytest.mark.slow
async def test_read_and_tail_commands_print_json_lines_and_xml(jn_factory: JNFactory) -> None:

    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    writers = await setup_writers(jns)
    try:
        await finalized_segments(writers, [(1, 4)])
        mkdir = MkdirOp(
            inode_id=16386,
            path="/user/qjm",
            timestamp=1,
            permission_status=PermissionStatus("hdfs", "supergroup", 0o755),
        )
        records = encode_hdfs_op(mkdir, 5) + encode_op(0x80, 6, b"opaque")
        for w in writers:
            await w.start(5)
            await w.call(
                "journal",
                pb.JournalRequestProto(
                    req=w.req(committed=4),
                    segment_txid=5,
                    first_txid=5,
                    num_txns=2,
                    records=records,
                ),
            )
            await w.call("heartbeat", pb.HeartbeatRequestProto(req=w.req(committed=6)))
    finally:
        for w in writers:
            await w.close()
    uri = f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}"
    r = await asyncio.to_thread(run_qjm, "journal", "read", "--uri", uri, "--from", "3")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["txid"] for d in lines] == [3, 4, 5, 6]
    assert lines[2]["opcode"] == "OP_MKDIR" and lines[2]["path"] == "/user/qjm"
    assert all("opcode" in d for d in lines)
    r = await asyncio.to_thread(
        run_qjm, "journal", "read", "--uri", uri, "--format", "xml", "--finalized-only"
    )
    assert r.returncode == 0, r.stderr
    records = ET.fromstring(r.stdout).findall("RECORD")
    assert [rec.findtext("DATA/TXID") for rec in records] == ["1", "2", "3", "4"]
    r = await asyncio.to_thread(
        run_qjm, "journal", "tail", "--uri", uri, "--from", "5", "--count", "2"
    )
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["txid"] for line in r.stdout.splitlines()] == [5, 6]


@pytest.mark.slow
async def test_tail_command_follows_the_write_command(jn_factory: JNFactory) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    uri = f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}"
    fmt = await asyncio.to_thread(run_qjm, "journal", "format", "--uri", uri)
    assert fmt.returncode == 0, fmt.stderr
    count = 500
    tail = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "qjm",
        "journal",
        "tail",
        "--uri",
        uri,
        "--from",
        "1",
        "--count",
        str(count + 1),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        write = await asyncio.to_thread(
            run_qjm, "journal", "write", "--uri", uri, "--count", str(count), "--batch", "10"
        )
        assert write.returncode == 0, write.stderr
        acked = [int(line) for line in write.stdout.split()]
        assert acked[-1] == count + 1  # OP_START_LOG_SEGMENT, then the ops
        out, err = await asyncio.wait_for(tail.communicate(), 30)
    finally:
        if tail.returncode is None:
            tail.kill()
            await tail.wait()
    assert tail.returncode == 0, err.decode()
    seen = [json.loads(line)["txid"] for line in out.decode().splitlines()]
    assert seen == list(range(1, acked[-1] + 1))  # every acknowledged txid, nothing more


@pytest.mark.slow
async def test_read_after_a_sigstopped_node_returns_every_committed_op(
    jn_factory: JNFactory,
) -> None:
    """Design §J.10: a node SIGSTOPped during a write lags; read must not stop at its end."""
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    uri = f"qjournal://{';'.join(jn.rpc for jn in jns)}/{JID}"
    done = run_qjm("journal", "format", "--uri", uri)
    assert done.returncode == 0, done.stderr
    settings = QJournalSettings(write_txns_timeout_ms=1_000, start_segment_timeout_ms=1_000)
    q = QuorumJournalManager(uri, None, settings)
    try:
        await q.recover_unfinalized_segments()
        stream = await q.start_log_segment(1)
        for _ in range(20):
            stream.write_op(OP_OPAQUE, b"before")
            await stream.flush()
        os.kill(jns[0].pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 20
            while not q.loggers.channels[0].out_of_sync:  # its batch times out after 1 s
                assert time.monotonic() < deadline, "stopped node never marked out of sync"
                stream.write_op(OP_OPAQUE, b"while stopped")
                await stream.flush()
        finally:
            os.kill(jns[0].pid, signal.SIGCONT)
        for _ in range(30):
            stream.write_op(OP_OPAQUE, b"after")
            last = await stream.flush()
        await asyncio.wait_for(q.loggers.wait_idle(), 30)  # the idle writer reports commit
    finally:
        await q.close()  # the segment stays open: the read needs the committed txid
    # jn2 is slow to answer the read: a reader deciding on the first majority to answer
    # (jn0, which lags, and jn1) would stop at jn0's end.
    os.kill(jns[2].pid, signal.SIGSTOP)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "qjm",
            "journal",
            "read",
            "--uri",
            uri,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        with contextlib.suppress(TimeoutError):
            # A reader that waits for every node is still waiting after this.
            await asyncio.wait_for(asyncio.shield(proc.wait()), 5)
    finally:
        os.kill(jns[2].pid, signal.SIGCONT)
    out_b, err_b = await asyncio.wait_for(proc.communicate(), 60)
    out, err = out_b.decode(), err_b.decode()
    assert proc.returncode == 0, err
    txids = [json.loads(line)["txid"] for line in out.splitlines()]
    assert txids == list(range(1, last + 1)), f"read {len(txids)} of {last} ops; {err}"

    bad = run_qjm("journal", "read", "--uri", uri, "--from", "10", "--to", "5")
    assert bad.returncode != 0 and bad.stdout == ""
    assert "--to 5 is before --from 10" in bad.stderr
