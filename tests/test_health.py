"""`journal status` flags impossible states (design §J.16): rules, a Journal, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import JNFactory, read_json, run_qjm
from qjm.journalnode.health import DiskFacts, journal_problems
from qjm.journalnode.journal import Journal
from qjm.journalnode.journal_status import status_of
from qjm.journalnode.storage import JNStorage
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import NamespaceInfo
from raw_writer import JID, RawWriter

NS = NamespaceInfo(namespace_id=7, cluster_id="CID-health")


def status(**kw: object) -> pb.JournalStatusProto:
    """A formatted journal's status with these fields."""
    return pb.JournalStatusProto(jid="j", is_formatted=True, **kw)  # type: ignore[arg-type]


def test_a_healthy_journal_has_no_problems() -> None:
    st = status(last_promised_epoch=3, last_writer_epoch=3, highest_written_txid=20)
    st.committed_txid = 20
    disk = DiskFacts(segments=[(1, 10), (11, 20), (21, None)])
    assert journal_problems(st, disk) == []
    assert journal_problems(pb.JournalStatusProto(jid="j"), DiskFacts()) == []


def test_each_impossible_state_is_named() -> None:
    cases: list[tuple[pb.JournalStatusProto, DiskFacts, str]] = [
        (
            status(last_promised_epoch=0, last_writer_epoch=2, highest_written_txid=5),
            DiskFacts(segments=[(1, 5)]),
            "promised epoch 0 is below writer epoch 2",
        ),
        (
            status(last_promised_epoch=0, last_writer_epoch=0, highest_written_txid=5),
            DiskFacts(has_promise_file=False, segments=[(1, 5)]),
            "last-promised-epoch is missing",
        ),
        (
            status(last_promised_epoch=1, last_writer_epoch=1, highest_written_txid=5),
            DiskFacts(segments=[(1, 5)]),
            "",  # committed set below
        ),
        (
            status(last_promised_epoch=1, last_writer_epoch=1, highest_written_txid=10),
            DiskFacts(segments=[(1, 10), (5, None)]),
            "in-progress segment 5 is older than finalized segment 1-10",
        ),
        (
            status(last_promised_epoch=1, last_writer_epoch=1, highest_written_txid=12),
            DiskFacts(segments=[(1, 10), (8, 12)]),
            "finalized segments 1-10 and 8-12 overlap",
        ),
        (
            status(last_promised_epoch=1, last_writer_epoch=1, highest_written_txid=3),
            DiskFacts(segments=[(1, 10)]),
            "highest written txid 3 is below the end of finalized segment 1-10",
        ),
        (
            status(last_promised_epoch=2, last_writer_epoch=1, highest_written_txid=5),
            DiskFacts(awaiting_new_epoch=True, segments=[(1, 5)]),
            "awaiting a new writer's new_epoch",
        ),
        (
            pb.JournalStatusProto(jid="j"),
            DiskFacts(segments=[(1, 5)]),
            "no VERSION",
        ),
    ]
    cases[2][0].committed_txid = 9
    cases[2] = (cases[2][0], cases[2][1], "committed txid 9 is above the highest written txid 5")
    for st, disk, needle in cases:
        found = journal_problems(st, disk)
        assert any(needle in p for p in found), (needle, found)


def test_journal_status_flags_a_deleted_promise(tmp_path: Path) -> None:
    j = Journal("j", JNStorage(tmp_path / "j"))
    try:
        j.format(NS, force=False)
        j.new_epoch(NS, 1)
        j.start_log_segment(
            pb.RequestInfoProto(
                journal_id=pb.JournalIdProto(identifier="j"), epoch=1, ipc_serial=1
            ),
            1,
            -64,
        )
        assert list(status_of(j).problems) == []
    finally:
        j.close()
    (tmp_path / "j" / "current" / "last-promised-epoch").unlink()
    j = Journal("j", JNStorage(tmp_path / "j"))
    try:
        problems = list(status_of(j).problems)
    finally:
        j.close()
    assert any("promised epoch 0 is below writer epoch 1" in p for p in problems), problems
    assert any("last-promised-epoch is missing" in p for p in problems), problems


@pytest.mark.slow
async def test_status_cli_shows_problems_in_table_and_json(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, epoch=1)
    try:
        await w.format()
        await w.new_epoch()
        await w.start(1)
        await w.write(1, 1, 3, committed=0)
    finally:
        await w.close()
    jn_factory.stop(jn)
    (jn.edits_dir / JID / "current" / "last-promised-epoch").unlink()
    jn = jn_factory.start(jn.name, jn.rpc, jn.http)
    uri = f"qjournal://{jn.rpc}/{JID}"
    js = run_qjm("journal", "status", "--uri", uri, "--json")
    assert js.returncode == 0, js.stderr
    node = read_json(js.stdout)["nodes"][0]  # type: ignore[index]
    assert any("promised epoch 0 is below writer epoch 1" in p for p in node["problems"])  # type: ignore[index]
    table = run_qjm("journal", "status", "--uri", uri)
    assert table.returncode == 0, table.stderr
    assert f"PROBLEM {jn.rpc}: promised epoch 0 is below writer epoch 1" in table.stdout
