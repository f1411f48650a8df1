"""Block ids and generation stamps: HDFS's counters, allocated by plans and set by apply.

The namespace keeps the counters HDFS's BlockIdManager keeps and its image's NS_INFO
section holds (design §B.9). A plan allocates the next value without changing anything
and logs it (OP_ALLOCATE_BLOCK_ID, OP_SET_GENSTAMP_V2); apply sets the counter to the
logged value, as HDFS's FSEditLogLoader does, so a NameNode that replays the log or loads
the image never hands out a value again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from qjm.editlog.ops import AllocateBlockIdOp, SetGenstampV2Op
from qjm.namenode.image.model import NameSystemInfo

# SequentialBlockIdGenerator.LAST_RESERVED_BLOCK_ID: the first allocated id is this + 1.
LAST_RESERVED_BLOCK_ID = 1 << 30
# GenerationStamp.LAST_RESERVED_STAMP: the first generation stamp handed out is this + 1.
LAST_RESERVED_STAMP = 1000


@dataclass
class BlockIds:
    """The last allocated block id and generation stamps (NS_INFO's counters)."""

    genstamp_v1: int = LAST_RESERVED_STAMP  # legacy stamps (blocks from before sequential ids)
    genstamp_v2: int = LAST_RESERVED_STAMP  # stamps of sequential-id blocks
    genstamp_v1_limit: int = 0  # the v1 stamp at the upgrade to sequential ids
    last_block_id: int = LAST_RESERVED_BLOCK_ID  # last contiguous (non-negative) id
    last_striped_block_id: int | None = None  # last striped (negative) id, if any

    @classmethod
    def of(cls, info: NameSystemInfo) -> BlockIds:
        """The counters an image's NS_INFO section holds."""
        return cls(
            genstamp_v1=info.genstamp_v1,
            genstamp_v2=info.genstamp_v2,
            genstamp_v1_limit=info.genstamp_v1_limit,
            last_block_id=info.last_allocated_block_id,
            last_striped_block_id=info.last_allocated_striped_block_id,
        )

    def into(self, info: NameSystemInfo) -> NameSystemInfo:
        """info with these counters (the rest of the section, such as the txid, kept)."""
        return dataclasses.replace(
            info,
            genstamp_v1=self.genstamp_v1,
            genstamp_v2=self.genstamp_v2,
            genstamp_v1_limit=self.genstamp_v1_limit,
            last_allocated_block_id=self.last_block_id,
            last_allocated_striped_block_id=self.last_striped_block_id,
        )

    def copy(self) -> BlockIds:
        """An independent copy."""
        return dataclasses.replace(self)

    def next_block_id(self) -> AllocateBlockIdOp:
        """The op allocating the next sequential block id (its block_id is the new id)."""
        return AllocateBlockIdOp(block_id=self.last_block_id + 1)

    def next_genstamp(self) -> SetGenstampV2Op:
        """The op allocating the next generation stamp (its genstamp_v2 is the new stamp)."""
        return SetGenstampV2Op(genstamp_v2=self.genstamp_v2 + 1)
