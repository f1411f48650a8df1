"""The data chaos run's rules (design §B.21): the schedule from the seed alone, the files'
bytes from the seed and path, the verdicts over what was acknowledged, and fsck's."""

from __future__ import annotations

import hashlib

import pytest

from qjm.testing.chaos.data_run import (
    DATA_KINDS,
    MAX_FILE,
    DataSummary,
    data_schedule,
    file_data,
    files_with_problems,
    judge,
    settled,
)


def test_the_schedule_is_the_seeds_alone() -> None:
    a, b = data_schedule(7, 30), data_schedule(7, 30)
    assert a == b and a != data_schedule(8, 30)
    assert {x.kind for x in a} == set(DATA_KINDS)  # 30 draws of 4 weighted kinds
    assert all(1.0 <= x.hold_s <= 6.0 and 1.0 <= x.gap_s <= 4.0 for x in a)
    assert [x.index for x in a] == list(range(30))
    only = data_schedule(7, 10, ("corrupt-replica",))
    assert {x.kind for x in only} == {"corrupt-replica"}


def test_a_files_bytes_are_its_seeds_and_paths() -> None:
    assert file_data(3, "/data/w0/f00001") == file_data(3, "/data/w0/f00001")
    assert file_data(3, "/data/w0/f00001") != file_data(3, "/data/w0/f00002")
    sizes = {len(file_data(3, f"/data/w0/f{i:05d}")) for i in range(50)}
    assert max(sizes) <= MAX_FILE and len(sizes) > 40


@pytest.mark.parametrize(
    ("stored", "lost", "changed"),
    [
        ({"/a": b"x", "/b": b"y"}, [], []),
        ({"/a": b"x"}, ["/b"], []),  # /b gone
        ({"/a": b"x", "/b": b"z"}, [], ["/b"]),  # /b holds other bytes
    ],
)
def test_the_verdict(stored: dict[str, bytes], lost: list[str], changed: list[str]) -> None:
    acked = {p: hashlib.sha256(d).hexdigest() for p, d in {"/a": b"x", "/b": b"y"}.items()}

    def read(path: str) -> bytes:
        if path not in stored:
            raise FileNotFoundError(path)
        return stored[path]

    v = judge(acked, read)
    assert (v.checked, v.lost, v.changed, v.ok) == (2, lost, changed, not lost and not changed)


def test_a_run_is_ok_only_healthy_with_nothing_lost_changed_or_misread() -> None:
    s = DataSummary(1, healthy=True)
    assert s.ok
    for bad in (
        DataSummary(1, healthy=False),
        DataSummary(1, healthy=True, lost=["/a"]),
        DataSummary(1, healthy=True, changed=["/a"]),
        DataSummary(1, healthy=True, reads_wrong=["/a"]),
    ):
        assert not bad.ok


FSCK = """FSCK started by root (auth:SIMPLE) from /127.0.0.1 for path /data at Fri
/data/w0/f00408: CORRUPT blockpool BP-1 block blk_1073744097

/data/w0/f00408: CORRUPT 1 blocks of total size 0 B.
/data/w1/f00002:  Under replicated BP-1:blk_1_1001. Target Replicas is 3 but found 2 live
/data/w2/f00009: MISSING 1 blocks of total size 10 B.
Status: CORRUPT
FSCK ended at Fri Nov 27 15:00:00 UTC 2026 in 3 milliseconds


The filesystem under path '/data' is CORRUPT"""


def test_fsck_names_the_files_with_problems_and_settles_on_the_acknowledged() -> None:
    assert files_with_problems(FSCK) == {"/data/w0/f00408", "/data/w1/f00002", "/data/w2/f00009"}
    assert settled(FSCK, {"/data/w0/f00001", "/data/w1/f00001"})  # the damaged: not acked
    assert not settled(FSCK, {"/data/w1/f00002"})
    assert not settled(FSCK.split("FSCK ended")[0], set())  # a report cut short
