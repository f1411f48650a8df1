"""JournalNodeSyncer with real processes: deleted segments and a wiped node come back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import JNFactory, JNProcess, run_qjm
from qjm.editlog.file_names import finalized_name
from qjm.testing.wait import wait_until
from raw_writer import JID, RawWriter
from test_journalnode_server import http_get

SYNC_MS = "150"
DEADLINE = 20.0


def seg_path(jn: JNProcess, start: int, end: int) -> Path:
    """A finalized segment file of jn."""
    return jn.edits_dir / JID / "current" / finalized_name(start, end)


def start_synced_trio(
    jn_factory: JNFactory, sync_ms: str = SYNC_MS, first: list[JNProcess] | None = None
) -> list[JNProcess]:
    """Three JournalNodes that know each other as peers (first: peerless ones to restart)."""
    first = first or [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    rpcs = [jn.rpc for jn in first]
    out = []
    for jn in first:
        jn_factory.stop(jn)
    for i, jn in enumerate(first):
        peers = ",".join(r for k, r in enumerate(rpcs) if k != i)
        out.append(
            jn_factory.start(
                jn.name, jn.rpc, jn.http, "--peers", peers, "--sync-interval-ms", sync_ms
            )
        )
    return out


async def synced_trio_with_segments(jn_factory: JNFactory) -> list[JNProcess]:
    """Three nodes holding SEGMENTS, restarted as peers (written first: no sync races)."""
    first = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    await write_segments(first, SEGMENTS)
    return start_synced_trio(jn_factory, first=first)


async def write_segments(jns: list[JNProcess], segments: list[tuple[int, int]]) -> None:
    """Format the trio and write finalized segments on all, then open one more."""
    writers = [RawWriter(jn, epoch=1) for jn in jns]
    try:
        for w in writers:
            await w.format()
            await w.new_epoch()
        for start, end in segments:
            for w in writers:
                await w.start(start)
                await w.write(start, start, end - start + 1, committed=start - 1)
                await w.finalize(start, end)
        nxt = segments[-1][1] + 1
        for w in writers:
            await w.start(nxt)
            await w.write(nxt, nxt, 1, committed=nxt - 1)
    finally:
        for w in writers:
            await w.close()


SEGMENTS = [(1, 3), (4, 6), (7, 9), (10, 12)]


@pytest.mark.slow
async def test_deleted_segments_come_back(jn_factory: JNFactory) -> None:
    jn1, jn2, jn3 = await synced_trio_with_segments(jn_factory)
    original = seg_path(jn3, 4, 6).read_bytes()
    # one segment on one node
    seg_path(jn1, 4, 6).unlink()
    wait_until("4-6 back on jn1", lambda: seg_path(jn1, 4, 6).exists(), timeout_s=DEADLINE)
    assert seg_path(jn1, 4, 6).read_bytes() == original
    # several non-adjacent segments, and the same segment on two nodes
    for path in (seg_path(jn1, 1, 3), seg_path(jn1, 7, 9), seg_path(jn2, 7, 9)):
        path.unlink()
    wait_until(
        "1-3 and 7-9 back on jn1 and 7-9 on jn2",
        lambda: all(
            p.exists() for p in (seg_path(jn1, 1, 3), seg_path(jn1, 7, 9), seg_path(jn2, 7, 9))
        ),
        timeout_s=DEADLINE,
    )
    assert seg_path(jn2, 7, 9).read_bytes() == seg_path(jn3, 7, 9).read_bytes()
    status, body = http_get(f"http://{jn1.http}/metrics")
    text = body.decode()
    assert status == 200
    assert f'qjm_journal_segments_synced_total{{jid="{JID}"}} 3.0' in text
    assert "qjm_journalnode_syncer_running 1.0" in text
    assert not list((jn1.edits_dir / JID / "edits.sync").iterdir())  # staging is emptied


@pytest.mark.slow
async def test_a_wiped_node_recreates_its_version_and_catches_up(jn_factory: JNFactory) -> None:
    jn1, _, jn3 = await synced_trio_with_segments(jn_factory)
    jn_factory.stop(jn3)
    shutil.rmtree(jn3.edits_dir / JID)
    jn3 = jn_factory.start(jn3.name, jn3.rpc, jn3.http, *jn3.extra)
    wait_until(
        "every finalized segment back on the wiped jn3",
        lambda: all(seg_path(jn3, s, e).exists() for s, e in SEGMENTS),
        timeout_s=DEADLINE,
    )
    version = (jn3.edits_dir / JID / "current" / "VERSION").read_text()
    assert "namespaceID=4242" in version and "clusterID=CID-server-test" in version
    assert (jn3.edits_dir / JID / "current" / "last-promised-epoch").read_text().strip() == "1"
    for s, e in SEGMENTS:
        assert seg_path(jn3, s, e).read_bytes() == seg_path(jn1, s, e).read_bytes()


@pytest.mark.slow
def test_a_node_that_missed_segments_fetches_them_when_it_takes_the_next(
    jn_factory: JNFactory,
) -> None:
    # The interval alone would take ten minutes: only the segment start's wake-up is in time.
    jns = start_synced_trio(jn_factory, sync_ms="600000")
    uri = "qjournal://" + ";".join(jn.rpc for jn in jns) + f"/{JID}"

    def qjm_ok(*args: str) -> None:
        done = run_qjm("journal", *args, "--uri", uri)
        assert done.returncode == 0, done.stderr

    def finalized(jn: JNProcess) -> set[str]:
        return {p.name for p in (jn.edits_dir / JID / "current").glob("edits_0*")}

    qjm_ok("format")
    qjm_ok("write", "--count", "3", "--finalize")
    jn_factory.stop(jns[2])
    for _ in range(2):  # jn3 misses two segments; recovery gives it back only the newest
        qjm_ok("write", "--count", "3", "--finalize")
    missed = finalized(jns[0]) - finalized(jns[2])
    assert len(missed) == 2, (finalized(jns[0]), finalized(jns[2]))
    jns[2] = jn_factory.start(jns[2].name, jns[2].rpc, jns[2].http, *jns[2].extra)
    qjm_ok("write", "--count", "3")  # jn3 takes this segment with a hole below it
    wait_until(
        "jn3 fetched the segments it missed",
        lambda: missed <= finalized(jns[2]),
        timeout_s=DEADLINE,
    )
