"""The history of a chaos run: every call a workload client made, with when it was made and
answered, which NameNode answered, and its outcome: acknowledged, refused (a definite error:
it did not happen), or indeterminate (it may or may not have happened).

An HA client tries the NameNodes in turn, so one call may be several attempts; the outcome
is decided from all of them (classify): an answer of success is an acknowledgement; an error
is a refusal only when no attempt before it may have been carried out.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from qjm.ipc import RemoteError, RpcConnectionError
from qjm.testing.chaos.model import NAMESPACE_ERRORS, Observed

Outcome = Literal["ack", "refused", "indeterminate"]
AttemptKind = Literal["answer", "refused", "standby", "retriable", "not-sent", "maybe"]

STANDBY = "org.apache.hadoop.ipc.StandbyException"
RETRIABLE = "org.apache.hadoop.ipc.RetriableException"
NO_ACTIVE = "no active NameNode"
# Refusals a NameNode makes before it applies or logs anything.
DEFINITE_ERRORS = NAMESPACE_ERRORS | {
    "org.apache.hadoop.security.AccessControlException",
    "org.apache.hadoop.HadoopIllegalArgumentException",
    "java.lang.UnsupportedOperationException",
    "org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException",
    "org.apache.hadoop.hdfs.server.namenode.SafeModeException",
    "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException",
    "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException",
    "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException",
    "org.apache.hadoop.hdfs.protocol.FSLimitException$MaxDirectoryItemsExceededException",
    "org.apache.hadoop.hdfs.protocol.FSLimitException$PathTooLongException",
}
# A StandbyException whose message says the call was refused before anything was done (the
# NameNode's state check); any other (e.g. deposed while its edit was being synced) may
# follow an edit that reached some JournalNodes.
STANDBY_BEFORE = ("is still starting", "has not loaded its namespace")


@dataclass(frozen=True)
class Attempt:
    """One try of a call on one NameNode and what came of it."""

    address: str
    kind: AttemptKind
    detail: str = ""


def attempt_kind(error: BaseException | None) -> AttemptKind:
    """How one attempt ended: answered, refused before anything happened, or maybe carried
    out (no answer, a lost connection, an error after logging)."""
    if error is None:
        return "answer"
    if isinstance(error, RemoteError):
        if error.class_name == STANDBY:
            before = error.message.startswith("Operation ") or any(
                s in error.message for s in STANDBY_BEFORE
            )
            return "standby" if before else "maybe"
        if error.class_name == RETRIABLE:
            return "retriable"
        return "refused" if error.class_name in DEFINITE_ERRORS else "maybe"
    if isinstance(error, RpcConnectionError) and "cannot connect to" in str(error):
        return "not-sent"  # no connection: the request never left
    return "maybe"


def classify(attempts: list[Attempt], error: BaseException | None) -> tuple[Outcome, str]:
    """A call's outcome from its attempts and the error it ended with (None: success), and
    the Java class of a refusal."""
    if error is None:
        return "ack", ""
    if any(a.kind == "maybe" for a in attempts):
        return "indeterminate", ""
    if isinstance(error, RemoteError) and error.class_name in DEFINITE_ERRORS:
        return "refused", error.class_name
    if isinstance(error, RemoteError) and error.class_name not in (STANDBY, RETRIABLE):
        return "indeterminate", ""
    return "refused", NO_ACTIVE


@dataclass
class CallRecord:
    """One call: who made it, what, when (monotonic seconds), how it ended."""

    client: int
    seq: int  # the write's number in its client's model; -1 for a read
    op: str  # the call as a short line
    kind: str
    invoked: float
    completed: float
    outcome: Outcome
    namenode: str = ""  # the NameNode that gave the final answer
    error: str = ""  # the Java class of a refusal
    detail: str = ""  # the error message, shortened
    logs: bool = False  # a write the history says changes the namespace
    attempts: int = 1
    tries: str = ""  # each attempt: NameNode and how it ended
    # a read: the owner of the path, the path and what it answered
    owner: int | None = None  # None: not a read
    path: str = ""
    seen: Observed | None = field(default=None, repr=False)

    def line(self) -> str:
        """The record as one line of evidence."""
        by = f" by {self.namenode}" if self.namenode else ""
        what = self.seen.describe() if self.seen is not None else self.outcome
        err = f" {self.error.rsplit('.', 1)[-1]}" if self.error else ""
        tries = f" after {self.tries}" if self.attempts > 1 else ""
        who = f"client {self.client}" if self.client >= 0 else "the deposed-active probe"
        return (
            f"{who} {self.op}: {what}{err}{by} [{self.invoked:.3f} .. {self.completed:.3f}]{tries}"
        )


class History:
    """The calls of the run in the order they were answered, counted, and optionally
    appended to a JSON lines file as they come; records the checks are done with may be
    forgotten (the file keeps them)."""

    def __init__(self, path: Path | None = None) -> None:
        self.records: list[CallRecord] = []
        self.counts: dict[str, Counter[str]] = {}  # kind -> outcome -> calls
        self._file: IO[str] | None = path.open("a") if path is not None else None

    def add(self, record: CallRecord) -> None:
        """Keep a record (and write it out); records come in the order they were answered."""
        self.records.append(record)
        self.counts.setdefault(record.kind, Counter())[record.outcome] += 1
        if self._file is not None:
            data: dict[str, Any] = asdict(record)
            data["seen"] = record.seen.describe() if record.seen is not None else None
            self._file.write(json.dumps(data) + "\n")

    def close(self) -> None:
        """Flush and close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def forget(self, count: int) -> None:
        """Drop the first count records from memory (the checks are done with them)."""
        del self.records[:count]

    def outcomes(self) -> Counter[str]:
        """Calls by outcome (forgotten ones too)."""
        out: Counter[str] = Counter()
        for c in self.counts.values():
            out.update(c)
        return out

    def by_kind(self) -> dict[str, Counter[str]]:
        """Calls by kind, then by outcome (forgotten ones too)."""
        return {k: Counter(v) for k, v in self.counts.items()}

    def first_ack(
        self, after: float, *, writes_only: bool = True, not_by: str = ""
    ) -> CallRecord | None:
        """The first acknowledgement answered after a moment (a logged write, unless
        writes_only is False), optionally by another NameNode than not_by."""
        start = bisect_right(self.records, after, key=lambda r: r.completed)
        for r in self.records[start:]:
            if r.outcome != "ack" or (writes_only and not r.logs):
                continue
            if not_by and r.namenode == not_by:
                continue
            return r
        return None
