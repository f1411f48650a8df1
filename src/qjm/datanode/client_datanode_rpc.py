"""ClientDatanodeProtocol on the DataNode's IPC port: getReplicaVisibleLength (design §B.11).

A reader of a file being written asks a DataNode how much of the last block's replica it
may read; the DataNode registers these methods under CLIENT_DATANODE_PROTOCOL.
"""

from __future__ import annotations

from typing import Protocol

from qjm.errors import QjmError
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.datanode_protocol import CLIENT_DATANODE_METHODS, ExtendedBlock
from qjm.hdfs.proto import ClientDatanodeProtocol_pb2 as cdp
from qjm.ipc.server import CallContext, Method


class ReplicaNotFoundError(QjmError):
    """No replica of the block here (or not with that generation stamp)."""

    java_class = "org.apache.hadoop.hdfs.server.datanode.ReplicaNotFoundException"


class ReplicaLengths(Protocol):
    """What getReplicaVisibleLength needs of the DataNode's storage."""

    async def visible_length(self, block: ExtendedBlock) -> int:
        """Bytes of the replica a reader may see (acknowledged by the pipeline).

        Raises ReplicaNotFoundError when there is none, or an error with java_class when
        the replica's generation stamp is older than the block's.
        """
        ...


def client_datanode_methods(replicas: ReplicaLengths) -> dict[str, Method]:
    """Every ClientDatanodeProtocol method qjm serves, for IpcServer.register."""

    async def get_replica_visible_length(
        req: cdp.GetReplicaVisibleLengthRequestProto, ctx: CallContext
    ) -> cdp.GetReplicaVisibleLengthResponseProto:
        block = wire.extended_block_from_proto(req.block)
        length = await replicas.visible_length(block)
        if length < 0:
            raise ReplicaNotFoundError(f"Replica not found for {block_name(block)}")
        return cdp.GetReplicaVisibleLengthResponseProto(length=length)

    handlers = {"getReplicaVisibleLength": get_replica_visible_length}
    return {
        name: Method(spec.request, handlers[name]) for name, spec in CLIENT_DATANODE_METHODS.items()
    }


def block_name(block: ExtendedBlock) -> str:
    """HDFS's name of a block: BP-...:blk_<id>_<genstamp>."""
    return f"{block.pool_id}:blk_{block.block_id}_{block.gen_stamp}"
