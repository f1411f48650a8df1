"""A JournalNode's resources and start-up: corrupt files, bad segments, limits, log floods."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import JNFactory
from qjm.client.rpc import JournalNodeClient
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import StorageError
from test_journalnode_server import JID, http_get
from test_syncer import SEGMENTS, seg_path, start_synced_trio, wait_until, write_segments

NS = pb.NamespaceInfo(namespace_id=4242, cluster_id="CID-resources")
T = 10.0


def http_json(url: str) -> dict[str, object]:
    """GET a JSON document."""
    with urllib.request.urlopen(url, timeout=T) as resp:
        data: dict[str, object] = json.loads(resp.read())
    return data


async def format_journals(rpc: str, *jids: str) -> None:
    """Format journals on one node and promise epoch 1 on each."""
    client = JournalNodeClient(rpc)
    try:
        for jid in jids:
            await client.call("Format", pb.FormatRequest(jid=jid, ns_info=NS), T)
            await client.call("NewEpoch", pb.NewEpochRequest(jid=jid, ns_info=NS, epoch=1), T)
    finally:
        await client.close()


CORRUPTIONS = {
    "VERSION": b"namespaceID=\xff\xfe\x00\x81garbage\n",
    "last-promised-epoch": b"\x00\xff\xfe\x81\n",
    "paxos/1": b"\x32\x08\x01",  # says 50 bytes follow, holds 2
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
async def test_one_corrupt_file_does_not_stop_the_node(jn_factory: JNFactory, name: str) -> None:
    jn = jn_factory.start("jn0")
    await format_journals(jn.rpc, "good", "bad")
    jn_factory.stop(jn)
    bad_file = jn.edits_dir / "bad" / "current" / name
    bad_file.write_bytes(CORRUPTIONS[name])
    jn = jn_factory.start("jn0", jn.rpc, jn.http)
    log = jn.log.read_text()
    assert str(bad_file) in log, log
    assert "UnicodeDecodeError" not in log and "Traceback" not in log, log
    client = JournalNodeClient(jn.rpc)
    try:
        good = await client.call("GetJournalState", pb.JournalIdRequest(jid="good"), T)
        assert good.last_promised_epoch == 1  # type: ignore[attr-defined]
        with pytest.raises(StorageError, match=str(bad_file)):
            await client.call("GetJournalState", pb.JournalIdRequest(jid="bad"), T)
        st = await client.call("GetNodeStatus", pb.GetNodeStatusRequest(), T)
    finally:
        await client.close()
    problems = list(st.problems)  # type: ignore[attr-defined]
    assert any(str(bad_file) in p for p in problems), problems
    bad = [j for j in st.journals if j.jid == "bad"]  # type: ignore[attr-defined]
    assert bad and any(str(bad_file) in p for p in bad[0].problems)
    doc = http_json(f"http://{jn.http}/status")
    assert any(str(bad_file) in p for p in doc["problems"])  # type: ignore[union-attr]
    assert doc["journals"]["good"]["last_promised_epoch"] == 1  # type: ignore[index]


def segment_intact(path: Path, original: bytes) -> bool:
    """True when a finalized segment file is back with its original bytes."""
    return path.exists() and path.read_bytes() == original


@pytest.mark.parametrize("cut", ["empty", "truncated"])
async def test_a_bad_finalized_segment_is_moved_aside_on_serve_and_repaired(
    jn_factory: JNFactory, cut: str
) -> None:
    jn1, _, jn3 = jns = start_synced_trio(jn_factory)
    await write_segments(jns, SEGMENTS)
    path = seg_path(jn1, 4, 6)
    original = path.read_bytes()
    os.truncate(path, 0 if cut == "empty" else len(original) - 5)
    status, body = http_get(f"http://{jn1.http}/getJournal?jid={JID}&segmentTxId=4")
    assert status != 200, f"served a bad segment: {status} with {len(body)} bytes"
    assert path.name in body.decode(), body
    assert path.with_name(path.name + ".corrupt").exists()
    wait_until("4-6 repaired on jn1", lambda: segment_intact(path, original))
    assert "moved aside" in jn1.log.read_text()
    assert seg_path(jn3, 4, 6).read_bytes() == original


async def test_a_bad_finalized_segment_is_found_at_start_and_repaired(
    jn_factory: JNFactory,
) -> None:
    jn1, _, _ = jns = start_synced_trio(jn_factory)
    await write_segments(jns, SEGMENTS)
    jn_factory.stop(jn1)
    path = seg_path(jn1, 7, 9)
    original = path.read_bytes()
    path.write_bytes(original[:20])
    jn1 = jn_factory.start(jn1.name, jn1.rpc, jn1.http, *jn1.extra)
    assert path.with_name(path.name + ".corrupt").exists() or segment_intact(path, original)
    wait_until("7-9 repaired on jn1", lambda: segment_intact(path, original))
    log = jn1.log.read_text()
    assert path.name in log and "moved aside" in log, log
