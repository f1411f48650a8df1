"""A JournalNode's resources and start-up: corrupt files, bad segments, limits, log floods."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from conftest import JNFactory
from qjm.client.rpc import JournalNodeClient
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import StorageError

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
