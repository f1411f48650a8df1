"""A storage's reported replicas as numpy columns, for bulk report processing (design §B.5).

Pure: one entry per replica in report order (id, length, genstamp, replica state).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from qjm.editlog.ops.types import Block
from qjm.namenode.blocks.pending_messages import ReplicaState, ReportedReplica

_MAX_STATE = max(ReplicaState)


@dataclass(frozen=True, slots=True)
class ReplicaColumns:
    """Reported replicas as columns: ids, lengths, genstamps, states (report order)."""

    ids: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    gs: npt.NDArray[np.int64]
    states: npt.NDArray[np.uint8]

    def __post_init__(self) -> None:
        n = len(self.ids)
        if not len(self.nbytes) == len(self.gs) == len(self.states) == n:
            raise ValueError(
                f"replica columns differ in length: {n} ids, {len(self.nbytes)} lengths, "
                f"{len(self.gs)} genstamps, {len(self.states)} states"
            )
        if n and int(self.states.max()) > _MAX_STATE:
            raise ValueError(
                f"replica state {int(self.states.max())} is not a ReplicaState (0..{_MAX_STATE})"
            )

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(
        cls,
        ids: Iterable[int],
        nbytes: Iterable[int],
        gs: Iterable[int],
        states: Iterable[int],
        count: int = -1,
    ) -> ReplicaColumns:
        """Columns from four iterables of ints (count: their length, when known)."""
        return cls(
            np.fromiter(ids, dtype=np.int64, count=count),
            np.fromiter(nbytes, dtype=np.int64, count=count),
            np.fromiter(gs, dtype=np.int64, count=count),
            np.fromiter(states, dtype=np.uint8, count=count),
        )

    @classmethod
    def from_replicas(cls, replicas: Sequence[ReportedReplica]) -> ReplicaColumns:
        """The columns of a list of ReportedReplica."""
        n = len(replicas)
        return cls.of(
            (r.block.block_id for r in replicas),
            (r.block.num_bytes for r in replicas),
            (r.block.genstamp for r in replicas),
            (r.state for r in replicas),
            n,
        )

    def replica(self, i: int) -> ReportedReplica:
        """The i-th replica as a ReportedReplica."""
        return ReportedReplica(
            Block(int(self.ids[i]), int(self.nbytes[i]), int(self.gs[i])),
            ReplicaState(int(self.states[i])),
        )

    def replicas(self) -> list[ReportedReplica]:
        """Every replica as a ReportedReplica, in report order."""
        return [
            ReportedReplica(Block(i, n, g), ReplicaState(s))
            for i, n, g, s in zip(
                self.ids.tolist(),
                self.nbytes.tolist(),
                self.gs.tolist(),
                self.states.tolist(),
                strict=True,
            )
        ]
