"""The chaos harness's own logic without processes: the subtree model (checked against the
real Namespace), outcome classification, read checks, the schedule, and the checks."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from qjm.editlog.framing import encode_op, header
from qjm.ipc import RemoteError, RpcConnectionError, RpcTimeoutError
from qjm.namenode.errors import NamenodeError
from qjm.namenode.namespace import Namespace as RealNamespace
from qjm.namenode.types import Caller, FileStatus, RpcIds
from qjm.testing.chaos import cli
from qjm.testing.chaos.checker import (
    JournalIndex,
    SegmentOps,
    SegmentReader,
    Violation,
    check_namespace,
    check_reads,
    compare_journals,
    compare_trees,
    no_quorum_acks,
    spread,
    without_quorum,
)
from qjm.testing.chaos.history import Attempt, CallRecord, History, attempt_kind, classify
from qjm.testing.chaos.model import (
    ALREADY_EXISTS,
    FILE_NOT_FOUND,
    IO_EXCEPTION,
    PARENT_NOT_DIR,
    Entry,
    Observed,
    Op,
    SubtreeModel,
)
from qjm.testing.chaos.nemesis import ACTION_KINDS, exit_expected, schedule
from qjm.testing.chaos.summary import Summary, write_summary
from qjm.testing.chaos.workload import Gate, choose_op, observed, stat_observed

SU = Caller("hdfs", superuser=True)
ROOT = "/chaos/c0"
STANDBY = "org.apache.hadoop.ipc.StandbyException"


class Real:
    """The real Namespace as the oracle of what a NameNode answers."""

    def __init__(self) -> None:
        self.ns = RealNamespace(superuser="hdfs")
        self.now = 1000
        for p in ("/chaos", ROOT):
            for op in self.ns.plan_mkdirs(p, SU, 0o755, True, self.now):
                self.ns.apply(op)

    def do(self, op: Op) -> tuple[str | None, bool | None]:
        """Make a write: (the Java class it was refused with or None, its boolean result)."""
        self.now += 1
        ns, rpc = self.ns, RpcIds(b"c" * 16, self.now)
        try:
            if op.kind == "mkdirs":
                ops = ns.plan_mkdirs(op.path, SU, 0o755, True, self.now)
            elif op.kind == "create":
                ops = ns.plan_create(
                    op.path, SU, 0o644, False, True, 3, 1 << 27, "c0", "host", self.now, rpc
                )
            elif op.kind == "complete":
                ops = ns.plan_complete(op.path, SU, "c0", 0, self.now)
            elif op.kind == "rename":
                ops = ns.plan_rename2(op.path, op.dst, SU, False, self.now, rpc)
            elif op.kind == "delete":
                ops = ns.plan_delete(op.path, SU, True, self.now, rpc)
            else:
                ops = ns.plan_set_permission(op.path, SU, op.mode)
        except NamenodeError as e:
            return e.java_class, None
        for o in ops:
            ns.apply(o)
        result = bool(ops) if op.kind == "delete" else True if op.kind == "mkdirs" else None
        return None, result

    def stat(self, path: str) -> Observed:
        """What getFileInfo answers."""
        try:
            return stat_observed(self.ns.stat(path, SU))
        except NamenodeError as e:
            return Observed("error", error=e.java_class)

    def listing(self, path: str) -> Observed:
        """What getListing answers."""
        found = self.ns.listing(path, SU)
        return observed(None if found is None else found[0])

    def held(self) -> dict[str, Entry]:
        """path -> Entry at and below the root."""
        out: dict[str, Entry] = {}

        def visit(path: str) -> None:
            st = self.ns.stat(path, SU)
            assert st is not None
            out[path] = ("d" if st.is_dir else "f", st.permission & 0o7777)
            if st.is_dir:
                listed = self.ns.listing(path, SU)
                assert listed is not None
                for e in listed[0]:
                    visit(f"{path}/{e.name}")

        visit(ROOT)
        return out


def new_model() -> SubtreeModel:
    model = SubtreeModel(ROOT)
    seq, prediction = model.begin(Op("mkdirs", ROOT), 0.0)
    assert model.finish(seq, prediction, 0.5, "ack", result=True) == []
    return model


# ---- the model against the real Namespace


@pytest.mark.parametrize(
    ("setup", "op", "error", "result"),
    [
        ([], Op("mkdirs", f"{ROOT}/a"), None, True),
        ([Op("mkdirs", f"{ROOT}/a")], Op("mkdirs", f"{ROOT}/a"), None, True),
        ([Op("create", f"{ROOT}/f")], Op("mkdirs", f"{ROOT}/f"), ALREADY_EXISTS, None),
        ([Op("create", f"{ROOT}/f")], Op("mkdirs", f"{ROOT}/f/x"), PARENT_NOT_DIR, None),
        ([], Op("mkdirs", f"{ROOT}/p/q"), None, True),  # the parent made on the way
        ([Op("create", f"{ROOT}/f")], Op("create", f"{ROOT}/f"), ALREADY_EXISTS, None),
        ([Op("mkdirs", f"{ROOT}/a")], Op("create", f"{ROOT}/a"), ALREADY_EXISTS, None),
        ([Op("create", f"{ROOT}/f")], Op("create", f"{ROOT}/f/g"), PARENT_NOT_DIR, None),
        ([], Op("create", f"{ROOT}/p/f"), None, None),
        ([], Op("complete", f"{ROOT}/f"), FILE_NOT_FOUND, None),
        ([Op("mkdirs", f"{ROOT}/a")], Op("complete", f"{ROOT}/a"), FILE_NOT_FOUND, None),
        ([], Op("rename", f"{ROOT}/x", f"{ROOT}/y"), FILE_NOT_FOUND, None),
        ([Op("mkdirs", f"{ROOT}/a")], Op("rename", f"{ROOT}/a", f"{ROOT}/a"), ALREADY_EXISTS, None),
        (
            [Op("mkdirs", f"{ROOT}/a")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/a/b"),
            IO_EXCEPTION,
            None,
        ),
        (
            [Op("mkdirs", f"{ROOT}/a"), Op("mkdirs", f"{ROOT}/b")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/b"),
            ALREADY_EXISTS,
            None,
        ),
        (
            [Op("mkdirs", f"{ROOT}/a"), Op("create", f"{ROOT}/f")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/f"),
            IO_EXCEPTION,
            None,
        ),
        (
            [Op("mkdirs", f"{ROOT}/a")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/no/b"),
            FILE_NOT_FOUND,
            None,
        ),
        (
            [Op("mkdirs", f"{ROOT}/a"), Op("create", f"{ROOT}/f")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/f/b"),
            PARENT_NOT_DIR,
            None,
        ),
        (
            [Op("mkdirs", f"{ROOT}/a/b"), Op("create", f"{ROOT}/a/b/f"), Op("mkdirs", f"{ROOT}/c")],
            Op("rename", f"{ROOT}/a", f"{ROOT}/c/a2"),
            None,
            None,
        ),
        ([], Op("delete", f"{ROOT}/x"), None, False),
        ([Op("mkdirs", f"{ROOT}/a/b")], Op("delete", f"{ROOT}/a"), None, True),
        ([Op("create", f"{ROOT}/f")], Op("delete", f"{ROOT}/f/x"), PARENT_NOT_DIR, None),
        ([], Op("chmod", f"{ROOT}/x", mode=0o700), FILE_NOT_FOUND, None),
        ([Op("create", f"{ROOT}/f")], Op("chmod", f"{ROOT}/f", mode=0o600), None, None),
    ],
)
def test_the_model_predicts_what_the_namespace_does(
    setup: list[Op], op: Op, error: str | None, result: bool | None
) -> None:
    real, model = Real(), new_model()
    for i, s in enumerate(setup):
        assert real.do(s)[0] is None
        seq, prediction = model.begin(s, i + 1.0)
        assert model.finish(seq, prediction, i + 1.5, "ack", result=prediction.result) == []
    prediction = model.begin(op, 100.0)[1]
    assert real.do(op) == (error, result)
    assert (prediction.error, prediction.result if error is None else None) == (error, result)
    if error is None:
        model.ns.apply(prediction.changes)
    assert model.ns.state == real.held()


@pytest.mark.slow
def test_random_workload_the_model_and_the_namespace_agree_call_by_call() -> None:
    """choose_op's calls on the model and on the real Namespace: the same answers, the same
    reads, the same tree, also when some calls are indeterminate (made or not, at random)."""
    rng = random.Random(7)
    real, model = Real(), new_model()
    t = 1.0
    indeterminate = happened = 0
    kinds: set[str] = set()
    for i in range(1, 1000):
        t += 1
        what, op = choose_op(rng, model, i)
        if what != "write":
            path = rng.choice(list(model.changes))
            seen = real.listing(path) if op.kind == "list" else real.stat(path)
            assert model.may_see(path, t, t + 0.5, seen), (op, path, seen)
            continue
        assert model.may_write(op)
        kinds.add(op.kind)
        seq, prediction = model.begin(op, t)
        if prediction.changes and rng.random() < 0.08:  # no answer: made, or not
            indeterminate += 1
            if rng.random() < 0.5:
                happened += 1
                assert real.do(op)[0] is None
            assert model.finish(seq, prediction, t + 0.5, "indeterminate") == []
            continue
        error, result = real.do(op)
        assert error == prediction.error, (op, error, prediction)
        outcome = "ack" if error is None else "refused"
        assert model.finish(seq, prediction, t + 0.5, outcome, error or "", result) == []
        if op.kind == "create" and error is None:
            t += 1
            seq, prediction = model.begin(Op("complete", op.path), t)
            assert real.do(Op("complete", op.path)) == (None, None)
            assert model.finish(seq, prediction, t + 0.5, "ack") == []
    assert kinds == {"mkdirs", "create", "rename", "delete", "chmod"}
    assert indeterminate > 20 and 0 < happened < indeterminate
    assert model.check_holds(real.held()) == []
    untainted = {p: e for p, e in real.held().items() if p not in model.tainted}
    assert untainted == model.ns.state


def test_check_holds_finds_lost_strange_and_half_done() -> None:
    model = new_model()
    for i, op in enumerate(
        [
            Op("mkdirs", f"{ROOT}/a"),
            Op("create", f"{ROOT}/a/f"),
            Op("mkdirs", f"{ROOT}/b"),
            Op("create", f"{ROOT}/b/g"),
        ]
    ):
        seq, prediction = model.begin(op, i + 1.0)
        model.finish(seq, prediction, i + 1.5, "ack")
    seq, prediction = model.begin(Op("rename", f"{ROOT}/b", f"{ROOT}/c"), 10.0)
    model.finish(seq, prediction, 10.5, "indeterminate")
    assert model.blocked(f"{ROOT}/b/g") and model.blocked(f"{ROOT}/c")
    assert not model.may_write(Op("delete", f"{ROOT}/b"))
    assert model.may_write(Op("delete", f"{ROOT}/a"))
    d, f = ("d", 0o755), ("f", 0o644)
    before = {ROOT: d, f"{ROOT}/a": d, f"{ROOT}/a/f": f, f"{ROOT}/b": d, f"{ROOT}/b/g": f}
    after = {ROOT: d, f"{ROOT}/a": d, f"{ROOT}/a/f": f, f"{ROOT}/c": d, f"{ROOT}/c/g": f}
    assert model.check_holds(before) == []
    assert model.check_holds(after) == []
    half = {**before, f"{ROOT}/c": d}  # the rename's destination without its source gone
    assert [v.kind for v in model.check_holds(half)] == ["lost"]
    lost = {p: e for p, e in before.items() if p != f"{ROOT}/a/f"}
    found = model.check_holds(lost)
    assert [v.kind for v in found] == ["lost"] and "create /chaos/c0/a/f" in found[0].message
    ghost = {**before, f"{ROOT}/ghost": d}
    assert [v.kind for v in model.check_holds(ghost)] == ["never attempted"]
    changed = {**before, f"{ROOT}/a": ("d", 0o700)}
    assert [v.kind for v in model.check_holds(changed)] == ["lost"]


def test_an_answer_that_contradicts_the_history_is_a_verdict() -> None:
    model = new_model()
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/a"), 1.0)
    model.finish(seq, p, 1.5, "ack", result=True)
    seq, p = model.begin(Op("create", f"{ROOT}/a"), 2.0)
    assert [v.kind for v in model.finish(seq, p, 2.5, "ack")] == ["answer"]
    assert model.blocked(f"{ROOT}/a")  # after a contradiction its paths are anything
    seq, p = model.begin(Op("chmod", f"{ROOT}/x", mode=0o700), 3.0)
    assert model.finish(seq, p, 3.5, "refused", FILE_NOT_FOUND) == []
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/b"), 4.0)
    assert [v.kind for v in model.finish(seq, p, 4.5, "refused", FILE_NOT_FOUND)] == ["answer"]
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/c"), 5.0)
    assert model.finish(seq, p, 5.5, "refused", "no active NameNode") == []
    seq, p = model.begin(Op("delete", f"{ROOT}/nothing"), 6.0)
    assert [v.kind for v in model.finish(seq, p, 6.5, "ack", result=True)] == ["answer"]
    # a retry of a delete that had happened answers false: the retry's answer, not a lie
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/d"), 7.0)
    model.finish(seq, p, 7.5, "ack", result=True)
    seq, p = model.begin(Op("delete", f"{ROOT}/d"), 8.0)
    assert [v.kind for v in model.finish(seq, p, 8.5, "ack", result=False)] == ["answer"]
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/e"), 9.0)
    model.finish(seq, p, 9.5, "ack", result=True)
    seq, p = model.begin(Op("delete", f"{ROOT}/e"), 10.0)
    assert model.finish(seq, p, 10.5, "ack", result=False, retried=True) == []
    assert model.retry_answers == 1 and f"{ROOT}/e" not in model.ns.state


def test_a_read_may_see_any_state_between_its_call_and_its_answer() -> None:
    model = new_model()
    a = f"{ROOT}/a"
    seq, p = model.begin(Op("mkdirs", a), 10.0)
    model.finish(seq, p, 11.0, "ack", result=True)
    seq, p = model.begin(Op("chmod", a, mode=0o700), 20.0)
    model.finish(seq, p, 25.0, "ack")
    d755, d700, absent = Observed("dir", 0o755), Observed("dir", 0o700), Observed("absent")
    assert model.may_see(a, 5.0, 9.0, absent) and not model.may_see(a, 5.0, 9.0, d755)
    assert model.may_see(a, 12.0, 13.0, d755) and not model.may_see(a, 12.0, 13.0, d700)
    assert model.may_see(a, 21.0, 22.0, d755) and model.may_see(a, 21.0, 22.0, d700)
    assert not model.may_see(a, 26.0, 27.0, d755) and model.may_see(a, 26.0, 27.0, d700)
    assert model.may_see(a, 12.0, 30.0, d755) and not model.may_see(a, 12.0, 30.0, absent)
    seq, p = model.begin(Op("delete", a), 30.0)
    model.finish(seq, p, 31.0, "indeterminate")  # gone, or not, from 30 on
    assert model.may_see(a, 40.0, 41.0, absent) and model.may_see(a, 40.0, 41.0, d700)
    assert not model.may_see(a, 40.0, 41.0, d755)
    # listings: every name, and only names the history made
    root_listing = Observed("listing", entries=(("a", "d", 0o700),))
    assert model.may_see(ROOT, 26.0, 27.0, root_listing)
    assert not model.may_see(ROOT, 26.0, 27.0, Observed("listing", entries=()))
    assert model.may_see(ROOT, 40.0, 41.0, Observed("listing", entries=()))
    ghost = Observed("listing", entries=(("a", "d", 0o700), ("ghost", "f", 0o644)))
    assert not model.may_see(ROOT, 26.0, 27.0, ghost)
    assert model.may_see(a, 26.0, 27.0, Observed("error", error=STANDBY))


# ---- outcomes


def remote(cls: str, msg: str = "") -> RemoteError:
    return RemoteError(cls, msg, peer="nn1:1", method="mkdirs")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (None, "answer"),
        (remote(FILE_NOT_FOUND), "refused"),
        (remote(STANDBY, "Operation category WRITE is not supported in state standby"), "standby"),
        (remote(STANDBY, "NameNode nn1 is still starting (initializing)"), "standby"),
        (remote(STANDBY, "NameNode nn1 was deposed by a newer writer"), "maybe"),
        (remote("org.apache.hadoop.ipc.RetriableException"), "retriable"),
        (remote("java.io.IOException", "the edit could not be synced"), "maybe"),
        (RpcConnectionError("mkdirs: cannot connect to nn1:1 after 1 attempt(s)"), "not-sent"),
        (RpcConnectionError("mkdirs: connection to nn1:1 lost"), "maybe"),
        (RpcTimeoutError("mkdirs: no answer within 2.5s"), "maybe"),
    ],
)
def test_attempt_kinds(error: BaseException | None, kind: str) -> None:
    assert attempt_kind(error) == kind


@pytest.mark.parametrize(
    ("attempts", "error", "outcome"),
    [
        (["maybe", "standby", "answer"], None, ("ack", "")),
        (["refused"], remote(ALREADY_EXISTS), ("refused", ALREADY_EXISTS)),
        (["standby", "refused"], remote(ALREADY_EXISTS), ("refused", ALREADY_EXISTS)),
        (["maybe", "refused"], remote(ALREADY_EXISTS), ("indeterminate", "")),
        (["maybe"], RpcTimeoutError("t"), ("indeterminate", "")),
        (["not-sent", "standby"], RpcTimeoutError("no active"), ("refused", "no active NameNode")),
        (["maybe"], remote("java.io.IOException"), ("indeterminate", "")),
        (["answer"], remote("java.io.IOException"), ("indeterminate", "")),
    ],
)
def test_classify(
    attempts: list[str], error: BaseException | None, outcome: tuple[str, str]
) -> None:
    tries = [Attempt("nn:1", k) for k in attempts]  # type: ignore[arg-type]
    assert classify(tries, error) == outcome


def record(**kw: object) -> CallRecord:
    base: dict[str, object] = dict(
        client=0, seq=1, op="mkdirs /x", kind="mkdirs", invoked=1.0, completed=2.0, outcome="ack"
    )
    base.update(kw)
    return CallRecord(**base)  # type: ignore[arg-type]


def test_history_first_ack_and_counts(tmp_path: Path) -> None:
    h = History(tmp_path / "h.jsonl")
    h.add(record(completed=1.0, logs=True, namenode="nn1"))
    h.add(record(completed=2.0, logs=False, namenode="nn2"))
    h.add(record(completed=3.0, logs=True, namenode="nn1", outcome="refused"))
    h.add(record(completed=4.0, logs=True, namenode="nn1"))
    h.add(record(completed=5.0, logs=True, namenode="nn2"))
    h.close()
    assert h.first_ack(1.0) is h.records[3]
    assert h.first_ack(1.0, writes_only=False) is h.records[1]
    assert h.first_ack(1.0, not_by="nn1") is h.records[4]
    assert h.first_ack(5.0) is None
    assert h.outcomes() == {"ack": 4, "refused": 1}
    h.forget(2)  # the checks are done with them: counted still, no longer kept
    assert len(h.records) == 3 and h.outcomes() == {"ack": 4, "refused": 1}
    assert h.by_kind() == {"mkdirs": {"ack": 4, "refused": 1}}
    assert len((tmp_path / "h.jsonl").read_text().splitlines()) == 5


def test_check_reads_names_the_stale_answer() -> None:
    model = new_model()
    seq, p = model.begin(Op("mkdirs", f"{ROOT}/a"), 10.0)
    model.finish(seq, p, 11.0, "ack", result=True)
    seq, p = model.begin(Op("delete", f"{ROOT}/a"), 20.0)
    model.finish(seq, p, 21.0, "ack", result=True)
    ok = record(
        client=1,
        seq=-1,
        kind="stat",
        owner=0,
        path=f"{ROOT}/a",
        invoked=19.0,
        completed=22.0,
        seen=Observed("dir", 0o755),
    )
    stale = record(
        client=1,
        seq=-1,
        kind="stat",
        owner=0,
        path=f"{ROOT}/a",
        invoked=23.0,
        completed=30.0,
        seen=Observed("dir", 0o755),
        namenode="nn1",
    )
    found = check_reads([ok, stale], {0: model})
    assert [v.kind for v in found] == ["stale read"]
    assert "nn1" in found[0].message and "delete /chaos/c0/a" in found[0].evidence[1]


# ---- the nemesis


def test_the_schedule_is_the_seeds() -> None:
    a = schedule(5, 50, 3.0)
    assert a == schedule(5, 50, 3.0)
    assert schedule(5, 20, 3.0) == a[:20]
    assert a != schedule(6, 50, 3.0)
    assert {x.kind for x in schedule(5, 300, 3.0)} == set(ACTION_KINDS)
    for x in a:
        if x.kind == "kill-two-jns":
            assert len(set(x.journalnodes)) == 2
        if x.kind in ("stop-active-nn", "stop-standby-nn"):
            assert x.hold_s > 3.0 + 2.0  # past the session and the graceful fencing
    only = schedule(5, 30, 3.0, ("kill-jn", "restart-zookeeper"))
    assert {x.kind for x in only} == {"kill-jn", "restart-zookeeper"}
    with pytest.raises(ValueError, match="unknown nemesis action kind"):
        schedule(5, 3, 3.0, ("kill-everything",))


@pytest.mark.parametrize(
    ("action", "kind", "daemon", "stopped", "expected"),
    [
        ("kill-two-jns", "namenode", "nn1", "", True),
        ("kill-two-jns", "zkfc", "zkfc1", "", False),
        ("kill-jn", "namenode", "nn1", "", False),
        ("stop-active-nn", "namenode", "nn1", "nn1", True),
        ("stop-active-nn", "namenode", "nn2", "nn1", False),
        ("restart-zookeeper", "zkfc", "zkfc1", "", False),
    ],
)
def test_which_exits_a_fault_explains(
    action: str, kind: str, daemon: str, stopped: str, expected: bool
) -> None:
    assert bool(exit_expected(action, kind, daemon, stopped)) == expected


# ---- the other checks


def status(name: str, is_dir: bool = True, perm: int = 0o755, fid: int = 1) -> FileStatus:
    return FileStatus(name, is_dir, 0, perm, "u", "g", 1, 1, 0, 0, fid, 0)


def test_check_namespace_finds_strays_outside_the_subtrees() -> None:
    model = new_model()
    tree = {"/chaos": status("chaos"), ROOT: status("c0"), "/chaos/other": status("other")}
    assert [v.kind for v in check_namespace([model], tree, "/chaos")] == ["never attempted"]
    del tree["/chaos/other"]
    assert check_namespace([model], tree, "/chaos") == []


def test_compare_trees() -> None:
    a = {"/x": status("x"), "/x/y": status("y", False, 0o644, 2)}
    assert compare_trees(a, dict(a)) == []
    b = {"/x": status("x"), "/x/y": status("y", False, 0o600, 2), "/x/z": status("z")}
    diffs = compare_trees(a, b)
    assert diffs == ["/x/y: permission 420 vs 384", "/x/z: only on the standby"]


def test_no_quorum_acks() -> None:
    inside = record(invoked=10.0, completed=11.0, logs=True)
    no_log = record(invoked=10.0, completed=11.0, logs=False)
    before = record(invoked=4.0, completed=6.0, logs=True)
    refused = record(invoked=10.0, completed=11.0, logs=True, outcome="refused")
    found = no_quorum_acks([inside, no_log, before, refused], [(5.0, 12.0, 3)])
    assert [(v.kind, v.action) for v in found] == [("acknowledged without a quorum", 3)]
    inside = without_quorum([inside, no_log, before, refused], [(5.0, 12.0, 3)])
    assert [r.outcome for r, _ in inside] == ["ack", "refused"]


def write_segment(path: Path, ops: list[tuple[int, bytes]]) -> None:
    path.write_bytes(header() + b"".join(encode_op(10, t, b) for t, b in ops) + b"\xff" * 8)


def test_journals_compared_txid_by_txid(tmp_path: Path) -> None:
    for jn in ("jn1", "jn2", "jn3"):
        (tmp_path / jn).mkdir()
    write_segment(tmp_path / "jn1" / f"edits_{1:019d}-{3:019d}", [(1, b"a"), (2, b"b"), (3, b"c")])
    write_segment(tmp_path / "jn2" / f"edits_{1:019d}-{3:019d}", [(1, b"a"), (2, b"b"), (3, b"c")])
    write_segment(tmp_path / "jn3" / f"edits_{2:019d}-{3:019d}", [(2, b"b"), (3, b"X")])
    write_segment(tmp_path / "jn3" / f"edits_inprogress_{4:019d}", [(4, b"z")])
    reader = SegmentReader()
    journals = {jn: reader.read(tmp_path / jn) for jn in ("jn1", "jn2", "jn3")}
    assert [len(s) for s in journals.values()] == [1, 1, 1]  # in-progress segments left out
    found = compare_journals(journals)
    assert [v.message for v in found] == [
        f"txid 3 differs between jn1's edits_{1:019d}-{3:019d} and jn3's edits_{2:019d}-{3:019d}"
    ]
    assert compare_journals({k: v for k, v in journals.items() if k != "jn3"}) == []
    assert reader.read(tmp_path / "jn1") == []  # read once: finalized segments do not change
    write_segment(tmp_path / "jn2" / f"edits_{4:019d}-{6:019d}", [(4, b"d"), (5, b"e")])
    short = reader.read(tmp_path / "jn2")
    assert [s.name for s in short] == [f"edits_{4:019d}-{6:019d}"]
    assert "holds txids 4..5 (2 ops), not 4..6" in short[0].problem
    assert [v.kind for v in compare_journals({"jn2": short})] == ["journal"]
    assert reader.read(tmp_path / "nowhere") == []


def test_the_journal_index_compares_each_new_segment_with_every_txid_seen() -> None:
    def seg(name: str, start: int, ops: str) -> SegmentOps:
        return SegmentOps(name, start, start + len(ops) - 1, b"".join(c.encode() * 8 for c in ops))

    index = JournalIndex()
    assert index.add("jn1", seg("a", 1, "abc")) == []  # txids 1-3
    assert index.add("jn1", seg("b", 6, "fg")) == []  # txids 6-7, a gap at 4-5
    assert index.add("jn2", seg("c", 2, "bcdefg")) == []  # 2-7: fills the gap
    found = index.add("jn3", seg("d", 1, "abcdXfg"))  # 5 differs from jn2's, seen in the gap
    assert [v.message for v in found] == ["txid 5 differs between jn2's c and jn3's d"]
    found = index.add("jn3", seg("e", 3, "Z"))
    assert [v.message for v in found] == ["txid 3 differs between jn1's a and jn3's e"]
    assert index.add("jn2", seg("f", 8, "h")) == [] and index.add("jn1", seg("g", 8, "h")) == []


def test_spread() -> None:
    assert spread([]) == {"count": 0, "median": None, "max": None}
    assert spread([3.0, 1.0, 2.0, 10.0]) == {"count": 4, "median": 2.5, "max": 10.0}


async def test_the_gate_holds_clients_between_calls() -> None:
    gate = Gate()
    gate.resume()
    await gate.enter(1)
    assert not await gate.pause(0.05)  # client 1 is in a call
    release = asyncio.get_running_loop().call_later(
        0.05, lambda: asyncio.ensure_future(gate.leave(1))
    )
    assert await gate.pause(5.0)
    release.cancel()
    entered = asyncio.ensure_future(gate.enter(2))
    await asyncio.sleep(0)
    assert not entered.done()  # held at the gate
    gate.resume()
    await asyncio.wait_for(entered, 5.0)


def test_the_command_line_refuses_bad_arguments(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli.main(["--kinds", "kill-everything", "--dir", str(tmp_path / "r")]) == 2
    assert "unknown kind(s) kill-everything" in capsys.readouterr().err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "precious").write_text("x")
    assert cli.main(["--dir", str(tmp_path / "busy")]) == 2
    err = capsys.readouterr().err
    assert "is not empty and holds no earlier chaos run" in err and "Traceback" not in err
    assert (tmp_path / "busy" / "precious").exists()


def test_the_summary_says_what_was_done_and_found(tmp_path: Path) -> None:
    s = Summary(7, actions_done=3, checks=5)
    s.actions_by_kind.update({"kill-active-nn": 2, "kill-jn": 1})
    s.ops_by_outcome.update({"ack": 90, "refused": 8, "indeterminate": 2})
    s.failovers += [
        {"action": 0, "kind": "kill-active-nn", "from": "nn1", "to": "nn2", "seconds": 1.0},
        {"action": 1, "kind": "kill-active-nn", "from": "nn2", "to": "nn1", "seconds": 3.0},
        {"action": 2, "kind": "stop-active-nn", "from": "nn1", "to": "", "seconds": None},
    ]
    s.violations.append(Violation("lost", "/x is absent", ["evidence"], action=1))
    s.no_quorum_writes.update({"refused": 3, "indeterminate": 2})
    text = s.text()
    assert "seed 7, 3 actions" in text and "kill-active-nn 2, kill-jn 1" in text
    assert "ack 90, indeterminate 2, refused 8" in text
    assert "2, median 2.0s, max 3.0s" in text
    assert "violations: 1 (lost 1)" in text
    assert "while two JournalNodes were down: indeterminate 2, refused 3" in text
    assert "VIOLATION [lost] seed 7, action 2: /x is absent\n    evidence" in text
    data = json.loads(write_summary(s, tmp_path).read_text())
    assert data["failover_s"] == {"count": 2, "median": 2.0, "max": 3.0}
    assert data["violations"][0]["kind"] == "lost"
