"""Member changes: the rule as a table, and one journal's change_members on real storage."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory, snapshot
from qjm.client.member_change import MemberChange, check_member_change
from qjm.journalnode.journal import Journal
from qjm.journalnode.storage import NsInfo
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AmnesiacNodeError,
    EpochNotNewerError,
    JournalNotFormattedError,
    MemberChangePendingError,
    MembershipMismatchError,
    NamespaceMismatchError,
    UnsafeMemberChangeError,
)
from qjm.protocol.qjournal import journal_id
from raw_writer import JID, RawWriter
from raw_writer import NS as RAW_NS
from test_journal import NS, Writer, open_journal, write
from test_journal_attacks import http_get


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


# -- one journal: Journal.change_members ---------------------------------------------------------

OLD = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
NEW = ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7004"]  # 7003 replaced by 7004
NEWER = ["127.0.0.1:7001", "127.0.0.1:7004", "127.0.0.1:7005"]  # then 7002 by 7005


def formatted(root: Path, members: list[str] = OLD) -> Journal:
    """A journal on root/test formatted for NS and members."""
    j = open_journal(root)
    j.format(NS, force=False, members=members)
    return j


def write_segment(j: Journal, epoch: int, start: int, n: int, members: list[str]) -> None:
    """A writer of epoch (with members in its URI) starts segment start and writes n txns."""
    j.new_epoch(NS, epoch, members)
    w = Writer(epoch)
    j.start_log_segment(w.req(), start, -64)
    write(j, w, start, start, n)


def test_a_staying_node_records_the_change_and_refuses_the_old_uri(tmp_path: Path) -> None:
    j = formatted(tmp_path)
    try:
        write_segment(j, 1, 1, 3, OLD)
        resp = j.change_members(NS, OLD, NEW)
        assert (resp.change_epoch, resp.already_changed) == (1, False)
        cur = j.storage.current
        assert (cur / "members").read_text().split() == NEW
        record = (cur / "member-change").read_text()
        assert record == f"epoch=1\nold={';'.join(OLD)}\nnew={';'.join(NEW)}\n"
        assert not (cur / "amnesiac").exists()  # it stays: its data is real
        st = j.status()
        assert list(st.members) == NEW
        assert (st.member_change_epoch, list(st.members_before_change)) == (1, OLD)
        with pytest.raises(MembershipMismatchError) as e:
            j.new_epoch(NS, 2, OLD)
        for words in ("member change recorded in epoch 1", "shared edits URI", ";".join(NEW)):
            assert words in str(e.value)
        assert j.last_promised_epoch == 1
        j.close()
        j = open_journal(tmp_path)  # the record and the members survive a restart
        with pytest.raises(MembershipMismatchError, match="member change recorded in epoch 1"):
            j.new_epoch(NS, 2, OLD)
        j.new_epoch(NS, 2, NEW)
    finally:
        j.close()


def test_one_change_at_a_time_until_a_writer_of_the_new_set_starts_a_segment(
    tmp_path: Path,
) -> None:
    j = formatted(tmp_path)
    try:
        write_segment(j, 1, 1, 3, OLD)
        j.change_members(NS, OLD, NEW)
        with pytest.raises(MemberChangePendingError) as e:
            j.change_members(NS, NEW, NEWER)
        for words in ("recorded in epoch 1", "restart the NameNodes", "starts a segment"):
            assert words in str(e.value)
        # the old writer (epoch 1) goes on writing: that is no writer of the new set
        w1 = Writer(1)
        w1.serial = 100
        j.finalize_log_segment(w1.req(), 1, 3)
        j.start_log_segment(w1.req(), 4, -64)
        with pytest.raises(MemberChangePendingError):
            j.change_members(NS, NEW, NEWER)
        # a promise alone (new_epoch of the new set) is not enough either
        j.new_epoch(NS, 2, NEW)
        with pytest.raises(MemberChangePendingError):
            j.change_members(NS, NEW, NEWER)
        w2 = Writer(2)
        j.start_log_segment(w2.req(), 4, -64)
        resp = j.change_members(NS, NEW, NEWER)
        assert resp.change_epoch == 2 and j.members == NEWER
    finally:
        j.close()


def test_a_rerun_is_idempotent_and_a_cut_short_change_completes(tmp_path: Path) -> None:
    j = formatted(tmp_path)
    try:
        write_segment(j, 3, 1, 2, OLD)
        first = j.change_members(NS, OLD, NEW)
        again = j.change_members(NS, OLD, NEW)
        assert (again.change_epoch, again.already_changed) == (first.change_epoch, True)
        # a crash after the record, before the members: the rerun writes the members
        j.storage.write_members(OLD)
        j.close()
        j = open_journal(tmp_path)
        assert j.members == OLD
        resp = j.change_members(NS, OLD, NEW)
        assert (resp.change_epoch, resp.already_changed) == (3, False)
        assert j.members == NEW
    finally:
        j.close()


def test_a_node_refuses_an_unsafe_change_another_namespace_and_other_members(
    tmp_path: Path,
) -> None:
    j = formatted(tmp_path)
    try:
        before = snapshot(j.storage.root)
        with pytest.raises(UnsafeMemberChangeError, match="one change at a time"):
            j.change_members(NS, OLD, ["127.0.0.1:7001", "127.0.0.1:7008", "127.0.0.1:7009"])
        with pytest.raises(NamespaceMismatchError, match="incompatible namespace"):
            j.change_members(NsInfo(1, "CID-other"), OLD, NEW)
        with pytest.raises(MembershipMismatchError) as e:
            j.change_members(NS, NEW, NEWER)  # this node never had NEW
        assert str(OLD) in str(e.value) and str(NEW) in str(e.value)
        assert snapshot(j.storage.root) == before
    finally:
        j.close()


def test_an_empty_node_joins_only_when_it_is_the_joining_one(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    try:
        with pytest.raises(JournalNotFormattedError, match="not joining"):
            j.change_members(NS, OLD, NEW, joining=False, promised_epoch=7)
        assert not j.is_formatted()
        resp = j.change_members(NS, OLD, NEW, joining=True, promised_epoch=7)
        assert (resp.change_epoch, resp.already_changed) == (7, False)
        assert j.ns_info == NS and j.last_promised_epoch == 7 and j.members == NEW
        assert j.amnesiac is not None and "joined the journal in a member change" in j.amnesiac
        assert j.awaiting_new_epoch is not None
        assert j.status().member_change_epoch == 7
        with pytest.raises(EpochNotNewerError):
            j.new_epoch(NS, 7, NEW)  # the promise given is kept
        j.new_epoch(NS, 8, NEW)
        w = Writer(8)
        with pytest.raises(AmnesiacNodeError):
            j.prepare_recovery(w.req(), 1)
        j.start_log_segment(w.req(), 1, -64)
        assert j.amnesiac is None and not (j.storage.current / "amnesiac").exists()
    finally:
        j.close()


def test_a_copied_directory_joins_amnesiac_until_a_new_writer_starts_a_segment(
    tmp_path: Path,
) -> None:
    j = formatted(tmp_path)  # a copy of a staying node's directory, before the change
    try:
        write_segment(j, 2, 1, 4, OLD)
        j.change_members(NS, OLD, NEW, joining=True)
        assert j.amnesiac is not None and "joined the journal in a member change" in j.amnesiac
        assert (j.storage.current / "amnesiac").exists()
        j.new_epoch(NS, 3, NEW)
        w = Writer(3)
        with pytest.raises(AmnesiacNodeError):
            j.prepare_recovery(w.req(), 1)
        j.start_log_segment(w.req(), 5, -64)
        assert j.amnesiac is None
        again = j.change_members(NS, OLD, NEW, joining=True)  # a rerun after the writer
        assert again.already_changed and j.amnesiac is None
    finally:
        j.close()


def test_a_directory_copied_after_the_change_is_marked_amnesiac_on_the_rerun(
    tmp_path: Path,
) -> None:
    j = formatted(tmp_path)
    try:
        write_segment(j, 2, 1, 4, OLD)
        j.change_members(NS, OLD, NEW)  # as a staying node: not amnesiac
        assert j.amnesiac is None
        # the operator copied this directory to the joining host and runs the command again
        again = j.change_members(NS, OLD, NEW, joining=True)
        assert again.already_changed and again.change_epoch == 2
        assert j.amnesiac is not None and "joined the journal in a member change" in j.amnesiac
    finally:
        j.close()


# -- over the wire: one JournalNode process ------------------------------------------------------


async def test_a_journalnode_changes_members_over_rpc_and_shows_it(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn1")
    w = RawWriter(jn, 1)
    try:
        await w.format(members=OLD)
        await w.new_epoch(members=OLD)

        def request(new: list[str], **kw: Any) -> pb.ChangeMembersRequestProto:
            return pb.ChangeMembersRequestProto(
                jid=journal_id(JID), ns_info=RAW_NS, old_members=OLD, new_members=new, **kw
            )

        two = ["127.0.0.1:7001", "127.0.0.1:7008", "127.0.0.1:7009"]
        with pytest.raises(UnsafeMemberChangeError, match="one change at a time"):
            await w.call("changeMembers", request(two))
        resp = await w.call("changeMembers", request(NEW))
        assert (resp.change_epoch, resp.already_changed) == (1, False)
        again = await w.call("changeMembers", request(NEW))
        assert again.already_changed
        st = await w.status()
        assert list(st.members) == NEW and st.member_change_epoch == 1
        status, body = http_get(f"http://{jn.http}/status")
        assert status == 200
        shown = json.loads(body)["journals"][JID]
        assert shown["member_change"] == {"epoch": 1, "old_members": OLD, "pending": True}
        page = http_get(f"http://{jn.http}/")[1].decode()
        assert "members changed in epoch 1 from" in page and "(pending" in page
        old_uri_writer = RawWriter(jn, 2)
        try:
            with pytest.raises(MembershipMismatchError, match="member change recorded in epoch"):
                await old_uri_writer.new_epoch(members=OLD)
        finally:
            await old_uri_writer.close()
    finally:
        await w.close()
