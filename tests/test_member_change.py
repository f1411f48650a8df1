"""Member changes: the rule as a table, and one journal's change_members on real storage."""

from __future__ import annotations

import re
from typing import Any

import pytest

from qjm.client.member_change import MemberChange, check_member_change
from qjm.protocol.errors import UnsafeMemberChangeError


def cases(table: dict[str, tuple[Any, ...]]) -> Any:
    """Parametrize rows named by their case."""
    return [pytest.param(*row, id=name) for name, row in table.items()]


# -- the rule ----------------------------------------------------------------------------------

A, B, C, D, E = "a:1", "b:1", "c:1", "d:1", "e:1"

SAFE: dict[str, tuple[list[str], list[str], tuple[str, ...], tuple[str, ...], str]] = {
    "replace one of three": ([A, B, C], [A, B, D], (D,), (C,), "replace c:1 with d:1"),
    "add a fourth": ([A, B, C], [A, B, C, D], (D,), (), "add d:1"),
    "remove one of three": ([A, B, C], [A, B], (), (C,), "remove c:1"),
    "add a third to two": ([A, B], [A, B, C], (C,), (), "add c:1"),
    "remove one of two": ([A, B], [A], (), (B,), "remove b:1"),
    "replace one of five": ([A, B, C, D, E], [A, B, C, D, "f:1"], ("f:1",), (E,), "replace"),
    "remove one of four": ([A, B, C, D], [A, B, C], (), (D,), "remove d:1"),
    "order does not matter": ([C, B, A], [D, A, B], (D,), (C,), "replace c:1 with d:1"),
}


@pytest.mark.parametrize(("old", "new", "added", "removed", "words"), cases(SAFE))
def test_a_safe_change_is_described(
    old: list[str],
    new: list[str],
    added: tuple[str, ...],
    removed: tuple[str, ...],
    words: str,
) -> None:
    change = check_member_change(old, new)
    assert isinstance(change, MemberChange)
    assert (change.added, change.removed) == (added, removed)
    assert change.old == tuple(sorted(old)) and change.new == tuple(sorted(new))
    assert change.staying == tuple(sorted(set(old) & set(new)))
    assert words in change.describe()


UNSAFE: dict[str, tuple[list[str], list[str], str]] = {
    "the same set": ([A, B, C], [C, B, A], "the new members are the old ones"),
    "replace two of three": ([A, B, C], [A, D, E], "one change at a time"),
    "add two": ([A, B, C], [A, B, C, D, E], "one change at a time"),
    "remove two": ([A, B, C, D, E], [A, B, C], "one change at a time"),
    "an empty new set": ([A, B, C], [], "the new member set is empty"),
    "an empty old set": ([], [A], "the old member set is empty"),
    "a duplicate in the new set": ([A, B, C], [A, B, D, D], "names d:1 twice"),
    "a duplicate in the old set": ([A, A, B], [A, B, C], "names a:1 twice"),
    "grow one to two": ([A], [A, B], "fewer than a majority (2) of the new set"),
    "replace the only node": ([A], [B], "fewer than a majority (1) of the new set"),
    "replace one of two": ([A, B], [A, C], "fewer than a majority (2) of the new set"),
}


@pytest.mark.parametrize(("old", "new", "why"), cases(UNSAFE))
def test_an_unsafe_change_is_refused_naming_why(old: list[str], new: list[str], why: str) -> None:
    with pytest.raises(UnsafeMemberChangeError, match=re.escape(why)):
        check_member_change(old, new)


def test_the_refusal_of_two_changes_names_what_it_adds_and_removes() -> None:
    with pytest.raises(UnsafeMemberChangeError) as e:
        check_member_change([A, B, C], [A, D, E])
    assert "add one, remove one, or replace one" in str(e.value)
    assert "adds d:1, e:1 and removes b:1, c:1" in str(e.value)
