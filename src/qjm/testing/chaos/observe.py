"""Reading a whole subtree from the active NameNode, and from the standby by observer reads
(each call carries a state id, so the standby answers once it has applied that txid)."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf.message import Message

from qjm.ipc import IpcClient
from qjm.ipc.framing import build_frame
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.ipc.proto.RpcHeader_pb2 import RPC_PROTOCOL_BUFFER, RpcRequestHeaderProto
from qjm.namenode import protocols
from qjm.namenode.client import NameNodeClient
from qjm.namenode.types import FileStatus
from qjm.security import tls


async def walk(client: NameNodeClient, top: str) -> dict[str, FileStatus]:
    """path -> status of top and everything below it (empty when top does not exist)."""
    status = await client.stat(top)
    if status is None:
        return {}
    tree = {top: status}
    if status.is_dir:
        async for path, entry in client.walk(top):
            tree[path] = entry
    return tree


class _StateIdIpc(IpcClient):
    """An IpcClient whose calls carry a state id (RpcRequestHeaderProto.stateId)."""

    state_id = 0

    def call_frame(self, call_id: int, method: str, request: Message) -> bytes:
        header = RpcRequestHeaderProto(
            rpcKind=RPC_PROTOCOL_BUFFER,
            rpcOp=RpcRequestHeaderProto.RPC_FINAL_PACKET,
            callId=call_id,
            clientId=self.client_id,
            retryCount=0,
            stateId=self.state_id,
        )
        method_header = RequestHeaderProto(
            methodName=method, declaringClassProtocolName=self.protocol, clientProtocolVersion=1
        )
        return build_frame(
            (
                header.SerializeToString(),
                method_header.SerializeToString(),
                request.SerializeToString(),
            )
        )


class ObserverClient(NameNodeClient):
    """A NameNodeClient for one standby NameNode whose reads wait for state_id there (its
    RetriableException while it catches up is retried, up to max_rounds)."""

    def __init__(self, address: str, state_id: int, **kwargs: Any) -> None:
        super().__init__([address], **kwargs)
        self.state_id = state_id

    def _client(self, address: str) -> IpcClient:
        client = self._clients.get(address)
        if client is None:
            ipc = _StateIdIpc(
                address,
                protocols.CLIENT_PROTOCOL,
                user=self.user,
                client_id=self.client_id,
                connect_timeout_s=2.0,
                reconnect_attempts=1,
            )
            ipc.state_id = self.state_id
            client = self._clients[address] = ipc
        return client


def namenode_status(http_address: str, timeout_s: float = 5.0) -> dict[str, Any]:
    """A NameNode's /status JSON (blocking); http_address is host:port or a base URL."""
    with tls.urlopen(f"{tls.base_url(http_address)}/status", timeout_s) as r:
        data: dict[str, Any] = json.loads(r.read())
    return data
