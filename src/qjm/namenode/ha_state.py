"""A NameNode's HA state (design §N.8): its moves, when each began, and what refuses calls."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from qjm.namenode.errors import NamenodeError, StandbyError
from qjm.namenode.types import HAState

log = logging.getLogger("qjm.namenode.ha")

# Where each state may go; STOPPING is reachable from everywhere and leads nowhere.
ALLOWED: dict[HAState, frozenset[HAState]] = {
    HAState.INITIALIZING: frozenset({HAState.STANDBY, HAState.STOPPING}),
    HAState.STANDBY: frozenset({HAState.ACTIVE, HAState.STOPPING}),
    HAState.ACTIVE: frozenset({HAState.STANDBY, HAState.STOPPING}),
    HAState.OBSERVER: frozenset({HAState.STANDBY, HAState.STOPPING}),
    HAState.STOPPING: frozenset(),
}


class StoppingError(NamenodeError):
    """The NameNode is stopping (or stopped after a fatal error): it serves nothing."""

    java_class = "org.apache.hadoop.ipc.StandbyException"


class HAStateMachine:
    """The current HA state, changed only along ALLOWED, with listeners told of each move."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = HAState.INITIALIZING
        self.since = time.time()
        self.transitions = 0
        self.listeners: list[Callable[[HAState, HAState], None]] = []
        self.why_stopping = ""

    def move(self, to: HAState, why: str = "") -> None:
        """Enter state to; raises NamenodeError naming both states when the move is not allowed."""
        frm = self.state
        if to == frm:
            return
        if to not in ALLOWED[frm]:
            raise NamenodeError(f"NameNode {self.name}: cannot go from {frm.name} to {to.name}")
        self.state = to
        self.since = time.time()
        self.transitions += 1
        if to == HAState.STOPPING:
            self.why_stopping = why
        log.info(
            "NameNode %s: %s -> %s%s", self.name, frm.name, to.name, f" ({why})" if why else ""
        )
        for listener in list(self.listeners):
            listener(frm, to)

    def check_active(self, operation: str = "") -> None:
        """Raise StandbyError (or StoppingError) unless active."""
        if self.state == HAState.ACTIVE:
            return
        what = f" {operation}" if operation else ""
        if self.state == HAState.STOPPING:
            raise StoppingError(
                f"Operation{what} is not supported in state stopping: NameNode {self.name} is "
                f"stopping{': ' + self.why_stopping if self.why_stopping else ''}"
            )
        raise StandbyError(
            f"Operation category{what} is not supported in state "
            f"{self.state.name.lower()}: NameNode {self.name} is not active"
        )

    def is_in(self, state: HAState) -> bool:
        """True while in state (a call, so a check after an await is not narrowed away)."""
        return self.state == state

    def is_active(self) -> bool:
        """True while active."""
        return self.state == HAState.ACTIVE
