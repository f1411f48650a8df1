"""Member changes: the rule as a table, and one journal's change_members on real storage."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory, JNProcess, run_qjm, snapshot
from ports import free_port
from qjm.journalnode.journal import Journal
from qjm.journalnode.journal_status import status_of
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AmnesiacNodeError,
    EpochNotNewerError,
    InvalidRequestError,
    JournalNotFormattedError,
    MemberChangeError,
    MemberChangePendingError,
    MembershipMismatchError,
    NamespaceMismatchError,
    UnsafeMemberChangeError,
)
from qjm.protocol.member_change import (
    MemberChange,
    MemberChangePlan,
    NodeJournal,
    check_member_change,
    plan_member_change,
)
from qjm.protocol.namespace import NamespaceInfo
from qjm.protocol.qjournal import journal_id
from qjm_cluster import read_dir_segments
from raw_writer import JID, JNClient, RawWriter
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


# -- the plan: what the command checks before it calls any node ---------------------------------

NSK = (7, "CID-a")
REPLACE = check_member_change([A, B, C], [A, B, D])


def node(ns: Any = NSK, members: tuple[str, ...] = (A, B, C), promised: int = 4, **kw: Any) -> Any:
    """One node's answer (by default: formatted for NSK with the old members, promise 4)."""
    return NodeJournal(ns, members, promised, **kw)


PLANS: dict[str, tuple[dict[str, NodeJournal], MemberChangePlan | tuple[type[Exception], str]]] = {
    "replace: the joining node is empty, the removed one is down": (
        {A: node(promised=4), B: node(promised=6), D: node(ns=None, members=())},
        MemberChangePlan(NSK, 6),
    ),
    "a copied directory joins": (
        {A: node(), B: node(), C: node(), D: node(promised=3)},
        MemberChangePlan(NSK, 4),
    ),
    "a rerun after some nodes changed": (
        {A: node(members=(A, B, D), change_epoch=4), B: node(), D: node(ns=None, members=())},
        MemberChangePlan(NSK, 4),
    ),
    "a rerun of this change cut short after its record": (
        {A: node(change_epoch=4, members_before_change=(A, B, C)), B: node(), D: node()},
        MemberChangePlan(NSK, 4),
    ),
    "a staying node is down": (
        {A: node(), D: node(ns=None)},
        (MemberChangeError, f"no answer from {B}"),
    ),
    "the joining node is down": (
        {A: node(), B: node()},
        (MemberChangeError, f"no answer from {D}"),
    ),
    "no namespace on a majority of the old set": (
        {A: node(), B: node(ns=(8, "CID-b")), D: node(ns=None)},
        (MemberChangeError, "no namespace is held by a majority (2 of 3)"),
    ),
    "a staying node is not formatted": (
        {A: node(), B: node(ns=None), C: node(), D: node(ns=None)},
        (MemberChangeError, f"{B}: the journal is not formatted there"),
    ),
    "the joining node holds another namespace": (
        {A: node(), B: node(), D: node(ns=(8, "CID-b"))},
        (MemberChangeError, f"{D}: it is formatted for namespace 8"),
    ),
    "a node holds neither set": (
        {A: node(), B: node(members=(B, E)), C: node(), D: node(ns=None)},
        (MemberChangeError, f"{B}: it holds the members {B}, {E}, neither"),
    ),
    "an earlier change is pending": (
        {
            A: node(change_epoch=4, members_before_change=(A, B, E)),
            B: node(change_epoch=4, members_before_change=(A, B, E), last_writer_epoch=4),
            D: node(ns=None),
        },
        (MemberChangePendingError, "recorded there in epoch 4 is pending"),
    ),
    "an earlier change a writer has written since": (
        {
            A: node(change_epoch=4, members_before_change=(A, B, E), last_writer_epoch=5),
            B: node(change_epoch=4, members_before_change=(A, B, E), last_writer_epoch=5),
            D: node(ns=None),
        },
        MemberChangePlan(NSK, 4),
    ),
}


@pytest.mark.parametrize(("answers", "expected"), cases(PLANS))
def test_plan_member_change(
    answers: dict[str, NodeJournal], expected: MemberChangePlan | tuple[type[Exception], str]
) -> None:
    if isinstance(expected, MemberChangePlan):
        assert plan_member_change(REPLACE, answers) == expected
    else:
        error, words = expected
        with pytest.raises(error, match=re.escape(words)):
            plan_member_change(REPLACE, answers)


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
        st = status_of(j)
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
        w1.committed = 3
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
            j.change_members(NamespaceInfo(1, "CID-other"), OLD, NEW)
        for bad in ("127.0.0.1:7004\nepoch=99", "127.0.0.1:7004;127.0.0.1:7005", "jn4", ""):
            with pytest.raises(InvalidRequestError, match="new member .* is not host:port"):
                j.change_members(NS, OLD, [*OLD[:2], bad])
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
        assert status_of(j).member_change_epoch == 7
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


@pytest.mark.slow
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


# -- the command: `qjm journal change-members` against JournalNode processes ------------------------


def journal_uri(jns: list[JNProcess]) -> str:
    """The qjournal URI of these nodes (this file's journal id)."""
    return f"qjournal://{';'.join(j.rpc for j in jns)}/{JID}"


def members_on(jn: JNProcess) -> list[str]:
    """The members file of the journal on a node."""
    return (jn.edits_dir / JID / "current" / "members").read_text().split()


def one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    """The one-line error of a refused command (exit 1, no traceback)."""
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qjm: error: "), r.stderr
    return lines[0]


@pytest.mark.slow
def test_change_members_command_replaces_a_dead_node_and_only_the_new_uri_writes(
    jn_factory: JNFactory,
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    old_uri = journal_uri(jns)
    ns = RAW_NS.storage_info
    formatted = run_qjm(
        "journal", "format", "--uri", old_uri, "--namespace-id", str(ns.namespace_id),
        "--cluster-id", ns.cluster_id,
    )  # fmt: skip
    assert formatted.returncode == 0, formatted.stderr
    wrote = run_qjm("journal", "write", "--uri", old_uri, "--count", "5", "--finalize")
    assert wrote.returncode == 0, wrote.stderr
    jn_factory.stop(jns[2])  # the dead host
    jn4 = jn_factory.start("jn4")  # the new one: empty storage
    new = [jns[0], jns[1], jn4]
    new_uri = journal_uri(new)
    to = ";".join(j.rpc for j in new)
    # a command that stopped after the first node: the rerun below completes the change
    asyncio.run(change_on(jns[0].rpc, [j.rpc for j in jns], [j.rpc for j in new]))

    done = run_qjm("journal", "change-members", "--journal", old_uri, "--to", to)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"journal {JID}: replace {jns[2].rpc} with {jn4.rpc}" in out
    assert f"{jns[0].rpc}  stays: change recorded in epoch 1, had it already" in out
    assert f"{jns[1].rpc}  stays: change recorded in epoch 1\n" in out
    assert f"{jn4.rpc}  joins: change recorded in epoch 1; votes in recovery once" in out
    assert f"{jns[2].rpc}  removed (not contacted)" in out
    assert f"new shared edits URI: {new_uri}" in out and "restart the standby NameNode" in out
    for jn in new:
        assert members_on(jn) == sorted(j.rpc for j in new)
    assert (jn4.edits_dir / JID / "current" / "amnesiac").exists()
    again = run_qjm("journal", "change-members", "--uri", old_uri, "--to", to)
    assert again.returncode == 0 and again.stdout.count("had it already") == 3, again.stdout

    status = run_qjm("journal", "status", "--uri", new_uri)
    was = ";".join(sorted(j.rpc for j in jns))
    assert f"CHANGE {jns[0].rpc}: members changed in epoch 1 from {was}" in status.stdout
    assert "(pending: no writer of the new members" in status.stdout
    # another change before a writer of the new members wrote: refused, naming why
    two = ";".join((jns[0].rpc, jn4.rpc))
    pending = one_error_line(run_qjm("journal", "change-members", "--uri", new_uri, "--to", two))
    assert "one change at a time" in pending and "recorded there in epoch 1 is pending" in pending
    # a writer of the old URI is refused, naming the change and the new URI
    old_writer = run_qjm("journal", "write", "--uri", old_uri, "--count", "1")
    assert old_writer.returncode != 0
    assert "member change recorded in epoch 1" in old_writer.stderr
    assert f"qjournal://{';'.join(sorted(j.rpc for j in new))}/{JID}" in old_writer.stderr
    # a writer of the new URI recovers without the joining node, then writes on it too
    wrote = run_qjm("journal", "write", "--uri", new_uri, "--count", "3", "--finalize")
    assert wrote.returncode == 0, wrote.stderr
    assert not (jn4.edits_dir / JID / "current" / "amnesiac").exists()
    assert max(read_dir_segments(jn4.edits_dir / JID / "current")) == (8, 12)
    status = run_qjm("journal", "status", "--uri", new_uri)
    assert "(done)" in status.stdout and "pending" not in status.stdout


async def change_on(
    address: str, old: list[str], new: list[str], ns: pb.NamespaceInfoProto = RAW_NS
) -> None:
    """One node's changeMembers, as the command sends it to a staying node."""
    client = JNClient(address)
    try:
        await client.call(
            "changeMembers",
            pb.ChangeMembersRequestProto(
                jid=journal_id(JID), ns_info=ns, old_members=old, new_members=new
            ),
        )
    finally:
        await client.close()


@pytest.mark.slow
def test_change_members_command_refuses_bad_changes_and_changes_nothing(
    jn_factory: JNFactory,
) -> None:
    jns = [jn_factory.start(f"jn{i}") for i in (1, 2, 3)]
    uri = journal_uri(jns)
    assert run_qjm("journal", "format", "--uri", uri).returncode == 0
    before = [snapshot(jn.edits_dir) for jn in jns]

    def refused(to: str) -> str:
        return one_error_line(run_qjm("journal", "change-members", "--journal", uri, "--to", to))

    two = refused(f"{jns[0].rpc};127.0.0.1:1;127.0.0.1:2")
    assert "one change at a time: add one, remove one, or replace one JournalNode" in two
    down = f"127.0.0.1:{free_port()}"
    missing = refused(f"{jns[0].rpc};{jns[1].rpc};{down}")
    assert f"no answer from {down}" in missing
    assert "port 'x'" in refused(f"{jns[0].rpc};{jns[1].rpc};127.0.0.1:x")
    assert "the new members are the old ones" in refused(";".join(j.rpc for j in reversed(jns)))
    assert [snapshot(jn.edits_dir) for jn in jns] == before
    no_to = run_qjm("journal", "change-members", "--journal", uri)
    assert no_to.returncode == 2 and "--to" in no_to.stderr
