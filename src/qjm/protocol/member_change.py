"""The member-change rule as a pure function: which new JournalNode sets are safe to move to.

Used by `qjm journal change-members` before it calls any node, and by every JournalNode
before it records a change (docs/design.md §J.7). Table-tested in tests/test_member_change.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qjm.protocol.errors import (
    MemberChangeError,
    MemberChangePendingError,
    UnsafeMemberChangeError,
)
from qjm.protocol.quorum import majority_of

__all__ = [
    "MemberChange",
    "MemberChangePlan",
    "NodeJournal",
    "check_member_change",
    "plan_member_change",
]


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


# -- what the command checks before it calls any node ---------------------------------------------

NamespaceIdentity = tuple[int, str]  # (namespace id, cluster id)


@dataclass(frozen=True)
class NodeJournal:
    """What one node's status says of the journal, for planning a member change."""

    namespace: NamespaceIdentity | None  # None: not formatted there
    members: tuple[str, ...] = ()
    last_promised_epoch: int = 0
    last_writer_epoch: int = 0
    change_epoch: int | None = None  # the last member change recorded there
    members_before_change: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemberChangePlan:
    """The namespace to send every node, and the promise a joining node without storage gets."""

    namespace: NamespaceIdentity
    promised_epoch: int


def _why_not(change: MemberChange, node: NodeJournal, ns: NamespaceIdentity, joining: bool) -> str:
    """Why this node cannot take part in the change ("" when it can)."""
    if node.namespace is None:
        return "" if joining else "the journal is not formatted there"
    if node.namespace != ns:
        return (
            f"it is formatted for namespace {node.namespace[0]} (cluster {node.namespace[1]}), "
            f"not the old members' {ns[0]} (cluster {ns[1]})"
        )
    members = tuple(sorted(node.members))
    if members == change.new:
        return ""  # changed already: a rerun
    if members and members != change.old:
        return f"it holds the members {', '.join(members)}, neither the old nor the new set"
    return ""


def _pending(change: MemberChange, node: NodeJournal) -> str:
    """The pending earlier change a node would refuse this one for ("" when none)."""
    if node.change_epoch is None or node.last_writer_epoch > node.change_epoch:
        return ""
    if tuple(sorted(node.members)) == change.new:
        return ""
    if tuple(sorted(node.members_before_change)) == change.old:
        return ""  # this very change, cut short: a rerun completes it
    return (
        f"a member change recorded there in epoch {node.change_epoch} is pending (no writer "
        "of its new members has started a segment there yet)"
    )


def plan_member_change(
    change: MemberChange, answers: Mapping[str, NodeJournal]
) -> MemberChangePlan:
    """What to send each node, or a refusal naming every node that stops the change.

    answers holds the nodes that answered. Every node that stays or joins must answer (the
    staying ones are the new set's first quorum); the namespace is the one a majority of
    the old members holds; a joining node without storage gets the highest promise of the
    staying nodes. Removed nodes need not answer.
    """
    missing = [a for a in (*change.staying, *change.added) if a not in answers]
    if missing:
        raise MemberChangeError(
            f"a member change needs every JournalNode that stays or joins to answer; no "
            f"answer from {', '.join(missing)}"
        )
    held = Counter(n.namespace for a, n in answers.items() if a in change.old and n.namespace)
    need = majority_of(len(change.old))
    ns = next((key for key, count in held.most_common(1) if count >= need), None)
    if ns is None:
        seen = ", ".join(f"{key[0]} (cluster {key[1]}) on {n}" for key, n in held.items())
        raise MemberChangeError(
            f"no namespace is held by a majority ({need} of {len(change.old)}) of the old "
            f"members: {seen or 'none is formatted'}"
        )
    problems = [
        f"{a}: {why}"
        for a in (*change.staying, *change.added)
        if (why := _why_not(change, answers[a], ns, a in change.added))
    ]
    if problems:
        raise MemberChangeError(f"cannot {change.describe()}: " + "; ".join(problems))
    pending = [
        f"{a}: {why}"
        for a in (*change.staying, *change.added)
        if (why := _pending(change, answers[a]))
    ]
    if pending:
        raise MemberChangePendingError(
            "one change at a time: " + "; ".join(pending) + ". Restart the NameNodes with "
            "the new shared edits URI (standby first, then fail over) so that a writer starts "
            "a segment, then change again"
        )
    promise = max(answers[a].last_promised_epoch for a in change.staying)
    return MemberChangePlan(ns, promise)
