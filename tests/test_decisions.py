"""The client's pure decisions as tables: epoch choice, recovery plan, what a reader may read."""

from __future__ import annotations

from typing import Any

import pytest

from qjm.client.decisions import (
    BelowCommittedError,
    CachedEdits,
    FinalizedEndsDisagree,
    FormatRefused,
    MergedManifest,
    MergedSegment,
    NodeManifest,
    NoMajorityError,
    NothingToRecover,
    RecoveryAnswer,
    RecoveryInvariantError,
    RecoveryPlan,
    Segment,
    current_writers,
    durable_cached_run,
    durable_end,
    format_refusal,
    majority_of,
    merge_manifests,
    next_epoch,
    plan_recovery,
)


def cases(table: dict[str, tuple[Any, ...]]) -> Any:
    """Parametrize rows named by their case."""
    return [pytest.param(*row, id=name) for name, row in table.items()]


# -- majority_of -------------------------------------------------------------------------------

MAJORITY = {
    "one node": (1, 1),
    "two nodes need both": (2, 2),
    "three nodes": (3, 2),
    "four nodes": (4, 3),
    "five nodes": (5, 3),
}


@pytest.mark.parametrize(("members", "expected"), cases(MAJORITY))
def test_majority_of(members: int, expected: int) -> None:
    assert majority_of(members) == expected


# -- format ----------------------------------------------------------------------------------

FORMATS: dict[str, tuple[list[str], dict[str, str], str | None]] = {
    "every node answered": (["a", "b", "c"], {}, None),
    "one node silent": (["a", "b"], {}, "unreachable: c (no answer)"),
    "one node refused": (["a", "c"], {"b": "refused"}, "unreachable: b (refused)"),
    "only one answered": (["a"], {"c": "down"}, "unreachable: b (no answer); c (down)"),
    "none answered": ([], {}, "a (no answer); b (no answer); c (no answer)"),
}


@pytest.mark.parametrize(("answered", "errors", "expected"), cases(FORMATS))
def test_format_refusal(answered: list[str], errors: dict[str, str], expected: str | None) -> None:
    refused = format_refusal(["a", "b", "c"], answered, errors)
    if expected is None:
        assert refused is None
    else:
        assert isinstance(refused, FormatRefused)
        assert "format needs every JournalNode" in str(refused)
        assert expected in str(refused)


# -- the epoch ---------------------------------------------------------------------------------

EPOCHS: dict[str, tuple[list[int], int, int | type[Exception]]] = {
    "fresh journal": ([0, 0], 3, 1),
    "max plus one": ([4, 7, 5], 3, 8),
    "a majority of three is enough": ([2, 9], 3, 10),
    "a lagging promise does not lower it": ([9, 1], 3, 10),
    "one of one": ([3], 1, 4),
    "one of three is refused": ([5], 3, NoMajorityError),
    "two of five is refused": ([5, 6], 5, NoMajorityError),
    "none answered": ([], 3, NoMajorityError),
    "no members": ([1], 0, ValueError),
}


@pytest.mark.parametrize(("promised", "members", "expected"), cases(EPOCHS))
def test_next_epoch(promised: list[int], members: int, expected: int | type[Exception]) -> None:
    if isinstance(expected, int):
        assert next_epoch(promised, members) == expected
    else:
        with pytest.raises(expected):
            next_epoch(promised, members)


def test_next_epoch_refusal_names_the_counts() -> None:
    with pytest.raises(NoMajorityError, match=r"majority \(2 of 3 JournalNodes\), got 1"):
        next_epoch([5], 3)


# -- the recovery plan -------------------------------------------------------------------------


def ans(
    end: int | None,
    *,
    final: bool = False,
    writer: int = 1,
    accepted: int | None = None,
    committed: int | None = None,
    start: int = 1,
) -> RecoveryAnswer:
    return RecoveryAnswer(
        None if end is None else Segment(start, end, not final), writer, accepted, committed
    )


RecoveryCase = tuple[dict[str, RecoveryAnswer], int, object]

RECOVERY: dict[str, RecoveryCase] = {
    "no segment anywhere: nothing to recover": (
        {"a": ans(None), "b": ans(None, writer=2)},
        3,
        NothingToRecover(1, "none of 2 answering nodes has a segment at 1"),
    ),
    "the longest log of the newest writer": (
        {"a": ans(3), "b": ans(5), "c": ans(4)},
        3,
        RecoveryPlan(1, "b", Segment(1, 5, True), "the longest log of the newest writer (epoch 1)"),
    ),
    "a segment beats no segment": (
        {"a": ans(None), "b": ans(2)},
        3,
        RecoveryPlan(1, "b", Segment(1, 2, True), "the longest log of the newest writer (epoch 1)"),
    ),
    "a finalized copy beats a longer open one": (
        {"a": ans(6), "b": ans(4, final=True)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, False), "the finalized copy"),
    ),
    "an accepted recovery beats a longer log (2.10.7)": (
        {"a": ans(9), "b": ans(3, accepted=2)},
        3,
        RecoveryPlan(1, "b", Segment(1, 3, True), "the recovery already accepted in epoch 2"),
    ),
    "a newer writer beats a stale accept (2.10.6)": (
        {"a": ans(9, accepted=2), "b": ans(4, writer=3)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, True), "the longest log of the newest writer (epoch 3)"),
    ),
    "equal copies: the first answer": (
        {"b": ans(7), "a": ans(7)},
        3,
        RecoveryPlan(1, "b", Segment(1, 7, True), "the longest log of the newest writer (epoch 1)"),
    ),
    "committed at the source's end is fine": (
        {"a": ans(5, committed=5), "b": ans(4, committed=4)},
        3,
        RecoveryPlan(1, "a", Segment(1, 5, True), "the longest log of the newest writer (epoch 1)"),
    ),
    "committed above the source's end is refused": (
        {"a": ans(3, accepted=2), "b": ans(6, committed=6)},
        3,
        BelowCommittedError,
    ),
    "committed above every copy is refused": (
        {"a": ans(None, committed=9), "b": ans(4)},
        3,
        BelowCommittedError,
    ),
    "two finalized ends are refused": (
        {"a": ans(3, final=True), "b": ans(4), "c": ans(5, final=True)},
        3,
        RecoveryInvariantError,
    ),
    # A finalized copy is ranked by the epoch that decided it (design §J.4): a deposed
    # writer's finalize loses to any newer epoch's copy instead of stopping the recovery.
    "a deposed writer's finalize loses to a newer writer's log": (
        {"a": ans(3, final=True), "b": ans(4, writer=3)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, True), "the longest log of the newest writer (epoch 3)"),
    ),
    "a deposed finalize of the same end loses to a newer writer's log": (
        {"a": ans(4, final=True, accepted=1), "b": ans(4, writer=2)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, True), "the longest log of the newest writer (epoch 2)"),
    ),
    "a finalize decided newer beats an older writer's longer log": (
        {"a": ans(6, writer=2), "b": ans(4, final=True, accepted=3)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, False), "the finalized copy"),
    ),
    "of two finalized copies, the newer decision wins": (
        {"a": ans(6, final=True, accepted=1), "b": ans(4, final=True, accepted=2)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, False), "the finalized copy"),
    ),
    "a finalized copy beats an open one of its own epoch": (
        {"a": ans(6, writer=2), "b": ans(4, final=True, accepted=2)},
        3,
        RecoveryPlan(1, "b", Segment(1, 4, False), "the finalized copy"),
    ),
    "two finalized ends of one epoch are refused": (
        {"a": ans(4, final=True, accepted=2), "b": ans(5, final=True, accepted=2)},
        3,
        RecoveryInvariantError,
    ),
    "an answer about another segment is refused": (
        {"a": ans(3), "b": ans(9, start=5)},
        3,
        RecoveryInvariantError,
    ),
    "fewer than a majority is refused": (
        {"a": ans(3)},
        3,
        NoMajorityError,
    ),
}


@pytest.mark.parametrize(("answers", "members", "expected"), cases(RECOVERY))
def test_plan_recovery(answers: dict[str, RecoveryAnswer], members: int, expected: object) -> None:
    if isinstance(expected, type) and issubclass(expected, Exception):
        with pytest.raises(expected) as info:
            plan_recovery(1, answers, members)
        assert type(info.value) is expected  # the exact refusal, not a relative
    else:
        assert plan_recovery(1, answers, members) == expected


def test_plan_last_txid() -> None:
    assert NothingToRecover(7, "").last_txid == 6
    assert RecoveryPlan(1, "a", Segment(1, 5, True), "").last_txid == 5


def test_below_committed_names_the_nodes() -> None:
    with pytest.raises(BelowCommittedError, match=r"chose a ending at txid 3 .* b reports txid 6"):
        plan_recovery(1, {"a": ans(3, accepted=2), "b": ans(6, committed=6)}, 3)


# -- what a reader may read --------------------------------------------------------------------

DURABLE_END: dict[str, tuple[int, list[int], int | None, int, int | None]] = {
    "a majority's end, below committed": (1, [9, 5, 3], 10, 3, 5),
    "cut to committed": (1, [9, 8, 3], 6, 3, 6),
    "no commit report yet": (1, [9, 8, 7], None, 3, None),
    "fewer copies than a majority": (1, [9], 9, 3, None),
    "majority of all members, not of the answers": (1, [9, 8], 9, 5, None),
    "committed before the segment": (10, [12, 12], 9, 3, None),
    "a majority holds nothing of the segment": (10, [12, 9], 12, 3, None),
    "exactly the first txid": (10, [12, 10], 12, 3, 10),
}


@pytest.mark.parametrize(("start", "ends", "committed", "members", "expected"), cases(DURABLE_END))
def test_durable_end(
    start: int, ends: list[int], committed: int | None, members: int, expected: int | None
) -> None:
    assert durable_end(start, ends, committed, members) == expected


class E:
    """An answer with epochs only."""

    def __init__(self, writer: int, promised: int, restored: bool = False) -> None:
        self.last_writer_epoch = writer
        self.last_promised_epoch = promised
        self.restored = restored


CURRENT: dict[str, tuple[dict[str, E], set[str]]] = {
    "no answers": ({}, set()),
    "all at one epoch": ({"a": E(2, 2), "b": E(2, 2)}, {"a", "b"}),
    "a node of an older writer": ({"a": E(2, 2), "b": E(1, 2)}, {"a"}),
    "a node that promised a newer writer": ({"a": E(2, 3), "b": E(2, 2)}, {"b"}),
    "the top writer epoch fenced everywhere": ({"a": E(2, 3), "b": E(1, 3)}, set()),
    # A restored node's answers count for nothing (design §J.5), not even for the top.
    "a restored node is never current": ({"a": E(2, 2), "b": E(2, 2, restored=True)}, {"a"}),
    "a restored node sets no top": ({"a": E(2, 2), "b": E(3, 3, restored=True)}, {"a"}),
}


@pytest.mark.parametrize(("answers", "expected"), cases(CURRENT))
def test_current_writers(answers: dict[str, E], expected: set[str]) -> None:
    assert current_writers(answers) == expected


def man(
    *segs: tuple[int, int, bool],
    committed: int | None = None,
    w: int = 1,
    p: int = 0,
    decided: dict[int, int] | None = None,
    restored: bool = False,
) -> NodeManifest:
    return NodeManifest(
        tuple(Segment(s, e, o) for s, e, o in segs), committed, w, p or w, decided or {}, restored
    )


FIN, OPEN = False, True

MERGE: dict[str, tuple[dict[str, NodeManifest], int, object]] = {
    "nothing anywhere": (
        {"a": man(), "b": man()},
        3,
        MergedManifest((), None, frozenset({"a", "b"})),
    ),
    "finalized everywhere, open tail cut to committed and a majority": (
        {
            "a": man((1, 5, FIN), (6, 9, OPEN), committed=8),
            "b": man((1, 5, FIN), (6, 7, OPEN), committed=7),
            "c": man((1, 5, FIN)),
        },
        3,
        MergedManifest(
            (
                MergedSegment(1, 5, False, ("a", "b", "c")),
                MergedSegment(6, 7, True, ("a", "b")),
            ),
            8,
            frozenset({"a", "b", "c"}),
        ),
    ),
    "open segment without a commit report is not read": (
        {"a": man((1, 4, OPEN)), "b": man((1, 4, OPEN))},
        3,
        MergedManifest((), None, frozenset({"a", "b"})),
    ),
    "an open copy of an older writer is not counted": (
        {
            "a": man((1, 9, OPEN), committed=9, w=2),
            "b": man((1, 9, OPEN), committed=9, w=1),
        },
        3,
        MergedManifest((), 9, frozenset({"a"})),
    ),
    "a finalized copy wins over open ones": (
        {"a": man((1, 3, FIN)), "b": man((1, 8, OPEN), committed=8), "c": man((1, 8, OPEN))},
        3,
        MergedManifest((MergedSegment(1, 3, False, ("a",)),), 8, frozenset({"a", "b", "c"})),
    ),
    "a majority settles a finalized end": (
        {"a": man((1, 5, FIN)), "b": man((1, 5, FIN)), "c": man((1, 7, FIN))},
        3,
        MergedManifest(
            (MergedSegment(1, 5, False, ("a", "b")),),
            None,
            frozenset({"a", "b", "c"}),
            (
                "finalized segment 1: copies differ (5 decided in epoch 1 on 2 node(s); 7 "
                "decided in epoch 1 on 1 node(s)); reading the copies a majority holds",
            ),
        ),
    ),
    # Finalized copies are grouped by end and deciding epoch (design §J.10): a deposed
    # writer's copy of the same end may hold other bytes.
    "a deposed writer's copy of the same end is not read": (
        {
            "a": man((1, 5, FIN), decided={1: 1}),
            "b": man((1, 5, FIN), decided={1: 2}, w=2),
            "c": man((1, 5, FIN), decided={1: 2}, w=2),
        },
        3,
        MergedManifest(
            (MergedSegment(1, 5, False, ("b", "c")),),
            None,
            frozenset({"b", "c"}),
            (
                "finalized segment 1: copies differ (5 decided in epoch 1 on 1 node(s); 5 "
                "decided in epoch 2 on 2 node(s)); reading the copies a majority holds",
            ),
        ),
    ),
    "without a majority, the newest decision": (
        {"a": man((1, 7, FIN), decided={1: 1}), "b": man((1, 5, FIN), decided={1: 2}, w=2)},
        3,
        MergedManifest(
            (MergedSegment(1, 5, False, ("b",)),),
            None,
            frozenset({"b"}),
            (
                "finalized segment 1: copies differ (5 decided in epoch 2 on 1 node(s); 7 "
                "decided in epoch 1 on 1 node(s)); reading the copy decided in the newest "
                "epoch 2",
            ),
        ),
    ),
    "a finalized copy older than the writer's open segment is not read": (
        {
            "a": man((1, 5, FIN), decided={1: 1}),
            "b": man((1, 5, OPEN), committed=5, w=2),
            "c": man((1, 5, OPEN), committed=5, w=2),
        },
        3,
        MergedManifest(
            (MergedSegment(1, 5, True, ("b", "c")),),
            5,
            frozenset({"b", "c"}),
            (
                "finalized segment 1-5 (decided in epoch 1) is older than the writer of epoch "
                "2, which holds it in progress; reading that",
            ),
        ),
    ),
    "a restored node's open copy is not counted": (
        {
            "a": man((1, 9, OPEN), committed=9),
            "b": man((1, 9, OPEN), committed=9, restored=True),
        },
        3,
        MergedManifest((), 9, frozenset({"a"})),
    ),
    "finalized ends without a majority are refused": (
        {"a": man((1, 5, FIN)), "b": man((1, 7, FIN))},
        3,
        FinalizedEndsDisagree,
    ),
}


@pytest.mark.parametrize(("answers", "members", "expected"), cases(MERGE))
def test_merge_manifests(answers: dict[str, NodeManifest], members: int, expected: object) -> None:
    if isinstance(expected, type):
        with pytest.raises(expected):
            merge_manifests(answers, members)
    else:
        assert merge_manifests(answers, members) == expected


def cached(count: int, committed: int | None = None, w: int = 1) -> CachedEdits:
    return CachedEdits(count, committed, w, w)


CACHED: dict[str, tuple[dict[str, CachedEdits], int, int, tuple[int, str | None]]] = {
    "what a majority holds and is committed": (
        {"a": cached(5, 14), "b": cached(3, 12), "c": cached(1)},
        10,
        100,
        (3, "a"),
    ),
    "cut to committed": ({"a": cached(5, 11), "b": cached(5)}, 10, 100, (2, "a")),
    "cut to max_txns": ({"a": cached(5, 20), "b": cached(5)}, 10, 4, (4, "a")),
    "nothing committed from since yet": ({"a": cached(5, 9), "b": cached(5)}, 10, 100, (0, None)),
    "no commit report": ({"a": cached(5), "b": cached(5)}, 10, 100, (0, None)),
    "one node is not a majority": ({"a": cached(5, 14)}, 10, 100, (0, None)),
    "an older writer's node does not count": (
        {"a": cached(5, 14, w=2), "b": cached(5, 14, w=1)},
        10,
        100,
        (0, None),
    ),
    "the source holds them all": ({"a": cached(1, 14), "b": cached(4)}, 10, 100, (1, "a")),
}


@pytest.mark.parametrize(("answers", "since", "max_txns", "expected"), cases(CACHED))
def test_durable_cached_run(
    answers: dict[str, CachedEdits], since: int, max_txns: int, expected: tuple[int, str | None]
) -> None:
    assert durable_cached_run(answers, since, max_txns, 3) == expected
