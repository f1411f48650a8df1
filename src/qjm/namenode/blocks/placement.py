"""Where new replicas go: HDFS's BlockPlacementPolicyDefault for one rack (design §B.7).

Pure: the caller passes the candidate nodes and a random.Random.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from qjm.namenode.blocks.datanode_manager import (
    DatanodeDescriptor,
    DatanodeStorageInfo,
    StorageState,
    StorageType,
)

MIN_BLOCKS_FOR_WRITE = 1  # HdfsServerConstants.MIN_BLOCKS_FOR_WRITE
CONSIDER_LOAD_FACTOR = 2.0  # dfs.namenode.redundancy.considerLoad.factor


@dataclass(frozen=True, slots=True)
class Target:
    """One chosen replica location: the node and the storage on it."""

    node: DatanodeDescriptor
    storage: DatanodeStorageInfo


def fitting_storage(node: DatanodeDescriptor, block_size: int) -> DatanodeStorageInfo | None:
    """The node's DISK storage with most remaining space that holds a block, or None."""
    scheduled = node.blocks_scheduled * block_size
    best: DatanodeStorageInfo | None = None
    for s in node.storages.values():
        if s.state is not StorageState.NORMAL or s.storage_type is not StorageType.DISK:
            continue
        if s.remaining - scheduled < block_size * MIN_BLOCKS_FOR_WRITE:
            continue
        if best is None or s.remaining > best.remaining:
            best = s
    return best


def choose_targets(
    n: int,
    live: Sequence[DatanodeDescriptor],
    block_size: int,
    rng: random.Random,
    *,
    writer: str | None = None,
    excluded: Collection[str] = (),
    favored: Sequence[str] = (),
    consider_load: bool = True,
) -> list[Target]:
    """Up to n targets on distinct good nodes: favored, then the writer, then random.

    A good node is in service, not excluded, has a storage that fits block_size and, when
    consider_load, an xceiver count at most CONSIDER_LOAD_FACTOR times the average. Among
    the rest the less loaded of two random picks wins. Fewer than n means there are no
    more good nodes; the caller decides whether that is enough (design §B.7).
    """
    if n <= 0:
        return []
    good: dict[str, Target] = {}
    load_cap = None
    if consider_load and live:
        avg = sum(d.xceiver_count for d in live) / len(live)
        load_cap = CONSIDER_LOAD_FACTOR * avg if avg > 0 else None
    for d in live:
        if not d.in_service or d.uuid in excluded:
            continue
        if load_cap is not None and d.xceiver_count > load_cap:
            continue
        st = fitting_storage(d, block_size)
        if st is not None:
            good[d.uuid] = Target(d, st)
    chosen: list[Target] = []
    for uuid in (*favored, *((writer,) if writer else ())):
        t = good.pop(uuid, None)
        if t is not None and len(chosen) < n:
            chosen.append(t)
    rest = sorted(good.values(), key=lambda t: t.node.uuid)  # deterministic for a seeded rng
    while len(chosen) < n and rest:
        i = rng.randrange(len(rest))
        if len(rest) > 1:
            j = rng.randrange(len(rest) - 1)
            j = j + 1 if j >= i else j
            if rest[j].node.xceiver_count < rest[i].node.xceiver_count:
                i = j
        chosen.append(rest.pop(i))
    return chosen
