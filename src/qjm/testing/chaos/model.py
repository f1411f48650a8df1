"""The chaos workload's model of one client's subtree: what each call must answer, and what
the NameNode may hold, given the calls made and their outcomes.

Only its own client writes under a subtree, one call at a time, so the model is exact for
every path no indeterminate call touched. An indeterminate call (no answer, or an answer that
does not say whether it happened) taints the paths it may have changed: they hold either the
state before it or the state after it, at any moment from its start on, and the client never
touches them (or anything whose answer depends on them) again. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["d", "f"]
Entry = tuple[Kind, int]  # ("d" or "f", permission bits)
State = Entry | None  # None: the path does not exist

DIR_MODE = 0o755  # mkdirs of 0777 under the client's umask 022
FILE_MODE = 0o644  # create of 0666 under the umask
IMPLICIT_UWX = 0o300  # parents made on the way get u+wx, as HDFS's FSDirMkdirOp

# The Java exception classes the NameNode refuses namespace calls with.
FILE_NOT_FOUND = "java.io.FileNotFoundException"
ALREADY_EXISTS = "org.apache.hadoop.fs.FileAlreadyExistsException"
PARENT_NOT_DIR = "org.apache.hadoop.fs.ParentNotDirectoryException"
IO_EXCEPTION = "java.io.IOException"
NAMESPACE_ERRORS = frozenset(
    {
        FILE_NOT_FOUND,
        ALREADY_EXISTS,
        PARENT_NOT_DIR,
        "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException",
        "org.apache.hadoop.fs.InvalidPathException",
    }
)

WRITES = ("mkdirs", "create", "complete", "rename", "delete", "chmod")
READS = ("stat", "list")


@dataclass(frozen=True)
class Op:
    """One namespace call: kind (WRITES or READS), its path, dst (rename), mode (chmod)."""

    kind: str
    path: str
    dst: str = ""
    mode: int = 0

    def describe(self) -> str:
        """The call as a short line."""
        if self.kind == "rename":
            return f"rename {self.path} -> {self.dst}"
        if self.kind == "chmod":
            return f"setPermission {self.path} {self.mode:o}"
        name = {"stat": "getFileInfo", "list": "getListing"}.get(self.kind, self.kind)
        return f"{name} {self.path}"


@dataclass(frozen=True)
class Prediction:
    """What a write must do on the state it was made on: refuse with error (a Java class),
    or succeed with result (mkdirs' and delete's boolean) changing the paths in changes."""

    error: str | None
    changes: dict[str, State] = field(default_factory=dict)
    result: bool | None = None

    @property
    def logs(self) -> bool:
        """True when the call changes the namespace (so it must reach the journal)."""
        return self.error is None and bool(self.changes)


def parent(path: str) -> str:
    """The parent directory of an absolute path."""
    return posixpath.dirname(path)


def ancestors(path: str) -> list[str]:
    """Every proper ancestor of an absolute path, the root first ("/" excluded)."""
    out: list[str] = []
    i = path.find("/", 1)
    while i > 0:
        out.append(path[:i])
        i = path.find("/", i + 1)
    return out


def is_under(path: str, top: str) -> bool:
    """True when path is top or below it."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def subtree(state: Mapping[str, Entry], top: str) -> list[str]:
    """The existing paths at or below top, sorted."""
    return sorted(p for p in state if is_under(p, top))


class ModelNamespace:
    """An exact namespace below a client's root: path -> Entry; everything above the root is
    an existing directory."""

    def __init__(self, root: str, state: Mapping[str, Entry] | None = None) -> None:
        self.root = root.rstrip("/") or "/"
        self.state: dict[str, Entry] = dict(state or {})

    def get(self, path: str) -> State:
        """The entry at path (an ancestor of the root is a directory)."""
        if not is_under(path, self.root):
            return ("d", DIR_MODE) if is_under(self.root, path) else None
        return self.state.get(path)

    def file_ancestor(self, path: str) -> bool:
        """True when the walk down to path meets a file (HDFS: ParentNotDirectoryException).

        The walk stops at the first missing component, as the NameNode's does.
        """
        for a in ancestors(path):
            e = self.get(a)
            if e is None:
                return False
            if e[0] == "f":
                return True
        return False

    def predict(self, op: Op) -> Prediction:
        """What the NameNode must answer to write op on this state."""
        if op.kind == "mkdirs":
            return self._mkdirs(op.path)
        if op.kind == "create":
            return self._create(op.path)
        if op.kind == "complete":
            if self.file_ancestor(op.path):
                return Prediction(PARENT_NOT_DIR)
            e = self.get(op.path)
            return (
                Prediction(None, result=True) if e and e[0] == "f" else Prediction(FILE_NOT_FOUND)
            )
        if op.kind == "rename":
            return self._rename(op.path, op.dst)
        if op.kind == "delete":
            if self.file_ancestor(op.path):
                return Prediction(PARENT_NOT_DIR)
            if self.get(op.path) is None:
                return Prediction(None, result=False)
            return Prediction(None, dict.fromkeys(subtree(self.state, op.path)), result=True)
        if op.kind == "chmod":
            if self.file_ancestor(op.path):
                return Prediction(PARENT_NOT_DIR)
            e = self.get(op.path)
            if e is None:
                return Prediction(FILE_NOT_FOUND)
            return Prediction(None, {op.path: (e[0], op.mode & 0o7777)})
        raise ValueError(f"not a write: {op.kind}")

    def _missing_parents(self, path: str) -> list[str]:
        return [a for a in ancestors(path) if self.get(a) is None]

    def _mkdirs(self, path: str) -> Prediction:
        if self.file_ancestor(path):
            return Prediction(PARENT_NOT_DIR)
        e = self.get(path)
        if e is not None:
            return Prediction(None, result=True) if e[0] == "d" else Prediction(ALREADY_EXISTS)
        changes: dict[str, State] = {
            a: ("d", DIR_MODE | IMPLICIT_UWX) for a in self._missing_parents(path)
        }
        changes[path] = ("d", DIR_MODE)
        return Prediction(None, changes, result=True)

    def _create(self, path: str) -> Prediction:
        if self.file_ancestor(path):
            return Prediction(PARENT_NOT_DIR)
        if self.get(path) is not None:
            return Prediction(ALREADY_EXISTS)
        changes: dict[str, State] = {
            a: ("d", FILE_MODE | IMPLICIT_UWX) for a in self._missing_parents(path)
        }
        changes[path] = ("f", FILE_MODE)
        return Prediction(None, changes)

    def _rename(self, src: str, dst: str) -> Prediction:
        if self.file_ancestor(src) or self.file_ancestor(dst):
            return Prediction(PARENT_NOT_DIR)
        s = self.get(src)
        if s is None:
            return Prediction(FILE_NOT_FOUND)
        if dst == src:
            return Prediction(ALREADY_EXISTS)
        if is_under(dst, src):
            return Prediction(IO_EXCEPTION)
        d = self.get(dst)
        if d is not None:
            return Prediction(IO_EXCEPTION if d[0] != s[0] else ALREADY_EXISTS)
        if self.get(parent(dst)) is None:
            return Prediction(FILE_NOT_FOUND)
        moved = subtree(self.state, src)
        changes: dict[str, State] = dict.fromkeys(moved)
        for p in moved:
            changes[dst + p[len(src) :]] = self.state[p]
        return Prediction(None, changes)

    def apply(self, changes: Mapping[str, State]) -> None:
        """Make the changes of a call that happened."""
        for p, e in changes.items():
            if e is None:
                self.state.pop(p, None)
            else:
                self.state[p] = e


# ---- what a read may answer


@dataclass(frozen=True)
class Observed:
    """A read's answer: ("error", Java class), ("absent",), ("file", perm), ("dir", perm), or
    a listing ("listing", ((name, "d"/"f", perm), ...)) sorted by name."""

    what: str
    perm: int = 0
    error: str = ""
    entries: tuple[tuple[str, Kind, int], ...] = ()

    def describe(self) -> str:
        """The answer as a short text."""
        if self.what == "error":
            return f"refused: {self.error.rsplit('.', 1)[-1]}"
        if self.what == "listing":
            shown = ", ".join(f"{n}{'/' if k == 'd' else ''} {p:o}" for n, k, p in self.entries)
            return f"listing [{shown}]"
        if self.what == "absent":
            return "no such path"
        return f"{self.what} {self.perm:o}"


def observed_state(state: State) -> Observed:
    """The answer getFileInfo gives for a state."""
    if state is None:
        return Observed("absent")
    return Observed("dir" if state[0] == "d" else "file", state[1])


# ---- the history of one client's subtree

Mark = Literal["set", "maybe", "wild"]


@dataclass(frozen=True)
class Change:
    """A call's change of one path: set (it happened), maybe (indeterminate: before or after,
    any time from the call on), wild (an answer contradicted the model: anything)."""

    seq: int
    mark: Mark
    before: State
    after: State


@dataclass(frozen=True)
class Verdict:
    """A contradiction between an answer and the model: kind and a message."""

    kind: str
    message: str


class SubtreeModel:
    """One client's subtree over time: its calls in order (seq 0, 1, ...), their times and
    outcomes, each path's changes, and the paths no later call may touch."""

    def __init__(self, root: str) -> None:
        self.ns = ModelNamespace(root)
        self.root = self.ns.root
        self.changes: dict[str, list[Change]] = {}
        self.invoked: list[float] = []  # by seq
        self.completed: list[float] = []
        self.ops: list[Op] = []
        self.tainted: dict[str, int] = {}  # path -> the seq of the call that tainted it
        self.above_tainted: set[str] = set()  # every ancestor of a tainted path
        self.groups: dict[int, dict[str, tuple[State, State]]] = {}  # seq -> before/after
        self.children: dict[str, set[str]] = {}  # dir -> every name ever seen under it
        self.retry_answers = 0  # acknowledgements whose result was a retry's, not the first's

    # -- what the workload may do next

    def blocked(self, path: str, *, subtree_too: bool = False) -> bool:
        """True when a call on path could depend on a tainted path: path or an ancestor is
        tainted (or, with subtree_too, anything below it)."""
        if path in self.tainted or any(a in self.tainted for a in ancestors(path)):
            return True
        return subtree_too and path in self.above_tainted

    def may_write(self, op: Op) -> bool:
        """True when the model can predict op exactly (it touches no tainted path)."""
        deep = op.kind in ("rename", "delete")
        if self.blocked(op.path, subtree_too=deep):
            return False
        return not (op.kind == "rename" and self.blocked(op.dst, subtree_too=True))

    # -- recording

    def begin(self, op: Op, invoked: float) -> tuple[int, Prediction]:
        """Number a write about to be made; its seq and what it must do."""
        seq = len(self.ops)
        self.ops.append(op)
        self.invoked.append(invoked)
        self.completed.append(invoked)
        return seq, self.ns.predict(op)

    def finish(
        self,
        seq: int,
        prediction: Prediction,
        completed: float,
        outcome: str,
        error: str = "",
        result: bool | None = None,
        retried: bool = False,
    ) -> list[Verdict]:
        """Record a write's outcome ("ack", "refused" with its Java class, "indeterminate");
        the contradictions with the model (each a Verdict).

        retried: an earlier attempt of the call may have been carried out, so an
        acknowledgement's result may be the retry's (delete: false, the path being gone
        already) rather than the first attempt's.
        """
        op = self.ops[seq]
        self.completed[seq] = completed
        verdicts: list[Verdict] = []
        if outcome == "ack":
            if prediction.error is not None:
                verdicts.append(
                    Verdict(
                        "answer",
                        f"{op.describe()} was acknowledged, but the history says it must be "
                        f"refused with {prediction.error.rsplit('.', 1)[-1]}",
                    )
                )
                self._taint(seq, self._footprint(op), wild=True)
                return verdicts
            answered = result if result is not None else prediction.result
            if answered != prediction.result and retried:
                self.retry_answers += 1
            elif answered != prediction.result:
                verdicts.append(
                    Verdict(
                        "answer",
                        f"{op.describe()} answered {result}, but the history says "
                        f"{prediction.result}",
                    )
                )
            self._set(seq, prediction.changes)
        elif outcome == "refused":
            if error in NAMESPACE_ERRORS and error != prediction.error:
                want = (
                    "success" if prediction.error is None else prediction.error.rsplit(".", 1)[-1]
                )
                verdicts.append(
                    Verdict(
                        "answer",
                        f"{op.describe()} was refused with {error.rsplit('.', 1)[-1]}, but the "
                        f"history says {want}",
                    )
                )
                if prediction.changes:
                    self._taint(seq, prediction.changes, wild=True)
        elif prediction.changes:  # indeterminate: it may have happened, now or later
            self._taint(seq, prediction.changes, wild=False)
        return verdicts

    def _footprint(self, op: Op) -> dict[str, State]:
        paths = [op.path, *subtree(self.ns.state, op.path)]
        if op.kind == "rename":
            paths.append(op.dst)
        return {p: self.ns.get(p) for p in paths}

    def _note_child(self, path: str) -> None:
        if path != self.root:
            self.children.setdefault(parent(path), set()).add(posixpath.basename(path))

    def _set(self, seq: int, changes: Mapping[str, State]) -> None:
        for p, after in changes.items():
            before = self.ns.get(p)
            self.changes.setdefault(p, []).append(Change(seq, "set", before, after))
            self._note_child(p)
        self.ns.apply(changes)

    def _taint(self, seq: int, changes: Mapping[str, State], *, wild: bool) -> None:
        group: dict[str, tuple[State, State]] = {}
        for p, after in changes.items():
            before = self.ns.get(p)
            mark: Mark = "wild" if wild else "maybe"
            self.changes.setdefault(p, []).append(Change(seq, mark, before, after))
            self.tainted[p] = seq
            self.above_tainted.update(ancestors(p))
            self._note_child(p)
            group[p] = (before, after)
            self.ns.state.pop(p, None)
        if not wild:
            self.groups[seq] = group

    # -- what a read may have seen

    def versions(self, start: float, end: float) -> range:
        """The versions (v: after the first v calls) a read made in [start, end] may see."""
        first = bisect_left(self.completed, start)  # calls completed before start: all in
        last = bisect_left(self.invoked, end)  # calls begun before the read was answered
        return range(first, max(first, last) + 1)

    def states_at(self, path: str, version: int) -> set[State] | None:
        """The states path may have at version (None: anything, after a contradiction)."""
        hist = self.changes.get(path, [])
        i = bisect_left([c.seq for c in hist], version)
        if i == 0:  # before its first change: absent (above the root: a directory)
            return {None if is_under(path, self.root) else self.ns.get(path)}
        c = hist[i - 1]
        if c.mark == "wild":
            return None
        if c.mark == "maybe":
            return {c.before, c.after}
        return {c.after}

    def may_see(self, path: str, start: float, end: float, seen: Observed) -> bool:
        """True when a read of path made in [start, end] may have answered seen."""
        return any(self._matches(path, v, seen) for v in self.versions(start, end))

    def _matches(self, path: str, version: int, seen: Observed) -> bool:
        if seen.what == "error":
            if seen.error != PARENT_NOT_DIR:
                return True  # refusals of other kinds say nothing about the namespace
            return any(
                (s := self.states_at(a, version)) is None or any(e and e[0] == "f" for e in s)
                for a in ancestors(path)
            )
        states = self.states_at(path, version)
        if states is None:
            return True
        if seen.what != "listing":
            return seen in {observed_state(s) for s in states}
        if not any(s is not None and s[0] == "d" for s in states):
            return False
        listed = {name: (kind, perm) for name, kind, perm in seen.entries}
        for name in listed.keys() | self.children.get(path, set()):
            child = self.states_at(posixpath.join(path, name), version)
            if child is None:
                continue
            if (listed.get(name) if name in listed else None) not in child:
                return False
        return True

    # -- what the NameNode must hold now

    def check_holds(self, held: Mapping[str, Entry]) -> list[Verdict]:
        """Compare what the NameNode holds below the root (path -> Entry, the root included)
        with the model once every call is answered; the contradictions."""
        out: list[Verdict] = []
        for p in sorted(held.keys() - self.changes.keys()):
            out.append(
                Verdict(
                    "never attempted",
                    f"{p} is {_show(held[p])} on the active, but no acknowledged or "
                    "indeterminate call made it",
                )
            )
        for p in sorted(self.ns.state.keys() | (self.changes.keys() - self.tainted.keys())):
            want, got = self.ns.state.get(p), held.get(p)
            if p in self.tainted or want == got:
                continue
            last = self.changes.get(p, [])
            by = self.ops[last[-1].seq].describe() if last else "the client's first mkdirs"
            out.append(
                Verdict(
                    "lost",
                    f"{p} is {_show(got)} on the active, but the acknowledged calls leave it "
                    f"{_show(want)} (last changed by: {by})",
                )
            )
        for seq, group in self.groups.items():
            got_g = {p: held.get(p) for p in group}
            before = {p: b for p, (b, _) in group.items()}
            after = {p: a for p, (_, a) in group.items()}
            if got_g not in (before, after):
                out.append(
                    Verdict(
                        "lost",
                        f"the paths of the indeterminate {self.ops[seq].describe()} hold "
                        f"neither the state before it nor after it: "
                        + ", ".join(f"{p} {_show(g)}" for p, g in sorted(got_g.items())),
                    )
                )
        return out

    def known(self, paths: Iterable[str]) -> list[str]:
        """The paths among paths that some call of this client made or changed."""
        return [p for p in paths if p in self.changes]


def _show(state: State) -> str:
    if state is None:
        return "absent"
    return f"{'a directory' if state[0] == 'd' else 'a file'} {state[1]:o}"
