"""Table tests of chaining segments into one run of txids (qjm.editlog.segments.txid_run)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from qjm.editlog.segments import txid_run


@dataclass(frozen=True)
class Seg:
    start: int
    end: int | None


Spans = list[tuple[int, int | None]]


@pytest.mark.parametrize(
    ("segments", "from_txid", "to_txid", "run", "gaps"),
    [
        ([], 1, None, [], []),
        ([(1, 10), (11, 20), (21, None)], 1, None, [(1, 10), (11, 20), (21, None)], []),
        # listed in any order
        ([(21, None), (1, 10), (11, 20)], 1, None, [(1, 10), (11, 20), (21, None)], []),
        # a finalized segment wins over an in-progress copy of the same start
        ([(11, None), (1, 10), (11, 20)], 1, None, [(1, 10), (11, 20)], []),
        # and the longer of two finalized copies of the same start
        ([(1, 5), (1, 10), (11, 12)], 1, None, [(1, 10), (11, 12)], []),
        # one starting inside the run is a stale or overlapping copy
        ([(1, 10), (5, 8), (5, 15), (11, 20)], 1, None, [(1, 10), (11, 20)], []),
        # segments ending before from_txid are skipped; the one holding it is taken
        ([(1, 10), (11, 20), (21, 30)], 15, None, [(11, 20), (21, 30)], []),
        ([(1, 10), (11, 20)], 11, None, [(11, 20)], []),
        ([(1, 10), (11, None)], 30, None, [(11, None)], []),
        # nothing starts after to_txid
        ([(1, 10), (11, 20), (21, None)], 1, 10, [(1, 10)], []),
        ([(1, 10), (11, 20), (21, None)], 1, 11, [(1, 10), (11, 20)], []),
        # holes are taken over and named
        ([(1, 10), (15, 20)], 1, None, [(1, 10), (15, 20)], [(11, 14)]),
        ([(5, 10)], 1, None, [(5, 10)], [(1, 4)]),
        ([(1, 3), (7, 9), (12, None)], 2, None, [(1, 3), (7, 9), (12, None)], [(4, 6), (10, 11)]),
        # an in-progress segment of unknown end ends the run
        ([(1, None), (5, 10)], 1, None, [(1, None)], []),
    ],
)
def test_txid_run(
    segments: Spans, from_txid: int, to_txid: int | None, run: Spans, gaps: list[tuple[int, int]]
) -> None:
    got = txid_run([Seg(s, e) for s, e in segments], from_txid, to_txid)
    assert [(s.start, s.end) for s in got.segments] == run
    assert got.gaps == gaps
