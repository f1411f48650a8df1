"""The recovery source rules of design §J.4 as a table (Hadoop's TestSegmentRecoveryComparator)."""

from __future__ import annotations

import itertools

import pytest

from qjm.client.recovery_comparator import (
    RecoveryAnswer,
    RecoveryInvariantError,
    Segment,
    SegmentRecoveryComparator,
    choose_recovery_source,
    compare_responses,
    describe_response,
    seen_epoch,
)


def resp(
    end: int | None,
    *,
    in_progress: bool = True,
    writer: int = 1,
    accepted: int | None = None,
    committed: int | None = None,
    start: int = 1,
) -> RecoveryAnswer:
    segment = None if end is None else Segment(start, end, in_progress)
    return RecoveryAnswer(segment, writer, accepted, committed)


NONE = resp(None)
INPROG_3 = resp(3)
INPROG_4 = resp(4)
FINAL_3 = resp(3, in_progress=False)
INPROG_5_ACCEPTED_2 = resp(5, accepted=2)
INPROG_4_WRITER_3 = resp(4, writer=3)
INPROG_9_ACCEPTED_2 = resp(9, accepted=2, writer=1)

# (better, worse): the first must beat the second, and lose the other way round.
ORDERED = [
    (INPROG_3, NONE),  # rule 1: a segment beats no segment
    (FINAL_3, NONE),
    (FINAL_3, INPROG_4),  # rule 3: at equal epochs, finalized beats a longer in-progress log
    (resp(3, in_progress=False, accepted=2), INPROG_5_ACCEPTED_2),  # ... also when accepted
    (INPROG_5_ACCEPTED_2, FINAL_3),  # rule 2: a newer recovery's copy beats an older decision
    (INPROG_4_WRITER_3, FINAL_3),  # ... and so does a newer writer's
    (resp(3, in_progress=False, accepted=3), resp(3, in_progress=False, accepted=2)),
    (INPROG_4, INPROG_3),  # rule 4: more txns wins at equal epochs
    (INPROG_5_ACCEPTED_2, INPROG_4),  # rule 2: accepted epoch counts as seen
    (resp(3, accepted=2), resp(9)),  # 2.10.7: an accepted shorter log beats a longer one
    (INPROG_4_WRITER_3, INPROG_9_ACCEPTED_2),  # 2.10.6: a newer writer beats a stale accept
    (resp(3, writer=2), resp(5, writer=1)),  # 2.10.6: newer writer epoch beats longer log
    (resp(4, accepted=3, writer=1), resp(6, accepted=2, writer=2)),  # seen 3 beats seen 2
]


@pytest.mark.parametrize(("better", "worse"), ORDERED, ids=range(len(ORDERED)))
def test_ordered_pairs(better: RecoveryAnswer, worse: RecoveryAnswer) -> None:
    assert compare_responses(better, worse) == 1
    assert compare_responses(worse, better) == -1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (NONE, NONE),
        (NONE, resp(None, writer=7)),
        (INPROG_3, resp(3)),
        (FINAL_3, resp(3, in_progress=False, writer=5, accepted=1)),  # both decided in 1
        (resp(4, writer=2), resp(4, accepted=2)),  # seen epoch is the max of both
    ],
)
def test_equal_pairs(a: RecoveryAnswer, b: RecoveryAnswer) -> None:
    assert compare_responses(a, b) == 0
    assert compare_responses(b, a) == 0
    assert compare_responses(a, a) == 0


def test_seen_epoch() -> None:
    assert seen_epoch(resp(3, writer=4)) == 4
    assert seen_epoch(resp(3, writer=4, accepted=6)) == 6
    assert seen_epoch(resp(3, writer=4, accepted=2)) == 4
    # A finalized copy's epoch is the one that decided it, not the node's newest writer.
    assert seen_epoch(resp(3, in_progress=False, writer=4, accepted=2)) == 2
    assert seen_epoch(resp(3, in_progress=False, writer=4)) == 4  # none recorded


def test_finalized_of_different_length_is_an_invariant_violation() -> None:
    with pytest.raises(RecoveryInvariantError, match="finalized copies of segment 1"):
        compare_responses(FINAL_3, resp(4, in_progress=False))


def test_different_segments_cannot_be_compared() -> None:
    with pytest.raises(ValueError, match="starting at 1 and 5"):
        compare_responses(INPROG_3, resp(7, start=5))


def test_choose_none_when_no_node_has_the_segment() -> None:
    assert choose_recovery_source([]) is None
    assert choose_recovery_source([("a", NONE), ("b", resp(None, writer=3))]) is None


def test_choose_is_order_independent_for_strict_winners() -> None:
    nodes = [("jn1", resp(150)), ("jn2", resp(153)), ("jn3", resp(125))]
    for perm in itertools.permutations(nodes):
        best = choose_recovery_source(perm)
        assert best is not None and best[0] == "jn2"


def test_hadoops_comparator_sorts_worst_to_best() -> None:
    answers = [resp(150), resp(None, writer=3), resp(153), resp(125)]
    ranked = sorted(answers, key=SegmentRecoveryComparator)
    assert [a.segment.end_txid if a.segment else None for a in ranked] == [None, 125, 150, 153]


def test_choose_first_of_equals() -> None:
    best = choose_recovery_source([("jn2", resp(153)), ("jn3", resp(153))])
    assert best is not None and best[0] == "jn2"


def test_choose_checks_every_finalized_pair() -> None:
    # The in-progress answer in the middle must not hide the mismatch of the finalized ones.
    answers = [("a", FINAL_3), ("b", INPROG_4), ("c", resp(5, in_progress=False))]
    with pytest.raises(RecoveryInvariantError):
        choose_recovery_source(answers)


def test_describe() -> None:
    text = describe_response(resp(5, accepted=2, committed=4))
    assert text == (
        "segment 1-5 (in progress), last writer epoch 1, accepted in epoch 2, committed txid 4"
    )
    assert describe_response(NONE) == "no segment, last writer epoch 1"


# A finalized copy against copies of other epochs: (answers, the index of the expected source).
# The newest epoch wins (design §J.4): a copy an older epoch finalized that a newer epoch's
# copy contradicts is a deposed writer's, and recovering from it would overwrite what the
# newer epoch acknowledged; honest copies of newer epochs hold the same log.
FINALIZED_VS_NEWER = [
    ([FINAL_3, resp(4, writer=3)], 1),  # a newer writer's longer copy
    ([FINAL_3, resp(2, writer=3)], 1),  # ... or a shorter one
    ([FINAL_3, resp(4, accepted=2)], 1),  # a newer recovery's accepted copy
    ([resp(4, accepted=2), FINAL_3], 0),  # in any order
    ([FINAL_3, resp(3, accepted=2)], 1),  # a newer recovery of the same end
    ([FINAL_3, resp(3, writer=2)], 1),  # ... or writer: its bytes may differ
    ([resp(3, in_progress=False, writer=3), resp(4, writer=2)], 0),  # an older writer's copy
    ([resp(3, in_progress=False, writer=2), resp(4, writer=2)], 0),  # same epoch: finalized
    ([NONE, FINAL_3, resp(3, accepted=4), INPROG_4], 2),
    # Finalized by a recovery in epoch 3 (reported as accepted in 3): a copy accepted by a
    # minority in epoch 2 is older, whatever its end (the seed-3 fault schedule's state).
    ([resp(3, in_progress=False, accepted=3), resp(4, accepted=2)], 0),
    ([resp(4, accepted=2), resp(3, in_progress=False, accepted=3)], 1),
    # ... but a copy of a newer epoch than that recovery wins.
    ([resp(3, in_progress=False, accepted=3), resp(4, accepted=4)], 1),
    # A deposed writer's finalize decided in epoch 1 against the newer writer's finalize
    # of the same end: the newer decision.
    ([resp(5, in_progress=False, accepted=1), resp(5, in_progress=False, accepted=2)], 1),
]


@pytest.mark.parametrize(
    ("answers", "source"), FINALIZED_VS_NEWER, ids=range(len(FINALIZED_VS_NEWER))
)
def test_finalized_copy_against_a_newer_epochs_copy(
    answers: list[RecoveryAnswer], source: int
) -> None:
    best = choose_recovery_source(list(enumerate(answers)))
    assert best is not None and best[0] == source


def test_finalized_copies_of_one_epoch_must_agree() -> None:
    with pytest.raises(RecoveryInvariantError, match="decided in epoch 2 end at different"):
        choose_recovery_source(
            [
                ("a", resp(5, in_progress=False, accepted=2)),
                ("b", resp(9, writer=3)),
                ("c", resp(6, in_progress=False, accepted=2)),
            ]
        )
