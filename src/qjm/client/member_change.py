"""The member-change rule as a pure function: which new JournalNode sets are safe to move to.

Used by `qjm journal change-members` before it calls any node, and by every JournalNode
before it records a change (docs/design.md §J.7). Table-tested in tests/test_member_change.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from qjm.client.decisions import majority_of
from qjm.protocol.errors import UnsafeMemberChangeError

__all__ = ["MemberChange", "check_member_change"]


@dataclass(frozen=True)
class MemberChange:
    """A checked change of a journal's members; every set sorted."""

    old: tuple[str, ...]
    new: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def staying(self) -> tuple[str, ...]:
        """The members in both sets: the new set's first quorum comes from them."""
        return tuple(m for m in self.old if m in self.new)

    def describe(self) -> str:
        """The change in words: "replace a with b", "add b" or "remove a"."""
        if self.added and self.removed:
            return f"replace {', '.join(self.removed)} with {', '.join(self.added)}"
        if self.added:
            return f"add {', '.join(self.added)}"
        return f"remove {', '.join(self.removed)}"


def _check_distinct(members: Sequence[str], which: str) -> None:
    twice = sorted(m for m, n in Counter(members).items() if n > 1)
    if twice:
        raise UnsafeMemberChangeError(
            f"the {which} member set names {', '.join(twice)} twice: list each JournalNode once"
        )


def check_member_change(old: Sequence[str], new: Sequence[str]) -> MemberChange:
    """The change from old to new members, or UnsafeMemberChangeError naming why it is unsafe.

    The rule (docs/design.md §J.7): one change at a time (add one, remove one, or replace
    one), and the new set's majorities drawn from the nodes that stay must exist and meet
    every majority of the old set. A node that joins holds no data it may vote with until
    a writer starts a segment on it, so the new set's first quorum is made of staying nodes.
    """
    _check_distinct(old, "old")
    _check_distinct(new, "new")
    if not old:
        raise UnsafeMemberChangeError("the old member set is empty: name the journal's members")
    if not new:
        raise UnsafeMemberChangeError("the new member set is empty: a journal needs a JournalNode")
    old_set, new_set = set(old), set(new)
    if old_set == new_set:
        raise UnsafeMemberChangeError(
            f"the new members are the old ones ({', '.join(sorted(old_set))}): nothing to change"
        )
    added = tuple(sorted(new_set - old_set))
    removed = tuple(sorted(old_set - new_set))
    if len(added) > 1 or len(removed) > 1:
        did = " and ".join(
            part
            for part in (
                f"adds {', '.join(added)}" if added else "",
                f"removes {', '.join(removed)}" if removed else "",
            )
            if part
        )
        raise UnsafeMemberChangeError(
            f"one change at a time: add one, remove one, or replace one JournalNode; this "
            f"change {did}"
        )
    staying = old_set & new_set
    need_new, need_old = majority_of(len(new_set)), majority_of(len(old_set))
    if len(staying) < need_new:
        raise UnsafeMemberChangeError(
            f"the {len(staying)} JournalNode(s) that stay ({', '.join(sorted(staying)) or 'none'}) "
            f"are fewer than a majority ({need_new}) of the new set: a JournalNode that joins "
            "holds no data it may vote with until a writer starts a segment on it, so the new "
            "set's first quorum must come from the nodes that stay"
        )
    if need_old + need_new <= len(old_set):
        raise UnsafeMemberChangeError(
            f"a majority ({need_new}) of the new set drawn from the nodes that stay need not "
            f"meet every majority ({need_old}) of the {len(old_set)} old members: a write "
            "acknowledged by the old set could be lost"
        )
    return MemberChange(tuple(sorted(old_set)), tuple(sorted(new_set)), added, removed)
